"""The engine-health watchdog: a silently degraded engine, told from its /metrics and answers.

    EngineClient.control() ─ each /metrics reading ─► EngineWatchdog.read(values)
    EngineClient.chat()    ─ each answer's status ─► EngineWatchdog.answered(status)
    EngineWatchdog.raised  ─► a warning once per condition (the worker's log), the worker's
                              `engine_health_*` figures ─► dashboard /datagen, run report

A degraded engine still answers, so nothing fails; throughput or latency just get worse. Each
condition is named once, with what to do (CONDITIONS). The metric conditions need readings of
/metrics, which the adaptive in-flight control makes (`engine.control: adaptive`, the default);
with `static` control only the answers are watched. A /metrics answer that gives no usable
gauges is itself a condition (`metrics_unreadable`): the control then steers blind.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Condition:
    name: str
    what: str
    fix: str


CONDITIONS = {
    c.name: c
    for c in (
        Condition(
            "prefix_cache_cold",
            "prefix-cache hits stay 0 while the prompts share a prefix (each request "
            "recomputes the shared system prompt and history)",
            "start vLLM with prefix caching on (it is by default; remove "
            "--no-enable-prefix-caching); expected for a Mamba hybrid, where it must stay off "
            "(docs/engine.md, serving flags per version)",
        ),
        Condition(
            "queue_stalled",
            "requests wait while none run (the engine admits nothing)",
            "read the vLLM server's log: a dead or hung engine core, or a request larger "
            "than the KV cache; restart the server",
        ),
        Condition(
            "server_errors",
            "5xx answers to requests the server had accepted (failures after preprocessing, "
            "inside the engine)",
            "read the vLLM server's log for the engine's exception; a dead engine needs a "
            "restart (VLLM_KEEP_ALIVE_ON_ENGINE_DEATH keeps the port but not the engine)",
        ),
        Condition(
            "metrics_unreadable",
            "/metrics gives no finite queue and KV cache gauges (another server's page, a "
            "redirect, an error, NaN or infinite values, or more than its byte bound): the "
            "in-flight limit stays where it was",
            "point engine.url at the vLLM server itself, not a gateway or proxy page; or set "
            "engine.control: static (a fixed engine.max_in_flight)",
        ),
        Condition(
            "kv_thrash",
            "the KV cache is full and running requests are preempted (recomputed later: "
            "throughput lost)",
            "keep fewer requests in flight (engine.max_in_flight, or vLLM's --max-num-seqs), "
            "or give the KV cache more memory (--gpu-memory-utilization; on the CPU "
            "VLLM_CPU_KVCACHE_SPACE)",
        ),
    )
}
FIGURE = "engine_health_"  # worker figure per condition: 1 once raised, else 0
SHARED_AFTER = 4  # requests sent after a repeated prefix before cold hits count
STALLED_READINGS = 3  # consecutive readings with waiting > 0 and running == 0…
STALLED_S = 10.0  # …spanning this long: a starved engine loop delays admission for moments
KV_FULL = 0.97


@dataclass
class EngineWatchdog:
    """Conditions raised so far on one engine endpoint (a worker's client of it)."""

    url: str = ""
    raised: dict[str, str] = field(default_factory=dict)  # condition → what was seen
    _prefixes: set[str] = field(default_factory=set)
    _shared_sent: int = 0
    _stalled: int = 0
    _stalled_since: float = 0.0
    _last: dict[str, float] | None = None
    _first_hits: float | None = None

    def raise_(self, name: str, seen: str) -> None:
        if name in self.raised:
            return
        self.raised[name] = seen
        c = CONDITIONS[name]
        log.warning(
            "engine health: %s at %s: %s (%s). fix: %s", name, self.url, c.what, seen, c.fix
        )

    def sent(self, payload: dict[str, Any]) -> None:
        """A request goes out: remember whether its prompt starts like an earlier one."""
        messages = payload.get("messages") or []
        if not messages or not isinstance(messages[0], dict):
            return
        first = messages[0]
        content = first.get("content")
        if isinstance(content, list):  # text parts only: hashing a screenshot costs CPU a step
            content = [p.get("text") if isinstance(p, dict) else None for p in content]
        head = json.dumps([first.get("role"), content], separators=(",", ":")).encode()
        key = hashlib.blake2b(head, digest_size=8).hexdigest()
        if key in self._prefixes:
            self._shared_sent += 1
        elif len(self._prefixes) < 256:
            self._prefixes.add(key)

    def answered(self, status: int) -> None:
        """An answer's status: a 5xx is a failure inside the engine (vLLM answers 4xx for what
        its preprocessing refuses)."""
        if status >= 500:
            self.raise_("server_errors", f"HTTP {status}")

    def unreadable(self, why: str) -> None:
        """A /metrics answer without usable gauges: the control holds its limit blind."""
        self.raise_("metrics_unreadable", why)

    def read(self, values: dict[str, float], now: float | None = None) -> None:
        """One reading of /metrics (summed over the engine's label sets), taken at `now`
        (monotonic seconds; default: the clock)."""
        now = time.monotonic() if now is None else now
        running = values.get("vllm:num_requests_running", 0.0)
        waiting = values.get("vllm:num_requests_waiting", 0.0)
        if waiting > 0 and running == 0:
            self._stalled_since = self._stalled_since if self._stalled else now
            self._stalled += 1
        else:
            self._stalled = 0
        stalled_s = now - self._stalled_since
        if self._stalled >= STALLED_READINGS and stalled_s >= STALLED_S:
            self.raise_("queue_stalled", f"{waiting:g} waiting, 0 running for {stalled_s:.0f} s")
        last = self._last or {}
        preempted = values.get("vllm:num_preemptions_total", 0.0) - last.get(
            "vllm:num_preemptions_total", values.get("vllm:num_preemptions_total", 0.0)
        )
        kv = values.get("vllm:kv_cache_usage_perc", 0.0)
        if preempted > 0 and (
            kv >= KV_FULL or last.get("vllm:kv_cache_usage_perc", 0.0) >= KV_FULL
        ):
            self.raise_("kv_thrash", f"KV cache {kv:.0%} used, {preempted:g} preempted")
        hits = values.get("vllm:prefix_cache_hits_total")
        prompts = values.get("vllm:prompt_tokens_total", 0.0)
        if hits is not None and self._first_hits is None:
            self._first_hits = hits
        if (
            hits is not None
            and self._first_hits is not None
            and hits == self._first_hits
            and self._shared_sent >= SHARED_AFTER
            and prompts > last.get("vllm:prompt_tokens_total", prompts)
        ):
            self.raise_(
                "prefix_cache_cold",
                f"{self._shared_sent} requests repeated an earlier prompt's start, 0 cache hits",
            )
        self._last = values

    def figures(self) -> dict[str, float]:
        """Every condition (the set is fixed: the dashboard makes a column per figure)."""
        return {FIGURE + name: float(name in self.raised) for name in CONDITIONS}


def raised_anywhere(workers: dict[str, dict[str, float]]) -> list[Condition]:
    """The conditions any worker's figures show raised (worker name → its figures)."""
    return [
        c
        for name, c in CONDITIONS.items()
        if any(figures.get(FIGURE + name, 0.0) > 0 for figures in workers.values())
    ]


def health_html(conditions: list[Condition]) -> str:
    """The engine-health section of the dashboard's /datagen page and of the run report."""
    if not conditions:
        return "<h2>engine health</h2><p>no condition raised</p>"
    items = "".join(
        f"<li><b>{html.escape(c.name)}</b>: {html.escape(c.what)}. "
        f"<i>fix:</i> {html.escape(c.fix)}</li>"
        for c in conditions
    )
    return f"<h2>engine health</h2><ul>{items}</ul>"
