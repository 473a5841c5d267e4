"""The stand-in against the vLLM 0.14.1 surface (reference/engine-spec.md §3, §6.5), over HTTP."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from datagen.config import SimConfig
from datagen.engine.client import EngineClient, EngineRejected, EngineUnavailable
from datagen.engine.sim import SimServer
from tests.helpers import until

SCHEMA = {
    "type": "object",
    "properties": {
        "x": {"type": "integer", "minimum": 0, "maximum": 1000},
        "y": {"type": "integer", "minimum": 0, "maximum": 1000},
    },
    "required": ["x", "y"],
}


def image_url(w: int = 1280, h: int = 800) -> str:
    out = io.BytesIO()
    Image.new("RGB", (w, h), "white").save(out, "JPEG")
    return "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode()


def chat(*parts: dict[str, Any], **extra: object) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(parts)}], **extra}


TEXT = {"type": "text", "text": "Click the blue button"}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(
        SimConfig(speed_factor=50, max_num_seqs=8, max_model_len=8192, limit_images=2)
    ) as server:
        yield server


@pytest.fixture
def http(sim: SimServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.url, timeout=30) as client:
        yield client


def test_models_health_version(http: httpx.Client) -> None:
    assert http.get("/health").status_code == 200 and http.get("/health").content == b""
    card = http.get("/v1/models").json()["data"][0]
    assert (
        card["id"] == "datagen-sim" and card["object"] == "model" and card["max_model_len"] == 8192
    )
    assert card["owned_by"] == "vllm" and card["root"] == "datagen-sim"  # vLLM's card…
    assert card["datagen_standin"] is True  # …plus the key that says it is no model
    assert http.get("/version").json()["version"] == "0.14.1"


def test_completion_shape_usage_and_structured_output(http: httpx.Client) -> None:
    r = http.post(
        "/v1/chat/completions",
        json=chat(
            {"type": "image_url", "image_url": {"url": image_url()}},
            TEXT,
            max_tokens=64,
            temperature=0,
            structured_outputs={"json": SCHEMA},
        ),
        headers={"X-Request-Id": "abc"},
    )
    body = r.json()
    assert (
        r.status_code == 200
        and body["id"] == "chatcmpl-abc"
        and body["object"] == "chat.completion"
    )
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["message"]["role"] == "assistant"
    assert set(choice["message"]) >= {"content", "reasoning", "reasoning_content", "tool_calls"}
    point = json.loads(choice["message"]["content"])
    assert 0 <= point["x"] <= 1000 and 0 <= point["y"] <= 1000
    usage = body["usage"]
    assert (
        usage["prompt_tokens"] >= 1794
        and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    )
    fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA, "strict": True}}
    assert set(
        json.loads(
            http.post("/v1/chat/completions", json=chat(TEXT, response_format=fmt)).json()[
                "choices"
            ][0]["message"]["content"]
        )
    ) == {"x", "y"}


def test_guided_json_is_silently_ignored_like_vllm_0_12(http: httpx.Client) -> None:
    r = http.post("/v1/chat/completions", json=chat(TEXT, guided_json=SCHEMA, max_tokens=16))
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "OK"


def test_length_finish_reason(http: httpx.Client) -> None:
    body = http.post(
        "/v1/chat/completions", json=chat(TEXT, structured_outputs={"json": SCHEMA}, max_tokens=2)
    ).json()
    assert (
        body["choices"][0]["finish_reason"] == "length" and body["usage"]["completion_tokens"] == 2
    )


def test_streaming_with_usage(http: httpx.Client) -> None:
    r = http.post(
        "/v1/chat/completions",
        json=chat(
            TEXT,
            stream=True,
            stream_options={"include_usage": True},
            structured_outputs={"json": SCHEMA},
        ),
    )
    events = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert set(json.loads(text)) == {"x", "y"}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] >= 1
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("body", "status", "kind", "text"),
    [
        (chat(TEXT, model="other"), 404, "NotFoundError", "The model `other` does not exist."),
        (chat(TEXT, stream_options={"include_usage": True}), 400, "Bad Request", "stream=True"),
        ({"messages": "nope"}, 400, "Bad Request", "messages"),
        (
            chat(*[{"type": "image_url", "image_url": {"url": image_url(64, 64)}}] * 3),
            400,
            "BadRequestError",
            "At most 2 image(s) may be provided in one prompt. Set --limit-mm-per-prompt to increase this limit. None",
        ),
        (
            chat({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
            400,
            "BadRequestError",
            "Only base64 data URLs are supported for now. None",
        ),
        (
            chat(
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,bm90IGFuIGltYWdl"},
                }
            ),
            400,
            "BadRequestError",
            "None",
        ),
        (
            chat({"type": "text", "text": "x" * 40000}),
            400,
            "BadRequestError",
            "maximum context length is 8192 tokens. However, your request has",
        ),
        (
            chat(TEXT, max_tokens=9000),
            400,
            "BadRequestError",
            "'max_tokens' or 'max_completion_tokens' is too large: 9000",
        ),
        (
            chat(
                *[{"type": "image_url", "image_url": {"url": image_url(1024, 768)}}] * 2,
                {"type": "text", "text": "y" * 7000},
            ),
            400,
            "BadRequestError",
            "The decoder prompt (length",
        ),
    ],
    ids=[
        "model",
        "stream-options",
        "body",
        "too-many-images",
        "not-base64",
        "bad-image",
        "too-long",
        "max-tokens",
        "after-images",
    ],
)
def test_errors_match_vllm(
    http: httpx.Client, body: dict[str, Any], status: int, kind: str, text: str
) -> None:
    r = http.post("/v1/chat/completions", json=body)
    error = r.json()["error"]
    assert (r.status_code, error["type"], error["code"]) == (status, kind, status)
    assert text in error["message"]
    assert error["param"] == ("model" if status == 404 else None)  # as vLLM 0.14.1 names it


def metrics(http: httpx.Client) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for family in text_string_to_metric_families(http.get("/metrics").text):
        out[family.name] = {"type": family.type, "samples": {s.name: s for s in family.samples}}
    return out


def test_metric_names_types_and_labels(http: httpx.Client) -> None:
    found = metrics(http)
    expected = {
        "vllm:num_requests_running": "gauge", "vllm:num_requests_waiting": "gauge", "vllm:kv_cache_usage_perc": "gauge",
        "vllm:prompt_tokens": "counter", "vllm:generation_tokens": "counter", "vllm:request_success": "counter",
        "vllm:num_preemptions": "counter", "vllm:time_to_first_token_seconds": "histogram",
        "vllm:inter_token_latency_seconds": "histogram", "vllm:e2e_request_latency_seconds": "histogram",
        "vllm:request_queue_time_seconds": "histogram", "vllm:request_prompt_tokens": "histogram",
        "vllm:request_generation_tokens": "histogram", "vllm:iteration_tokens_total": "histogram",
    }  # fmt: skip
    for name, kind in expected.items():
        assert found[name]["type"] == kind, name
    assert (
        "vllm:prompt_tokens_total" in found["vllm:prompt_tokens"]["samples"]
    )  # counters carry _total
    sample = found["vllm:num_requests_running"]["samples"]["vllm:num_requests_running"]
    assert sample.labels == {"model_name": "datagen-sim", "engine": "0"}
    text = http.get("/metrics")
    assert text.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert (
        'vllm:request_success_total{engine="0",finished_reason="stop",model_name="datagen-sim"}'
        in text.text
    )


LONG = {
    "type": "object",
    "properties": {"t": {"type": "string", "minLength": 400}},
    "required": ["t"],
}


def test_never_more_than_max_num_seqs_running_and_the_rest_wait() -> None:
    async def flood(sim: SimServer) -> tuple[list[float], list[float]]:
        async with httpx.AsyncClient(
            base_url=sim.url, timeout=60, limits=httpx.Limits(max_connections=100)
        ) as client:
            jobs = [
                asyncio.create_task(
                    client.post(
                        "/v1/chat/completions",
                        json=chat(TEXT, structured_outputs={"json": LONG}, max_tokens=200),
                    )
                )
                for _ in range(40)
            ]
            running, waiting = [], []
            while not all(j.done() for j in jobs):
                text = (await client.get("/metrics")).text
                for family in text_string_to_metric_families(text):
                    if family.name == "vllm:num_requests_running":
                        running.append(family.samples[0].value)
                    if family.name == "vllm:num_requests_waiting":
                        waiting.append(family.samples[0].value)
                await asyncio.sleep(0.01)
            assert all(j.result().status_code == 200 for j in jobs)
            return running, waiting

    with SimServer(SimConfig(speed_factor=4, max_num_seqs=8)) as sim:
        running, waiting = asyncio.run(flood(sim))
        assert httpx.get(sim.url + "/sim/stats").json()["peak_running"] == 8
    assert max(running) == 8 and max(waiting) > 0  # 40 requests, 8 slots: a queue, no 429


def test_client_disconnect_aborts(sim: SimServer) -> None:
    sim_slow = {"slow_rate": 0.0}
    httpx.post(sim.url + "/sim/config", json=sim_slow)
    before = _abort_count(sim)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            sim.url + "/v1/chat/completions",
            json=chat(
                TEXT,
                max_tokens=4000,
                structured_outputs={
                    "json": {
                        "type": "object",
                        "properties": {"t": {"type": "string", "minLength": 40000}},
                    }
                },
            ),
            timeout=0.3,
        )
    until(lambda: _abort_count(sim) != before)  # the server saw the client go (at most WAIT_S)
    assert _abort_count(sim) == before + 1


def _abort_count(sim: SimServer) -> float:
    text = httpx.get(sim.url + "/metrics").text
    for family in text_string_to_metric_families(text):
        if family.name == "vllm:request_success":
            return sum(
                s.value
                for s in family.samples
                if s.name.endswith("_total") and s.labels.get("finished_reason") == "abort"
            )
    return 0.0


def test_api_key_and_not_ready_and_dead_engine() -> None:
    config = SimConfig(speed_factor=50, api_key="k")
    with SimServer(config, not_ready_s=1.0) as server:
        with pytest.raises(httpx.ConnectError):  # like vLLM loading its model: nothing listens
            httpx.get(server.url + "/health")

        async def scenario() -> None:
            async with EngineClient(server.url, api_key="k", retries=0) as client:
                info = await client.wait_ready(20)
                assert info.is_standin
            r = httpx.post(server.url + "/v1/chat/completions", json=chat(TEXT))
            assert r.status_code == 401 and r.json() == {"error": "Unauthorized"}
            httpx.post(server.url + "/sim/config", json={"dead": True})
            assert httpx.get(server.url + "/health").status_code == 503
            async with EngineClient(server.url, api_key="k", retries=1, backoff_s=0.01) as client:
                with pytest.raises(EngineUnavailable, match="HTTP 500"):
                    await client.chat(chat(TEXT))
                with pytest.raises(EngineRejected):
                    await client.chat(chat(TEXT, model="nope"))

        asyncio.run(scenario())


def test_client_retries_faults_and_respects_its_budget() -> None:
    config = SimConfig(
        speed_factor=50, error_rate=0.1, drop_rate=0.05, slow_rate=0.05, slow_seconds=0.2, seed=3
    )
    with SimServer(config) as server:

        async def scenario() -> EngineClient:
            async with EngineClient(
                server.url, max_in_flight=16, retries=5, backoff_s=0.01
            ) as client:
                results = await asyncio.gather(
                    *[client.chat(chat(TEXT, max_tokens=8)) for _ in range(200)]
                )
                assert all(r.content == "OK" for r in results)
                return client

        client = asyncio.run(scenario())
        stats = httpx.get(server.url + "/sim/stats").json()
    assert client.stats.requests == 200 and client.stats.retries >= 10  # ~20% failed first time
    assert stats["peak_in_flight"] <= 16  # the pool and gate cap what reaches the engine
