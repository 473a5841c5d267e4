"""Request checks of the stand-in, in vLLM 0.14.1's order and words (spec §3.3, §3.5).

Each check returns an `ApiError` (status, type, message, param) or the measured prompt. The
status, type and `param` of each error are what a real vLLM 0.14.1 answered the same request
(tests/integration/test_engine_contract.py probes both); clients must not read the message."""

from __future__ import annotations

import base64
import binascii
import io
import json
from dataclasses import dataclass
from typing import Any

from PIL import Image
from pydantic import BaseModel, ConfigDict, ValidationError

from datagen.config import SimConfig
from datagen.engine.tokens import image_tiles, image_tokens, text_tokens

KNOWN_FIELDS = {
    "model", "messages", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
    "frequency_penalty", "seed", "n", "stop", "max_tokens", "max_completion_tokens", "min_tokens", "ignore_eos",
    "logprobs", "top_logprobs", "structured_outputs", "response_format", "chat_template_kwargs",
    "mm_processor_kwargs", "priority", "request_id", "cache_salt", "return_token_ids", "add_generation_prompt",
    "continue_final_message", "skip_special_tokens", "include_stop_str_in_output", "stream", "stream_options",
    "user", "tools", "tool_choice",
}  # fmt: skip


@dataclass
class ApiError(Exception):
    status: int
    type: str
    message: str
    param: str | None = None  # the request field at fault, as vLLM names it

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.status,
            }
        }


@dataclass
class Prompt:
    tokens: int
    tiles: int
    images: int
    max_tokens: int
    schema: dict[str, Any] | None
    ignored: list[str]


class ChatBody(BaseModel):
    """The typed part of a chat request; unknown fields are allowed (and ignored), as in vLLM."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[dict[str, Any]]
    temperature: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    seed: int | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    structured_outputs: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    mm_processor_kwargs: dict[str, Any] | None = None


def parse_body(raw: bytes) -> ChatBody:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ApiError(400, "Bad Request", f"JSON decode error: {exc}") from None
    try:
        body = ChatBody.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, "Bad Request", str(exc.errors(include_url=False))) from None
    if body.stream_options is not None and not body.stream:
        raise ApiError(400, "Bad Request", "Stream options can only be defined when `stream=True`.")
    return body


def check_sampling(body: ChatBody) -> None:
    """vLLM's SamplingParams checks a client can trip: a negative temperature."""
    if body.temperature is not None and body.temperature < 0:
        raise ApiError(
            400,
            "BadRequestError",
            f"temperature must be non-negative, got {body.temperature}. "
            f"(parameter=temperature, value={body.temperature})",
            "temperature",
        )


JSON_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def check_schema(schema: Any) -> dict[str, Any]:
    """The request's JSON Schema, or vLLM's 400 for one its grammar compiler refuses: a schema
    that is not an object, or a `type` that is not a JSON Schema type (anywhere in it)."""
    if not isinstance(schema, dict):
        raise ApiError(400, "BadRequestError", f"Invalid JSON schema: {json.dumps(schema)[:200]}")
    bad = _bad_type(schema)
    if bad is not None:
        raise ApiError(400, "BadRequestError", f"Grammar error: invalid JSON Schema type {bad!r}")
    return schema


SCHEMA_MAPS = {"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
SUBSCHEMAS = {"items", "additionalProperties", "not", "if", "then", "else", "contains",
              "propertyNames", "anyOf", "oneOf", "allOf", "prefixItems"}  # fmt: skip


def _bad_type(node: Any) -> str | None:
    """The first `type` in a schema (and its subschemas) that JSON Schema does not have."""
    if isinstance(node, list):
        return next((b for b in map(_bad_type, node) if b is not None), None)
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    for name in [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []:
        if name not in JSON_TYPES:
            return str(name)
    found: list[str | None] = []
    for key, value in node.items():
        if key in SCHEMA_MAPS and isinstance(value, dict):
            found += map(_bad_type, value.values())
        elif key in SUBSCHEMAS:
            found.append(_bad_type(value))
    return next((b for b in found if b is not None), None)


def _image_size(url: str) -> tuple[int, int]:
    if not url.startswith("data:"):
        raise ApiError(400, "BadRequestError", "Only base64 data URLs are supported for now. None")
    header, _, payload = url.partition(",")
    if not header.endswith(";base64"):
        raise ApiError(400, "BadRequestError", "Only base64 data URLs are supported for now. None")
    try:
        data = base64.b64decode(payload, validate=True)
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (binascii.Error, ValueError, OSError) as exc:
        raise ApiError(400, "BadRequestError", f"Failed to load image: {exc} None") from None


def measure(body: ChatBody, config: SimConfig) -> Prompt:
    """Count prompt tokens (text + images) and apply vLLM's limits."""
    text, images, tiles, image_tok = 0, 0, 0, 0
    max_tiles = int((body.mm_processor_kwargs or {}).get("max_num_tiles", config.max_num_tiles))
    for message in body.messages:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") == "text":
                text += text_tokens(str(part.get("text", "")))
            elif part.get("type") == "image_url":
                images += 1
                if images > config.limit_images:
                    raise ApiError(
                        400,
                        "BadRequestError",
                        f"At most {config.limit_images} image(s) may be provided in one prompt. Set --limit-mm-per-prompt to increase this limit. None",
                    )
                image_url = part.get("image_url")
                url = image_url.get("url", "") if isinstance(image_url, dict) else ""
                width, height = _image_size(str(url))
                tiles += image_tiles(width, height, max_tiles)
                image_tok += image_tokens(width, height, max_tiles)
        text += 4  # role and template tokens
    limit = config.max_model_len
    wanted = body.max_completion_tokens or body.max_tokens
    if text >= limit:
        raise ApiError(
            400,
            "BadRequestError",
            f"This model's maximum context length is {limit} tokens. However, your request has {text} input tokens. Please reduce the length of the input messages. None",
        )
    if wanted is not None and text + wanted > limit:
        raise ApiError(
            400,
            "BadRequestError",
            f"'max_tokens' or 'max_completion_tokens' is too large: {wanted}. This model's maximum context length is {limit} tokens and your request has {text} input tokens ({wanted} > {limit} - {text}). None",
        )
    total = text + image_tok
    if total > limit:
        raise ApiError(
            400,
            "BadRequestError",
            f"The decoder prompt (length {total}) is longer than the maximum model length of {limit}. Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens. For image inputs, the number of image tokens depends on the number of images, and possibly their aspect ratios as well.",
        )
    return Prompt(
        tokens=total,
        tiles=tiles,
        images=images,
        max_tokens=wanted if wanted is not None else limit - total,
        schema=_schema(body),
        ignored=sorted(set(body.model_extra or {}) - KNOWN_FIELDS),
    )


def _schema(body: ChatBody) -> dict[str, Any] | None:
    """The enforced JSON Schema: `structured_outputs.json` or `response_format` (not guided_json)."""
    if body.structured_outputs and "json" in body.structured_outputs:
        schema = body.structured_outputs["json"]
        if not isinstance(schema, str | dict):  # vLLM's request model refuses it: `Bad Request`
            raise ApiError(
                400,
                "Bad Request",
                "structured_outputs.json: Input should be a valid string or dictionary",
            )
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as exc:
                raise ApiError(400, "BadRequestError", f"Invalid JSON schema: {exc}") from None
        return check_schema(schema)
    fmt = body.response_format or {}
    if fmt.get("type") == "json_schema":
        return check_schema((fmt.get("json_schema") or {}).get("schema") or {})
    if fmt.get("type") == "json_object":
        return {"type": "object", "properties": {}}
    return None
