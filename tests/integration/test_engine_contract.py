"""The stand-in and a real vLLM answer the same probes alike (issue 35's contract).

`probe()` sends the same requests to a server and reduces each answer to what a client may rely
on: status, the error envelope's `type` and `param` (never its message), the model card's
fields, the watched metric names with their labels, a structured answer's validity. The stand-in
(default suite) and the CPU vLLM (slow, `vllm`) must both give CONTRACT; differences that are
intended are listed in docs/engine.md ("Stand-in vs real vLLM") and not probed here.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import httpx
import jsonschema
import pytest
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from datagen.config import SimConfig
from datagen.engine.sim import SimServer
from tests.vllmserver import RealVllm

CLICK = {
    "type": "object",
    "properties": {
        "x": {"type": "integer", "minimum": 0, "maximum": 1000},
        "y": {"type": "integer", "minimum": 0, "maximum": 1000},
    },
    "required": ["x", "y"],
    "additionalProperties": False,
}
METRICS = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:request_queue_time_seconds_bucket",
    "vllm:time_to_first_token_seconds_bucket",
    "vllm:e2e_request_latency_seconds_bucket",
)
CONTRACT: dict[str, Any] = {
    "health": 200,
    "card": {"object": "model", "owned_by": "vllm", "max_model_len": 16384, "root": True},
    "metrics": {name: ["engine", "model_name"] for name in METRICS},
    "preemptions_at_start": 0.0,
    "answer": {"status": 200, "valid": True, "finish_reason": "stop", "usage": True},
    "invalid schema type": (400, "BadRequestError", None),
    "schema not an object": (400, "Bad Request", None),  # vLLM's request model refuses it
    "negative temperature": (400, "BadRequestError", "temperature"),
    "unknown model": (404, "NotFoundError", "model"),
    "4 images, limit 3": (400, "BadRequestError", None),
}


def jpeg(width: int = 224, height: int = 140) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (40, 90, 160)).save(buffer, "JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode()


def request(model: str, images: int = 1, **extra: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": jpeg()}} for _ in range(images)
    ]
    parts.append({"type": "text", "text": "Click the blue button. Answer as JSON."})
    body = {
        "model": model,
        "messages": [{"role": "user", "content": parts}],
        "max_tokens": 24,
        "temperature": 0,
        "structured_outputs": {"json": CLICK},
    }
    return body | extra


def envelope(response: httpx.Response) -> tuple[int, str | None, str | None]:
    """What a client may branch on: status, the envelope's type and param (not the message)."""
    error = response.json()["error"]  # a JSON envelope, never plain text
    assert set(error) == {"message", "type", "param", "code"}, error
    return response.status_code, error["type"], error["param"]


def probe(url: str, model: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with httpx.Client(base_url=url, timeout=300) as http:
        out["health"] = http.get("/health").status_code
        card = http.get("/v1/models").json()["data"][0]
        assert card["id"] == model
        out["card"] = {
            "object": card["object"],
            "owned_by": card["owned_by"],
            "max_model_len": card["max_model_len"],
            "root": isinstance(card["root"], str) and bool(card["root"]),
        }
        text = http.get("/metrics").text
        labels: dict[str, list[str]] = {}
        values: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in METRICS:
                    labels[sample.name] = sorted(set(sample.labels) - {"le"})
                    values[sample.name] = values.get(sample.name, 0.0) + sample.value
        out["metrics"] = {name: labels.get(name) for name in METRICS}
        out["preemptions_at_start"] = values.get("vllm:num_preemptions_total")

        answer = http.post("/v1/chat/completions", json=request(model))
        data = answer.json()
        choice = data["choices"][0]
        try:
            jsonschema.validate(json.loads(choice["message"]["content"]), CLICK)
            valid = True
        except (ValueError, jsonschema.ValidationError):
            valid = False
        usage = data["usage"]
        out["answer"] = {
            "status": answer.status_code,
            "valid": valid,
            "finish_reason": choice["finish_reason"],
            "usage": usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0,
        }
        assert data["model"] == model and data["id"].startswith("chatcmpl-")

        bad = {
            "invalid schema type": request(model, structured_outputs={"json": {"type": "objekt"}}),
            "schema not an object": request(model, structured_outputs={"json": [1, 2]}),
            "negative temperature": request(model, temperature=-1.0),
            "unknown model": request("no-such-model"),
            "4 images, limit 3": request(model, images=4),
        }
        for name, body in bad.items():
            out[name] = envelope(http.post("/v1/chat/completions", json=body))
    return out


def test_standin_keeps_the_contract() -> None:
    config = SimConfig(
        served_model_name="tiny-qwen2-vl", max_model_len=16384, limit_images=3, speed_factor=50
    )
    with SimServer(config) as sim:
        assert probe(sim.url, "tiny-qwen2-vl") == CONTRACT


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.timeout(1500)
def test_real_vllm_keeps_the_contract(real_vllm: RealVllm) -> None:
    assert probe(real_vllm.url, "tiny-qwen2-vl") == CONTRACT


def test_standin_accepts_every_schema_datagen_sends() -> None:
    """The schema check refuses only bad `type`s: the roles' own schemas ($defs, $ref, a
    property named "type") pass, and a bad type deep inside is found."""
    from datagen.engine.profiles import PROFILES, SentImage
    from datagen.engine.sim.protocol import ApiError, check_schema

    image = SentImage("data:,", 1280, 800)
    schemas = [
        s for p in PROFILES.values() for s in (p.navigation_schema(image), p.point_schema(image))
    ]
    for schema in schemas:
        assert check_schema(schema) is schema
    deep = {"type": "object", "properties": {"type": {"$ref": "#/$defs/T"}},
            "$defs": {"T": {"type": "array", "items": {"type": "strng"}}}}  # fmt: skip
    with pytest.raises(ApiError) as caught:
        check_schema(deep)
    assert (caught.value.status, caught.value.param) == (400, None)
