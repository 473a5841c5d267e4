"""The worker's client for a vLLM OpenAI-compatible server.

    payload ─► EngineClient.chat(role) ─► gate ─► POST /v1/chat/completions ─► ChatResult

One aiohttp session per endpoint and worker. Its connection pool is sized to the hard ceiling
of requests in flight; the peers lost throughput to a library's default cap of 100 connections.
Keep-alive expires under vLLM's 5 s, so pooled sockets don't race server closes.

aiohttp replaced httpx here because httpcore's pool scans every connection on every request:
12.6 ms of CPU per request with 1,000 open connections, measured by `bench/engine.py util`.

What is actually sent is bounded by `gate`, a PriorityGate. Its limit is either fixed or steered
by an InFlightController from the server's /metrics (`control()`). Retries cover connection
errors, timeouts and 5xx, with capped jittered exponential backoff; never 4xx.

    EngineError            base
    ├── EngineRejected     4xx: the request itself is wrong (not retried)
    └── EngineUnavailable  retries exhausted, or not ready in time
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
from prometheus_client.parser import text_string_to_metric_families

from datagen.config.roles import Caller
from datagen.engine.control import EngineLoad, InFlightController, PriorityGate
from datagen.engine.health import EngineWatchdog
from datagen.url import without_userinfo

log = logging.getLogger(__name__)
KEEPALIVE_EXPIRY_S = 4.0  # below vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE (5 s)
STANDIN_OWNER = "datagen-sim"
STANDIN_KEY = "datagen_standin"  # the one key of the stand-in's model card that vLLM's lacks
WATCHED_METRICS = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",  # the watchdog's: prompts processed…
    "vllm:prefix_cache_hits_total",  # …and how many of their tokens came from the cache
)
KV_USAGE = "vllm:kv_cache_usage_perc"
TRANSIENT = (aiohttp.ClientError, asyncio.TimeoutError)


class EngineError(Exception):
    """A model call that did not produce an answer."""

    reason = "engine_error"


class EngineRejected(EngineError):
    """The server refused the request (HTTP 4xx); resending it would not help. Branch on
    `status`, `kind` (the envelope's `type`) and `param`, never on `message` (its words change
    between vLLM versions)."""

    reason = "engine_rejected"

    def __init__(self, status: int, kind: str, message: str, param: str | None = None) -> None:
        where = f" [{param}]" if param else ""
        super().__init__(f"HTTP {status} {kind}{where}: {message}")
        self.status, self.kind, self.message, self.param = status, kind, message, param


class EngineUnavailable(EngineError):
    """Connection errors, timeouts or 5xx on every attempt."""

    reason = "engine_unavailable"


@dataclass(frozen=True)
class ModelInfo:
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
        no answer yet), instead of waiting the whole `timeout_s` for a wrong port.
        """
        started = time.monotonic()
        deadline = started + timeout_s
        last = "no answer"
        answered = False
        while time.monotonic() < deadline:
            try:
                async with self._session().get(
                    f"{self.url}/health", timeout=_timeout(5.0)
                ) as health:
                    status = health.status
                answered = True
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
        status, body = await self._get("/v1/models")
        data = _json_or_raise(status, body)
        return [
            ModelInfo(m["id"], m.get("max_model_len"), m.get("owned_by", ""),
                      m.get("root") or "", m.get(STANDIN_KEY) is True)
            for m in data["data"]
        ]  # fmt: skip

    async def metrics(self) -> dict[str, float]:
        """The engine's queue, cache and preemption figures. Counts are summed over label sets
        (vLLM labels each data-parallel engine); the KV cache usage, a fraction per engine, is
        the fullest engine's."""
        status, body = await self._get("/metrics")
        if status >= 400:
            _json_or_raise(status, body)
        wanted = [
            line for line in body.decode().splitlines() if line.startswith(WATCHED_METRICS)
        ]  # the rest (histograms) is most of the text and is not needed
        out: dict[str, float] = {}
        for family in text_string_to_metric_families("\n".join(wanted) + "\n"):
            for sample in family.samples:
                if sample.name == KV_USAGE:
                    out[KV_USAGE] = max(out.get(KV_USAGE, 0.0), sample.value)
                elif sample.name in WATCHED_METRICS:
                    out[sample.name] = out.get(sample.name, 0.0) + sample.value
        return out

    async def _get(self, path: str) -> tuple[int, bytes]:
        async with self._session().get(self.url + path, timeout=_timeout(10.0)) as response:
            return response.status, await response.read()

    # ------------------------------------------------------------------ in-flight control

    async def control(
        self, controller: InFlightController, fraction: float = 1.0, interval_s: float = 1.0
    ) -> None:
        """Steer `gate.limit` to `fraction` of the controller's total, reading /metrics every
        `interval_s` (jittered, so workers don't read in step). When the engine preempts and
        more is in flight than the new limit, the excess is shed (aborted and queued again
        here; `PriorityGate.shed` picks which). Runs until cancelled; a failed read keeps the
        last limit."""
        self.gate.limit = min(self.max_in_flight, math.ceil(controller.total * fraction))
        warned = False
        while True:
            await asyncio.sleep(interval_s * random.uniform(0.8, 1.2))
            try:
                values = await self.metrics()
                load = EngineLoad.from_metrics(values)
            except Exception as exc:  # unreachable, odd text, a gateway's page: keep the limit
                level = logging.DEBUG if warned else logging.WARNING
                log.log(level, "%s/metrics unreadable (%s); in-flight limit stays %d",
                        self.url, exc, self.gate.limit)  # fmt: skip
                warned = True
                continue
            self.health.read(values)
            total = controller.update(load)
            self.gate.limit = min(self.max_in_flight, math.ceil(total * fraction))
            if controller.last_reason == "memory" and self.gate.active > self.gate.limit:
                self.gate.shed(self.gate.active - self.gate.limit)

    # ------------------------------------------------------------------ chat

    async def chat(
        self, payload: dict[str, Any], *, timeout_s: float | None = None, role: Caller = None
    ) -> ChatResult:
        """One chat completion, retried on transient failures, through `role`'s gate share."""
        base_id = uuid.uuid4().hex
        body = json.dumps(payload, separators=(",", ":")).encode()
        self.health.sent(payload)
        timeout = _timeout(timeout_s) if timeout_s is not None else self._timeout
        started = time.perf_counter()
        queued = 0.0
        problem = ""
        attempt = sends = 1
        sheds = 0
        while True:
            try:
                asked = time.perf_counter()
                async with self.gate.slot(role or "", sheds) as ticket:
                    sent = time.perf_counter()
                    queued += sent - asked
                    work = ticket.work = asyncio.ensure_future(
                        self._post(body, f"{base_id}-{sends}", timeout)
                    )
                    sends += 1
                    try:
                        status, raw = await work
                    except asyncio.CancelledError:
                        current = asyncio.current_task()
                        if not ticket.shed or (current is not None and current.cancelling()):
                            work.cancel()
                            raise
                        self.stats.shed += 1  # the engine thrashed: queue again, not an attempt
                        sheds += 1
                        continue
            except TRANSIENT as exc:  # connect errors, resets, timeouts
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if status < 400:
                    return self._result(raw, started, attempt, queued, sent)
                if status < 500:
                    self._count_failure("rejected")
                    _json_or_raise(status, raw)
                self.health.answered(status)
                problem = f"HTTP {status}"
            if attempt > self.retries:
                break
            self.stats.retries += 1
            log.info("engine call failed (%s), attempt %d, retrying", problem, attempt)
            await asyncio.sleep(self._backoff(attempt))
            attempt += 1
        self._count_failure("unavailable")
        raise EngineUnavailable(f"{self.url}: {problem} after {self.retries + 1} attempts")

    async def _post(
        self, body: bytes, request_id: str, timeout: aiohttp.ClientTimeout
    ) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json", "X-Request-Id": request_id}
        async with self._session().post(
            f"{self.url}/v1/chat/completions", data=body, headers=headers, timeout=timeout
        ) as response:
            return response.status, await response.read()

    def _backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(cap, base·2^(attempt-1))]."""
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))

    def _result(
        self, raw: bytes, started: float, attempts: int, queued: float, sent: float
    ) -> ChatResult:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice.get("message") or {}
        usage = data.get("usage") or {}
        latency = (time.perf_counter() - started) * 1000
        result = ChatResult(
            content=message.get("content") or "",
            reasoning=message.get("reasoning") or message.get("reasoning_content"),
            finish_reason=choice.get("finish_reason") or "",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_ms=latency,
            attempts=attempts,
            request_id=data.get("id", ""),
            model=data.get("model", ""),
            queued_ms=queued * 1000,
        )
        stats = self.stats
        stats.requests += 1
        stats.engine_ms += (time.perf_counter() - sent) * 1000
        stats.prompt_tokens += result.prompt_tokens
        stats.completion_tokens += result.completion_tokens
        return result

    def _count_failure(self, kind: str) -> None:
        self.stats.failures[kind] = self.stats.failures.get(kind, 0) + 1


def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=seconds, sock_connect=min(5.0, seconds))


def _json_or_raise(status: int, raw: bytes) -> Any:
    """The decoded body of a success; EngineRejected with vLLM's error envelope otherwise."""
    if status < 400:
        return json.loads(raw)
    try:
        error = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        error = raw.decode(errors="replace")
    if isinstance(error, dict):
        param = None if error.get("param") is None else str(error["param"])
        raise EngineRejected(status, str(error.get("type")), str(error.get("message")), param)
    raise EngineRejected(status, "", str(error))
