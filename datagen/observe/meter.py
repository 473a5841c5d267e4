"""Live figures of one worker: counters in, rates and gauges out. No Dask here.

    pipeline ─► Meter.add("steps") …   (browser loop thread)
    runtime.metrics ─► Meter.figures() (worker's event loop, at each Dask heartbeat)

Gauges come from sources the worker plugin registers: the browser's memory and sessions, the
engine's requests in flight, and the admission controller's session limit, signals and seconds
per limit that held the sessions in flight (`browser.admission`: `bound_engine_s`, … a fixed set).
Counters only ever grow; rates are taken over the last `window_s` seconds of readings. The set
of figures is fixed at set-up (every reject reason has its entry from the start), because Dask's
dashboard makes a column per figure: `runtime.metrics` exposes them as worker metrics.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable

from datagen.records import RejectReason

REASONS = [reason.value for reason in RejectReason]
RATES = {"steps": "steps_per_s", "screenshots": "screenshots_per_s", "episodes": "episodes_per_s"}


class Meter:
    """Counters of one worker and their recent rates."""

    def __init__(self, window_s: float = 10.0) -> None:
        self.window_s = window_s
        self._counts: defaultdict[str, float] = defaultdict(float)
        self._lock = threading.Lock()
        self._readings: deque[tuple[float, defaultdict[str, float]]] = deque()
        self._cache: tuple[float, dict[str, float]] = (0.0, {})
        # sources read at each look: gauges (memory, in flight), and counters kept elsewhere
        self.gauges: dict[str, Callable[[], dict[str, float]]] = {}
        self.totals: dict[str, Callable[[], dict[str, float]]] = {}

    def __getstate__(self) -> dict[str, float]:  # shipped to a worker: an empty meter
        return {"window_s": self.window_s}

    def __setstate__(self, state: dict[str, float]) -> None:
        self.__init__(state["window_s"])  # type: ignore[misc]

    def add(self, name: str, n: float = 1) -> None:
        """Count `n` more of `name` (any thread)."""
        with self._lock:
            self._counts[name] += n

    def counts(self) -> dict[str, float]:
        """Every counter now, those kept elsewhere (`totals`) added in."""
        with self._lock:
            counts = dict(self._counts)
        for source in self.totals.values():
            for name, value in source().items():
                counts[name] = counts.get(name, 0.0) + value
        return counts

    def figures(self, max_age_s: float = 0.5) -> dict[str, float]:
        """Rates over the window, gauges now, and reject counts; cached for `max_age_s`."""
        now = time.monotonic()
        if now - self._cache[0] < max_age_s:
            return self._cache[1]
        counts = defaultdict(float, self.counts())
        self._readings.append((now, counts))
        while len(self._readings) > 2 and now - self._readings[1][0] >= self.window_s:
            self._readings.popleft()
        then, before = self._readings[0]
        span = now - then
        out: dict[str, float] = {}
        for name, label in RATES.items():
            out[label] = round((counts[name] - before[name]) / span, 2) if span > 0 else 0.0
        requests = counts["engine_requests"] - before["engine_requests"]
        tokens = sum(counts[k] - before[k] for k in ("prompt_tokens", "completion_tokens"))
        latency = counts["engine_latency_ms"] - before["engine_latency_ms"]
        out["engine_tokens_per_s"] = round(tokens / span, 1) if span > 0 else 0.0
        out["engine_latency_ms"] = round(latency / requests, 1) if requests else 0.0
        out["engine_requests_per_s"] = round(requests / span, 2) if span > 0 else 0.0
        out["steps"] = counts["steps"]
        out["episodes"] = counts["episodes"]
        out["rejects"] = sum(v for k, v in counts.items() if k.startswith("reject:"))
        for reason in REASONS:  # every reason from the start: the set of metrics never grows
            out["rejects_" + reason] = counts.get("reject:" + reason, 0.0)
        for source in self.gauges.values():
            with contextlib.suppress(Exception):  # a gauge must never break the heartbeat
                out |= {name: round(value, 1) for name, value in source().items()}
        self._cache = (now, out)
        return out
