"""An OpenAI-compatible server of our own that answers garbage, for the client's hostile-input
tests: an aiohttp app on its own thread and loop, on 127.0.0.1 only.

    HostileEngine(chat=[cut_off, html, ...], metrics=nan_running) ─► .url
        /health 200 · /v1/models one card · /metrics and /v1/chat/completions as scripted

Each route takes one `Answer` (an aiohttp handler) or a list of them, used in turn (cycling);
`hits` counts requests per path. The answers below are the issue's (42, items 2–5): a cut-off
JSON, an HTML page, no choices, a body larger than the client's bound, a drip, a redirect.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from aiohttp import web

Answer = Callable[[web.Request], Awaitable[web.StreamResponse]]
CHUNK = 64 * 1024

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "hostile",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}
MODELS = {
    "object": "list",
    "data": [{"id": "hostile", "object": "model", "owned_by": "me", "max_model_len": 4096}],
}
METRICS = (
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    'vllm:num_requests_running{engine="0",model_name="hostile"} 3.0\n'
    'vllm:num_requests_waiting{engine="0",model_name="hostile"} 0.0\n'
    'vllm:kv_cache_usage_perc{engine="0",model_name="hostile"} 0.25\n'
    'vllm:num_preemptions_total{engine="0",model_name="hostile"} 0.0\n'
)


def body(
    data: bytes | str | dict[str, Any], status: int = 200, kind: str = "application/json"
) -> Answer:
    """A plain answer: `data` (a dict as JSON) with `status` and content type `kind`."""
    raw = json.dumps(data).encode() if isinstance(data, dict) else data
    raw = raw.encode() if isinstance(raw, str) else raw

    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(body=raw, status=status, content_type=kind)

    return answer


def stream(
    size: int, head: bytes = b"", filler: bytes = b" ", kind: str = "application/json"
) -> Answer:
    """`head`, then `filler` repeated to `size` bytes, sent in 64 KiB chunks without a length:
    a huge body the client must stop reading, never allocated here at once."""
    block = (filler * (CHUNK // len(filler) + 1))[:CHUNK]

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": kind})
        await response.prepare(request)
        sent = 0
        try:
            await response.write(head)
            sent = len(head)
            while sent < size:
                await response.write(block[: size - sent])
                sent += min(CHUNK, size - sent)
            await response.write_eof()
        except (ConnectionError, RuntimeError):
            pass  # the client stopped reading: what a bound is for
        return response

    return answer


def drip(every_s: float = 0.5, most: int = 600) -> Answer:
    """A 200 whose body comes one byte every `every_s` (at most `most` bytes): only a time
    bound on the answer ends it."""

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            for byte in itertools.islice(itertools.cycle(b'{"choices": ['), most):
                await response.write(bytes([byte]))
                await asyncio.sleep(every_s)
        except (ConnectionError, RuntimeError):
            pass
        return response

    return answer


def redirect(to: str, status: int = 307) -> Answer:
    """A redirect to `to` (another origin in the tests)."""

    async def answer(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": to})

    return answer


GARBAGE: dict[str, Answer] = {  # issue 42 item 2: 200s that are not a completion
    "cut_off": body(b'{"choices": ['),
    "html": body(b"<!doctype html><title>Bad gateway</title><h1>oops</h1>", kind="text/html"),
    "no_choices": body({"choices": []}),
}


class HostileEngine:
    """The server; use as a context manager. `chat`, `metrics`, `models`, `health`: what each
    route answers (one answer, or a list used in turn)."""

    def __init__(
        self,
        *,
        chat: Answer | Sequence[Answer] | None = None,
        metrics: Answer | Sequence[Answer] | None = None,
        models: Answer | Sequence[Answer] | None = None,
        health: Answer | Sequence[Answer] | None = None,
    ) -> None:
        self.routes = {
            "/v1/chat/completions": _turns(chat or body(COMPLETION)),
            "/metrics": _turns(metrics or body(METRICS, kind="text/plain")),
            "/v1/models": _turns(models or body(MODELS)),
            "/health": _turns(health or body(b"")),
        }
        self.hits: Counter[str] = Counter()
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._runner: web.AppRunner | None = None

    def answer(self, path: str, answers: Answer | Sequence[Answer]) -> None:
        """From now on, answer `path` with `answers` (in turn)."""
        self.routes[path] = _turns(answers)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HostileEngine:
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        if not ready.wait(30):
            raise RuntimeError("the hostile engine did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        self.loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.hits[request.path] += 1
        turns = self.routes.get(request.path)
        if turns is None:
            return web.Response(status=404)
        await request.read()
        return await next(turns)(request)


def _turns(answers: Answer | Sequence[Answer]) -> Iterator[Answer]:
    return itertools.cycle(answers if isinstance(answers, Sequence) else [answers])
