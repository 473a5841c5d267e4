"""The worker's client for a vLLM OpenAI-compatible server.

    payload ─► EngineClient.chat() ─► ChatResult(content, usage, latency, attempts)

One `httpx.AsyncClient` per endpoint and worker, its pool sized to the worker's in-flight
budget (the peers lost throughput to a library's default cap of 100 connections), keep-alive
expiry under vLLM's 5 s so pooled sockets don't race server closes. Retries: connection
errors, timeouts and 5xx, with capped jittered exponential backoff; never 4xx.

    EngineError            base
    ├── EngineRejected     4xx: the request itself is wrong (not retried)
    └── EngineUnavailable  retries exhausted, or not ready in time
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

log = logging.getLogger(__name__)
KEEPALIVE_EXPIRY_S = 4.0  # below vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE (5 s)
STANDIN_OWNER = "datagen-sim"
WATCHED_METRICS = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
)


class EngineError(Exception):
    """A model call that did not produce an answer."""

    reason = "engine_error"


class EngineRejected(EngineError):
    """The server refused the request (HTTP 4xx); resending it would not help."""

    reason = "engine_rejected"

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(f"HTTP {status} {kind}: {message}")
        self.status, self.kind, self.message = status, kind, message


class EngineUnavailable(EngineError):
    """Connection errors, timeouts or 5xx on every attempt."""

    reason = "engine_unavailable"


@dataclass(frozen=True)
class ModelInfo:
    id: str
    max_model_len: int | None
    owned_by: str

    @property
    def is_standin(self) -> bool:
        """True for datagen's stand-in: its answers are not a model's."""
        return self.owned_by == STANDIN_OWNER


@dataclass(frozen=True)
class ChatResult:
    content: str
    reasoning: str | None
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    attempts: int
    request_id: str
    model: str


@dataclass
class ClientStats:
    """Counters of one client, for the run's metrics."""

    requests: int = 0
    retries: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class EngineClient:
    """Async client of one vLLM endpoint. Use `async with`, or call `close()`."""

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
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(
            max_connections=max_in_flight,
            max_keepalive_connections=max_in_flight,
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
        )
        self.url = url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            limits=limits,
            timeout=httpx.Timeout(timeout_s, connect=5.0),
            transport=transport,
        )
        self._gate = asyncio.Semaphore(max_in_flight)
        self.max_in_flight = max_in_flight
        self.retries, self.backoff_s, self.max_backoff_s = retries, backoff_s, max_backoff_s
        self.stats = ClientStats()

    async def __aenter__(self) -> EngineClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    # ------------------------------------------------------------------ readiness

    async def wait_ready(self, timeout_s: float = 120.0) -> ModelInfo:
        """Poll /health (refused or 503 while the model loads), then read /v1/models."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                health = await self._http.get("/health", timeout=5.0)
                if health.status_code == 200:
                    return (await self.models())[0]
                last = f"/health answered {health.status_code}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(0.5)
        raise EngineUnavailable(f"{self.url} not ready after {timeout_s:g}s ({last})")

    async def models(self) -> list[ModelInfo]:
        response = await self._http.get("/v1/models", timeout=10.0)
        self._raise_for_status(response)
        return [
            ModelInfo(m["id"], m.get("max_model_len"), m.get("owned_by", ""))
            for m in response.json()["data"]
        ]

    async def metrics(self) -> dict[str, float]:
        """The engine's queue and cache gauges, summed over label sets."""
        response = await self._http.get("/metrics", timeout=10.0)
        self._raise_for_status(response)
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                if sample.name in WATCHED_METRICS:
                    out[sample.name] = out.get(sample.name, 0.0) + sample.value
        return out

    # ------------------------------------------------------------------ chat

    async def chat(
        self,
        payload: dict[str, Any],
        *,
        timeout_s: float | None = None,
        gate: asyncio.Semaphore | None = None,
    ) -> ChatResult:
        """One chat completion, retried on transient failures; `gate` is a role's own share."""
        base_id = uuid.uuid4().hex
        started = time.perf_counter()
        problem = ""
        for attempt in range(1, self.retries + 2):
            try:
                async with gate or _NO_GATE, self._gate:
                    response = await self._http.post(
                        "/v1/chat/completions",
                        json=payload,
                        headers={"X-Request-Id": f"{base_id}-{attempt}"},
                        timeout=timeout_s if timeout_s is not None else httpx.USE_CLIENT_DEFAULT,
                    )
            except httpx.TransportError as exc:  # connect errors, resets, timeouts
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    return self._result(response, started, attempt)
                if response.status_code < 500:
                    self._count_failure("rejected")
                    self._raise_for_status(response)
                problem = f"HTTP {response.status_code}"
            if attempt <= self.retries:
                self.stats.retries += 1
                log.info("engine call failed (%s), attempt %d, retrying", problem, attempt)
                await asyncio.sleep(self._backoff(attempt))
        self._count_failure("unavailable")
        raise EngineUnavailable(f"{self.url}: {problem} after {self.retries + 1} attempts")

    def _backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(cap, base·2^(attempt-1))]."""
        return random.uniform(0, min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)))

    def _result(self, response: httpx.Response, started: float, attempts: int) -> ChatResult:
        data = response.json()
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
        )
        stats = self.stats
        stats.requests += 1
        stats.latency_ms += latency
        stats.prompt_tokens += result.prompt_tokens
        stats.completion_tokens += result.completion_tokens
        return result

    def _count_failure(self, kind: str) -> None:
        self.stats.failures[kind] = self.stats.failures.get(kind, 0) + 1

    @staticmethod
    def _raise_for_status(response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        try:
            error = response.json().get("error")
        except ValueError:
            error = response.text
        if isinstance(error, dict):
            raise EngineRejected(
                response.status_code, str(error.get("type")), str(error.get("message"))
            )
        raise EngineRejected(response.status_code, "", str(error))


class _NoGate:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_GATE = _NoGate()
