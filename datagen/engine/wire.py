"""What crosses the wire from the engine, and how little of it is trusted: the errors of a call,
every body read with a byte bound, every JSON answer checked for its shape before use.

    aiohttp response ─► read_bounded(limit) ─► bytes ─► completion(raw)  ─► Completion
                                                     └► model_cards(raw) ─► [ModelInfo]
    a 3xx ─► redirected(response): never followed (another origin would get the request body,
             the bearer key, the prompt's screenshots)

A server that answers 200 with something that is not a completion (a cut-off body, a gateway's
HTML page, `{"choices": []}`, hundreds of MB) is a failed request, `BadAnswer`: the client
retries it like a 5xx and then gives up with reason `engine_error`, never a `KeyError` or a
`JSONDecodeError` that fails a whole shard.

    EngineError            base
    ├── EngineRejected     4xx or a redirect: the request itself is wrong (not retried)
    ├── EngineUnavailable  retries exhausted, or not ready in time
    └── BadAnswer          an answer that is not what the endpoint gives (retried on chat)
        └── MetricsUnreadable  /metrics gives no finite queue and cache gauges
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp

CHUNK = 64 * 1024
# A completion is tens of KB (max_tokens in the thousands, logprobs included); 8 MiB leaves room
# for any real answer and stops a 300 MB body after 8 MiB, streamed, never held whole.
MAX_ANSWER_BYTES = 8 * 2**20
MAX_INFO_BYTES = 2**20  # /v1/models and error bodies: a few KB on vLLM
STANDIN_OWNER = "datagen-sim"
STANDIN_KEY = "datagen_standin"  # the one key of the stand-in's model card that vLLM's lacks


class EngineError(Exception):
    """A model call that did not produce an answer."""

    reason = "engine_error"


class EngineRejected(EngineError):
    """The server refused the request (HTTP 4xx) or sent it elsewhere (3xx, not followed);
    resending it would not help. Branch on `status`, `kind` (the envelope's `type`) and
    `param`, never on `message` (its words change between vLLM versions)."""

    reason = "engine_rejected"

    def __init__(self, status: int, kind: str, message: str, param: str | None = None) -> None:
        where = f" [{param}]" if param else ""
        super().__init__(f"HTTP {status} {kind}{where}: {message}")
        self.status, self.kind, self.message, self.param = status, kind, message, param


class EngineUnavailable(EngineError):
    """Connection errors, timeouts or 5xx on every attempt."""

    reason = "engine_unavailable"


class BadAnswer(EngineError):
    """The server answered, but not with what the endpoint gives: not JSON, an HTML page, the
    wrong shape, or more bytes than the bound. The message says which, in one line."""

    reason = "engine_error"


class MetricsUnreadable(BadAnswer):
    """/metrics answered without finite values of the gauges the in-flight control needs."""


@dataclass(frozen=True)
class ModelInfo:
    """One card of /v1/models."""

    id: str
    max_model_len: int | None
    owned_by: str
    root: str = ""
    standin_flag: bool = False  # the card's `datagen_standin` key

    @property
    def is_standin(self) -> bool:
        """datagen's stand-in (its card's `datagen_standin`; older ones: `owned_by`)."""
        return self.standin_flag or self.owned_by == STANDIN_OWNER


@dataclass(frozen=True)
class Completion:
    """The fields datagen reads from a chat completion, each of its type."""

    content: str
    reasoning: str | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    request_id: str
    model: str


def redirected(response: aiohttp.ClientResponse) -> str | None:
    """Where a 3xx answer points (None for any other status): datagen follows no redirect."""
    if 300 <= response.status < 400:
        return printable(response.headers.get("Location", "nowhere"), 200)
    return None


def printable(text: str, most: int) -> str:
    """Server-given text for a message: at most `most` characters, none that steers a terminal
    (escapes, control characters, bidirectional overrides become `?`)."""
    return "".join(c if c.isprintable() else "?" for c in text[:most])


async def read_bounded(response: aiohttp.ClientResponse, limit: int, what: str) -> bytes:
    """The body, read in chunks; BadAnswer as soon as it passes `limit` bytes (or says it will)."""
    if (response.content_length or 0) > limit:
        raise BadAnswer(f"{what}: {response.content_length} bytes, more than {limit}")
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.content.iter_chunked(CHUNK):
            size += len(chunk)
            if size > limit:
                raise BadAnswer(f"{what}: more than {limit} bytes")
            parts.append(chunk)
    except TimeoutError:  # the request's time limit, spent on a drip of a body
        raise BadAnswer(f"{what}: {size} bytes within the time limit, not a whole answer") from None
    return b"".join(parts)


def decode_json(raw: bytes, what: str) -> Any:
    """The JSON value of `raw`; BadAnswer saying in one line what the body is instead."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise BadAnswer(f"{what}: JSON nested too deep") from None
    except UnicodeDecodeError as exc:
        raise BadAnswer(f"{what}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BadAnswer(f"{what}: {_not_json(raw, exc)}") from None


def _not_json(raw: bytes, exc: json.JSONDecodeError) -> str:
    head = raw.lstrip()[:64].lower()
    if not head:
        return "an empty body, not JSON"
    if head.startswith((b"<!doctype", b"<html", b"<")):
        return "an HTML page, not JSON"
    if exc.pos >= len(exc.doc.rstrip()):
        return f"JSON cut off after {len(raw)} bytes"
    return f"not JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"


def completion(raw: bytes) -> Completion:
    """A chat completion's fields, or BadAnswer naming what is missing or of the wrong type."""
    data = decode_json(raw, "chat answer")
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadAnswer(f"chat answer: no choices ({_shape(data)})")
    choice = choices[0]
    message = choice.get("message") or {}
    usage = data.get("usage") or {}
    if not isinstance(message, dict) or not isinstance(usage, dict):
        raise BadAnswer("chat answer: `message` or `usage` is not an object")
    content, reasoning = message.get("content"), message.get("reasoning")
    reasoning = reasoning if reasoning is not None else message.get("reasoning_content")
    if not isinstance(content, str | None) or not isinstance(reasoning, str | None):
        raise BadAnswer("chat answer: the message's content is not text")
    return Completion(
        content=content or "",
        reasoning=reasoning or None,
        finish_reason=_text(choice.get("finish_reason")),
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        request_id=_text(data.get("id")),
        model=_text(data.get("model")),
    )


def model_cards(raw: bytes) -> list[ModelInfo]:
    """The cards of a /v1/models answer; BadAnswer if it is not an OpenAI model list."""
    data = decode_json(raw, "/v1/models")
    cards = data.get("data") if isinstance(data, dict) else None
    if not isinstance(cards, list):
        raise BadAnswer(f"/v1/models: no `data` list ({_shape(data)}): not an OpenAI server?")
    out = []
    for card in cards:
        if not isinstance(card, dict) or not isinstance(card.get("id"), str):
            raise BadAnswer("/v1/models: a model card without a text `id`")
        length = card.get("max_model_len")
        out.append(
            ModelInfo(
                card["id"][:200],
                length if isinstance(length, int) and not isinstance(length, bool) else None,
                _text(card.get("owned_by")),
                _text(card.get("root")),
                card.get(STANDIN_KEY) is True,
            )
        )
    if not out:
        raise BadAnswer("/v1/models lists no model")
    return out


def raise_for(status: int, raw: bytes) -> None:
    """EngineRejected for a redirect (`raw`: where it points) or a 4xx/5xx with vLLM's error
    envelope (or whatever text the body holds)."""
    if 300 <= status < 400:
        where = raw.decode(errors="replace")
        raise EngineRejected(
            status, "redirect", f"redirects to {where}; not followed. fix: engine.url the "
            "server's own address"
        )  # fmt: skip
    try:
        error = decode_json(raw, "error body")
        error = error.get("error") if isinstance(error, dict) else error
    except BadAnswer:
        error = raw[:500].decode(errors="replace")
    if isinstance(error, dict):
        param = None if error.get("param") is None else printable(str(error["param"]), 200)
        kind, message = str(error.get("type")), str(error.get("message"))
        raise EngineRejected(status, printable(kind, 100), printable(message, 500), param)
    raise EngineRejected(status, "", printable(str(error), 500))


def _shape(data: Any) -> str:
    if isinstance(data, dict):
        return "keys: " + (printable(", ".join(sorted(map(str, data))[:6]), 120) or "none")
    return f"a JSON {type(data).__name__}"


def _text(value: Any) -> str:
    return value[:1000] if isinstance(value, str) else ""


def _count(value: Any) -> int:
    """A token count: a non-negative int, else 0 (vLLM always sends ints; others may not)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
