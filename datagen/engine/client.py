"""The worker's client for a vLLM OpenAI-compatible server.

    payload ─► EngineClient.chat(role) ─► gate ─► POST /v1/chat/completions ─► ChatResult

One aiohttp session per endpoint and worker. Its connection pool is sized to the hard ceiling
of requests in flight; the peers lost throughput to a library's default cap of 100 connections.
Keep-alive expires under vLLM's 5 s, so pooled sockets don't race server closes.

aiohttp replaced httpx here because httpcore's pool scans every connection on every request:
12.6 ms of CPU per request with 1,000 open connections, measured by `bench/engine.py util`.

What is actually sent is bounded by `gate`, a PriorityGate. Its limit is either fixed or steered
by an InFlightController from the server's /metrics (`control()`). Retries cover connection
errors, timeouts, 5xx and answers that are not a completion (`BadAnswer`), with capped jittered
exponential backoff; never 4xx. No redirect is followed (a 307 would re-send the prompt and its
screenshots, and the bearer key, wherever it points); every body is read with a byte bound and
checked for its shape (datagen.engine.wire, whose docstring draws the exception tree).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote

import aiohttp

from datagen.config.roles import Caller
from datagen.engine.control import EngineLoad, InFlightController, PriorityGate
from datagen.engine.health import EngineWatchdog
from datagen.engine.metrics import read_watched
from datagen.engine.wire import (
    MAX_ANSWER_BYTES,
    MAX_INFO_BYTES,
    Completion,
    completion,
    model_cards,
    raise_for,
    read_bounded,
    redirected,
)
from datagen.engine.wire import STANDIN_KEY as STANDIN_KEY
from datagen.engine.wire import BadAnswer as BadAnswer
from datagen.engine.wire import EngineError as EngineError
from datagen.engine.wire import EngineRejected as EngineRejected
from datagen.engine.wire import EngineUnavailable as EngineUnavailable
from datagen.engine.wire import MetricsUnreadable as MetricsUnreadable
from datagen.engine.wire import ModelInfo as ModelInfo
from datagen.url import without_userinfo

log = logging.getLogger(__name__)
KEEPALIVE_EXPIRY_S = 4.0  # below vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE (5 s)
TRANSIENT = (aiohttp.ClientError, asyncio.TimeoutError)


@dataclass(frozen=True)
class ChatResult:
    content: str
    reasoning: str | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float  # from the call to the answer, waits for a slot and retries included
    attempts: int
    request_id: str
    model: str
    queued_ms: float = 0.0  # of latency_ms, the time spent waiting for a slot in the gate


class ChatClient(Protocol):
    """The one call a model role makes (the seam for a fake engine in unit tests)."""

    async def chat(
        self, payload: dict[str, Any], *, timeout_s: float | None = None, role: Caller = None
    ) -> ChatResult:
        """One chat completion for `role`: the answer, its usage, latency and attempts."""
        ...


@dataclass
class ClientStats:
    """Counters of one client, for the run's metrics."""

    requests: int = 0
    retries: int = 0
    shed: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    engine_ms: float = 0.0  # the answered sends' own time (no gate waits, backoffs or sheds)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class EngineClient:
    """Async client of one vLLM endpoint (a ChatClient). Use `async with`, or call `close()`."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        max_in_flight: int = 64,
        timeout_s: float = 120.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
    ) -> None:
        # user:password@ in the URL is sent as basic auth (a proxy in front of the server) and
        # kept out of self.url, which every message and log line shows; so is an OpenAI /v1.
        bare, username, password = without_userinfo(url.strip())
        self.url = bare.rstrip("/").removesuffix("/v1")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        if username is not None or password is not None:
            if api_key:
                raise ValueError(
                    f"{self.url}: credentials in the URL and an api_key: keep one of them"
                )
            basic = aiohttp.BasicAuth(unquote(username or ""), unquote(password or ""))
            self._headers = {"Authorization": basic.encode()}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=5.0)
        self._http: aiohttp.ClientSession | None = None
        self.max_in_flight = max(1, max_in_flight)  # the pool's size: a hard ceiling
        self.gate = PriorityGate(self.max_in_flight)
        self.retries, self.backoff_s, self.max_backoff_s = retries, backoff_s, max_backoff_s
        self.stats = ClientStats()
        self.health = EngineWatchdog(self.url)

    async def __aenter__(self) -> EngineClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:  # made on first use, inside the loop that will use it
            connector = aiohttp.TCPConnector(  # + room for /metrics and /health beside chats
                limit=self.max_in_flight + 4, limit_per_host=0, keepalive_timeout=KEEPALIVE_EXPIRY_S
            )
            self._http = aiohttp.ClientSession(
                connector=connector, headers=self._headers, timeout=self._timeout
            )
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    # ------------------------------------------------------------------ readiness

    async def wait_ready(
        self, timeout_s: float = 120.0, refused_s: float | None = None
    ) -> ModelInfo:
        """Poll /health (refused or 503 while the model loads), then read /v1/models.

        `refused_s`: give up after this long if nothing even listens (connection refused and
        no answer yet), instead of waiting the whole `timeout_s` for a wrong port. A redirect
        ends the wait at once: it is not followed, and it will not go away.
        """
        started = time.monotonic()
        deadline = started + timeout_s
        last = "no answer"
        answered = False
        while time.monotonic() < deadline:
            try:
                async with self._session().get(
                    f"{self.url}/health", timeout=_timeout(5.0), allow_redirects=False
                ) as health:
                    status, where = health.status, redirected(health)
                answered = True
                if where is not None:
                    raise BadAnswer(f"{self.url}/health redirects to {where} (not followed)")
                if status == 200:
                    return (await self.models())[0]
                last = f"/health answered {status}"
            except TRANSIENT as exc:
                last = f"{type(exc).__name__}: {exc}"
                refused = isinstance(exc, aiohttp.ClientConnectorError) and isinstance(
                    exc.os_error, ConnectionRefusedError
                )
                waited = time.monotonic() - started
                if refused and not answered and refused_s is not None and waited >= refused_s:
                    raise EngineUnavailable(
                        f"{self.url} refuses connections: nothing listens on that port"
                    ) from None
            await asyncio.sleep(0.5)
        raise EngineUnavailable(f"{self.url} not ready after {timeout_s:g}s ({last})")

    async def models(self) -> list[ModelInfo]:
        """The server's model cards (BadAnswer if /v1/models is not an OpenAI model list)."""
        status, body = await self._get("/v1/models")
        if status >= 300:
            raise_for(status, body)
        return model_cards(body)

    async def metrics(self) -> dict[str, float]:
        """The engine's queue, cache and preemption figures (datagen.engine.metrics): counts
        summed over label sets, the KV cache usage the fullest engine's. MetricsUnreadable if
        the answer has no finite gauges; EngineUnavailable if there is no answer."""
        try:
            async with self._session().get(
                f"{self.url}/metrics", timeout=_timeout(10.0), allow_redirects=False
            ) as response:
                return await read_watched(response)
        except TRANSIENT as exc:
            raise EngineUnavailable(f"{self.url}/metrics: {type(exc).__name__}: {exc}") from None

    async def _get(self, path: str) -> tuple[int, bytes]:
        """Status and body (bounded) of a GET; a redirect is a BadAnswer, never followed."""
        try:
            async with self._session().get(
                self.url + path, timeout=_timeout(10.0), allow_redirects=False
            ) as response:
                if (where := redirected(response)) is not None:
                    raise BadAnswer(f"{self.url}{path} redirects to {where} (not followed)")
                return response.status, await read_bounded(response, MAX_INFO_BYTES, path)
        except TRANSIENT as exc:
            raise EngineUnavailable(f"{self.url}{path}: {type(exc).__name__}: {exc}") from None

    # ------------------------------------------------------------------ in-flight control

    async def control(
        self, controller: InFlightController, fraction: float = 1.0, interval_s: float = 1.0
    ) -> None:
        """Steer `gate.limit` to `fraction` of the controller's total, reading /metrics every
        `interval_s` (jittered, so workers don't read in step). When the engine preempts and
        more is in flight than the new limit, the excess is shed (aborted and queued again
        here; `PriorityGate.shed` picks which). Runs until cancelled: a reading that fails in
        any way keeps the last limit, with one warning for the client's life; an unreadable one
        (not vLLM's gauges, non-finite values) also raises the watchdog's `metrics_unreadable`."""
        self.gate.limit = min(self.max_in_flight, math.ceil(controller.total * fraction))
        warned = False
        while True:
            await asyncio.sleep(interval_s * random.uniform(0.8, 1.2))
            try:
                self._steer(controller, fraction, await self.metrics())
            except Exception as exc:  # unreachable, odd text, a gateway's page: keep the limit
                if isinstance(exc, MetricsUnreadable):
                    said = "metrics_unreadable" in self.health.raised
                    self.health.unreadable(str(exc))  # once a run, with its fix
                    warned = warned or not said  # that was this spell's warning
                level = logging.DEBUG if warned else logging.WARNING
                log.log(level, "%s/metrics unreadable (%s); in-flight limit stays %d",
                        self.url, exc, self.gate.limit)  # fmt: skip
                warned = True

    def _steer(
        self, controller: InFlightController, fraction: float, values: dict[str, float]
    ) -> None:
        """One reading applied: the watchdog sees it, the controller turns it into a limit."""
        load = EngineLoad.from_metrics(values)
        self.health.read(values)
        total = controller.update(load)
        self.gate.limit = min(self.max_in_flight, math.ceil(total * fraction))
        if controller.last_reason == "memory" and self.gate.active > self.gate.limit:
            self.gate.shed(self.gate.active - self.gate.limit)

    # ------------------------------------------------------------------ chat

    async def chat(
        self, payload: dict[str, Any], *, timeout_s: float | None = None, role: Caller = None
    ) -> ChatResult:
        """One chat completion through `role`'s gate share, retried on transient failures and
        on answers that are not a completion; those last end as BadAnswer (`engine_error`)."""
        body = json.dumps(payload, separators=(",", ":")).encode()
        self.health.sent(payload)
        timeout = _timeout(timeout_s) if timeout_s is not None else self._timeout
        call = _Call(uuid.uuid4().hex, time.perf_counter())
        attempt = 1
        problems: dict[str, None] = {}  # each attempt's, in order, once: the error names them all
        while True:
            try:
                status, raw = await self._send(body, call, timeout, role)
                if status < 300:
                    return self._result(completion(raw), call, attempt)
                if status < 500:  # a redirect or a 4xx: resending cannot help
                    self._count_failure("rejected")
                    raise_for(status, raw)
                self.health.answered(status)
                problem, bad = f"HTTP {status}", False
            except TRANSIENT as exc:  # connect errors, resets, timeouts
                problem, bad = f"{type(exc).__name__}: {exc}", False
            except BadAnswer as exc:  # answered, but not a completion: like a 5xx
                problem, bad = str(exc), True
            problems[problem] = None
            if attempt > self.retries:
                break
            self.stats.retries += 1
            log.info("engine call failed (%s), attempt %d, retrying", problem, attempt)
            await asyncio.sleep(self._backoff(attempt))
            attempt += 1
        self._count_failure("bad_answer" if bad else "unavailable")
        error = BadAnswer if bad else EngineUnavailable
        raise error(f"{self.url}: {'; '.join(problems)}; after {self.retries + 1} attempts")

    async def _send(
        self, body: bytes, call: _Call, timeout: aiohttp.ClientTimeout, role: Caller
    ) -> tuple[int, bytes]:
        """One attempt through the gate. A shed request (the engine thrashed) queues and goes
        again, which is not a new attempt."""
        while True:
            asked = time.perf_counter()
            async with self.gate.slot(role or "", call.sheds) as ticket:
                call.sent = time.perf_counter()
                call.queued += call.sent - asked
                work = ticket.work = asyncio.ensure_future(
                    self._post(body, f"{call.id}-{call.sends}", timeout)
                )
                call.sends += 1
                try:
                    answer: tuple[int, bytes] = await work
                    return answer
                except asyncio.CancelledError:
                    current = asyncio.current_task()
                    if not ticket.shed or (current is not None and current.cancelling()):
                        work.cancel()
                        raise
                    self.stats.shed += 1
                    call.sheds += 1

    async def _post(
        self, body: bytes, request_id: str, timeout: aiohttp.ClientTimeout
    ) -> tuple[int, bytes]:
        """Status and body (bounded; for a redirect, where it points: never followed, or the
        prompt and its screenshots would go there)."""
        headers = {"Content-Type": "application/json", "X-Request-Id": request_id}
        async with self._session().post(
            f"{self.url}/v1/chat/completions",
            data=body,
            headers=headers,
            timeout=timeout,
            allow_redirects=False,
        ) as response:
            if (where := redirected(response)) is not None:
                return response.status, where.encode()
            limit = MAX_ANSWER_BYTES if response.status < 400 else MAX_INFO_BYTES
            return response.status, await read_bounded(response, limit, "chat answer")

    def _backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(cap, base·2^(attempt-1))]."""
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))

    def _result(self, answer: Completion, call: _Call, attempts: int) -> ChatResult:
        now = time.perf_counter()
        result = ChatResult(
            content=answer.content,
            reasoning=answer.reasoning,
            finish_reason=answer.finish_reason,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            latency_ms=(now - call.started) * 1000,
            attempts=attempts,
            request_id=answer.request_id,
            model=answer.model,
            queued_ms=call.queued * 1000,
        )
        stats = self.stats
        stats.requests += 1
        stats.engine_ms += (now - call.sent) * 1000
        stats.prompt_tokens += result.prompt_tokens
        stats.completion_tokens += result.completion_tokens
        return result

    def _count_failure(self, kind: str) -> None:
        self.stats.failures[kind] = self.stats.failures.get(kind, 0) + 1


@dataclass
class _Call:
    """One chat call's bookkeeping across its attempts and sheds."""

    id: str
    started: float
    queued: float = 0.0  # seconds spent waiting for a slot
    sent: float = 0.0  # when the last send got its slot
    sends: int = 1
    sheds: int = 0


def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=seconds, sock_connect=min(5.0, seconds))
