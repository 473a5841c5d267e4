"""Admission of new episodes on one worker: how many sessions its browser side can carry now,
and which limit holds the number in flight.

    pipeline (each observation) ─► observed(obs) ─┐
    probe on the browser loop: loop lag, CPU ─────┴► update() every interval_s ─► limit
    BrowserHost.admit(others_running) ─► admit(): waits while memory or the limit is full
    BrowserHost.session() ─► opened() / closed()
    runtime.plugin ─► Meter.gauges["admission"] = figures() ─► dashboard, run report, summary

The limit moves between `min_sessions` and `sessions_per_worker` by AIMD, once per interval:

- starving (the median observation's own work above `observe_target_ms`, or the median lag of
  the browser loop above `loop_lag_target_ms`): 0.7 × what ran (the limit, or fewer if fewer
  were in flight), and the observation window starts afresh; no second cut while more than the
  limit still run (the first has not taken effect: cutting again would overshoot);
- the machine's CPU above `cpu_target` with either signal past half its target: 0.9 × what ran
  (back off before they starve); saturated but both signals low: hold (past ~4 busy pages on 2
  cores throughput is flat and only latency grows, so saturation alone is no starvation);
- otherwise, when an episode waited for the limit since the last look: + max(1, ceiling / 16),
  or × 2 in the slow start.

The slow start: the limit starts at 2 sessions per core (at least the floor, at most the ceiling)
and doubles while episodes wait and nothing starves, until the first cut or saturation. Opening
every session at once instead (32 fresh contexts cost ~400 ms of CPU each) made observations
wait ~20 s on 2 cores before any signal could act. With `control: static` the limit is the
ceiling from the start. Whatever the limit, an episode is admitted when none is
running: waiting for nothing would only stall. Which limit binds, at each 50 ms tick of the
probe while the worker has work: `engine` (requests wait for an engine slot), `memory` (an
episode waits for the browser's memory), `cpu` (one waits for this limit), `sessions` (every
configured session is in flight), else `tasks` (no more work to start: a shard's tail).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import statistics
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from datagen.config import AdmissionConfig
from datagen.records import Observation

log = logging.getLogger(__name__)
BINDINGS = ("engine", "cpu", "memory", "sessions", "tasks")  # what may hold sessions in flight
IDLE = "idle"  # nothing in flight, nothing waiting: no limit binds (not counted)
NO_CEILING = 1_000_000  # a host outside a worker (tests, benchmarks): only memory holds
PROBE_S = 0.05  # the loop-lag probe's sleep, and the tick of the binding-limit clock
RESERVED_S = 60.0  # an admission whose session never opened stops counting after this
WINDOW = 64  # observations kept for the median (those of the last few seconds)
STARVED, BACK_OFF = 0.7, 0.9  # multiplicative decreases: starving, saturated and rising


@dataclass(frozen=True)
class Signals:
    """One look at how the browser side fares; None where there is nothing to go by yet."""

    observe_ms: float | None = None  # median of recent observations' own work (no settle wait)
    loop_lag_ms: float | None = None  # median lateness of the probe's sleep since the last look
    cpu_busy: float | None = None  # the machine's CPU busy since the last look, 0..1
    browser_cores: float | None = None  # cores the browser's processes used since then


def binding(*, in_flight: int, ceiling: int, waiting: dict[str, int], engine_bound: bool) -> str:
    """Which limit holds the number of sessions in flight now (BINDINGS), or IDLE. `waiting`:
    episodes waiting for admission by what holds them (memory, cpu, sessions)."""
    if engine_bound:
        return "engine"  # more sessions would only queue more requests for the engine
    if not in_flight and not any(waiting.values()):
        return IDLE
    for name in ("memory", "cpu", "sessions"):
        if waiting.get(name):
            return name
    return "sessions" if in_flight >= ceiling else "tasks"


def binding_name(code: float) -> str:
    """The name of a `binding` figure (0: idle)."""
    index = int(code) - 1
    return BINDINGS[index] if 0 <= index < len(BINDINGS) else IDLE


class CpuSampler:
    """The machine's busy fraction and the browser's cores between two calls (psutil's CPU
    times: no global `cpu_percent` state shared with Dask's own monitor)."""

    def __init__(self, processes: Callable[[], list[psutil.Process]]) -> None:
        self.processes = processes
        self._last: tuple[float, float, float, dict[int, float]] | None = None

    def sample(self) -> tuple[float | None, float | None]:
        now, times = time.monotonic(), psutil.cpu_times()
        idle = times.idle + getattr(times, "iowait", 0.0)
        total = sum(times)
        own: dict[int, float] = {}
        for process in self.processes():
            with contextlib.suppress(psutil.Error):
                spent = process.cpu_times()
                own[process.pid] = spent.user + spent.system
        last, self._last = self._last, (now, idle, total, own)
        if last is None or total <= last[2] or now <= last[0]:
            return None, None
        busy = 1.0 - (idle - last[1]) / (total - last[2])
        # per process: one that ended is left out, one that started counts from zero
        used = sum(max(0.0, spent - last[3].get(pid, 0.0)) for pid, spent in own.items())
        return min(1.0, max(0.0, busy)), used / (now - last[0])


class AdmissionController:
    """A worker's session limit and its admissions; runs on the browser's event loop."""

    def __init__(
        self,
        config: AdmissionConfig | None = None,
        ceiling: int | None = None,
        start: int | None = None,
    ) -> None:
        self.config = config or AdmissionConfig(control="static")
        self.ceiling = ceiling or NO_CEILING
        self.floor = max(1, min(self.config.min_sessions, self.ceiling))
        self.adaptive = self.config.control == "adaptive"
        start = start if start is not None else 2 * (os.cpu_count() or 1)
        self.limit = max(self.floor, min(self.ceiling, start)) if self.adaptive else self.ceiling
        self.slow_start = self.adaptive and self.limit < self.ceiling
        self.reason = "start"  # why the limit is where it is
        self.engine_bound: Callable[[], bool] = lambda: False  # set where an engine is used
        self.signals = Signals()
        self.pressed = False  # an episode waited for the limit since the last look
        # episodes that had to wait, by limit (keys fixed: the meter reads from another thread)
        self.waits: Counter[str] = Counter(dict.fromkeys(("memory", "cpu", "sessions"), 0))
        self.bound_s = dict.fromkeys(BINDINGS, 0.0)  # seconds each limit held sessions in flight
        self.binding = IDLE
        self.history: deque[tuple[float, int, str]] = deque(maxlen=4096)
        self._open = 0
        self._reserved: deque[float] = deque()  # admitted, session not opened yet
        self._waiting = {"memory": 0, "cpu": 0, "sessions": 0}
        self._observed: deque[float] = deque(maxlen=WINDOW)
        self._lags: list[float] = []
        self._wakers: list[asyncio.Future[None]] = []
        self._probe: asyncio.Task[None] | None = None

    # --- sessions in flight ---------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Sessions open, and admitted ones about to open (read from any thread)."""
        return self._open + len(self._reserved)

    def _forget_stale(self) -> None:
        stale = time.monotonic() - RESERVED_S
        while self._reserved and self._reserved[0] < stale:
            self._reserved.popleft()

    def opened(self) -> None:
        """A session opens: it takes the slot its admission reserved."""
        if self._reserved:
            self._reserved.popleft()
        self._open += 1

    def closed(self) -> None:
        """A session closed: a waiting episode may go."""
        self._open = max(0, self._open - 1)
        self._wake()

    async def admit(self, others_running: int, over_memory: Callable[[], bool]) -> None:
        """Wait until a new session may open: the browser below its memory limit and fewer
        than `limit` in flight; at once when none is running (never wait for nothing).
        `others_running`: the caller's count of episodes in flight (this count is used too)."""
        self._forget_stale()
        running = max(others_running, self.in_flight)
        counted: set[str] = set()
        while running:
            if over_memory():
                why = "memory"
            elif running >= self.limit:
                why = "cpu" if self.limit < self.ceiling else "sessions"
                self.pressed = True
            else:
                break
            if why not in counted:  # episodes that waited, not rounds of waiting
                counted.add(why)
                self.waits[why] += 1
            self._waiting[why] += 1
            try:
                await self._wait(0.5)  # woken when a session closes or the limit rises
            finally:
                self._waiting[why] -= 1
            running = self.in_flight
        self._reserved.append(time.monotonic())

    async def _wait(self, timeout_s: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._wakers.append(future)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):  # memory frees without a session closing
                    await future
        finally:
            with contextlib.suppress(ValueError):
                self._wakers.remove(future)

    def _wake(self) -> None:
        wakers, self._wakers = self._wakers, []
        for future in wakers:
            if not future.done():
                future.set_result(None)

    # --- signals and the limit --------------------------------------------------------------

    def observed(self, obs: Observation) -> None:
        """An observation's own work (the wait for a quiet page left out: pages that animate
        wait the whole settle timeout however idle the CPU)."""
        self._observed.append(max(0.0, obs.observe_ms - obs.settle_ms))

    def update(self, signals: Signals, in_flight: int | None = None) -> int:
        """Move the limit after one look at the signals; returns it."""
        self.signals = signals
        pressed, self.pressed = self.pressed, False
        if not self.adaptive:
            return self.limit
        running = self.in_flight if in_flight is None else in_flight
        ran = max(self.floor, min(self.limit, running))
        cfg = self.config
        observe, lag = signals.observe_ms or 0.0, signals.loop_lag_ms or 0.0
        load = max(observe / cfg.observe_target_ms, lag / cfg.loop_lag_target_ms)
        saturated = (signals.cpu_busy or 0.0) > cfg.cpu_target
        before = self.limit
        if (load > 1 or (saturated and load > 0.5)) and running > self.limit:
            # the last cut has not taken effect yet (episodes above it run to their end):
            # cutting again on the same starvation would overshoot to the floor
            target, self.reason = float(self.limit), "starving, sessions above the limit ending"
        elif load > 1:
            which = "observe" if observe / cfg.observe_target_ms >= load else "loop lag"
            target, self.reason = ran * STARVED, f"starving ({which})"
            self._observed.clear()  # decide the next cut on observations made after this one
        elif saturated and load > 0.5:
            target, self.reason = ran * BACK_OFF, "cpu saturated, latency rising"
        elif saturated:
            target, self.reason = self.limit, "cpu saturated"
        elif pressed and self.slow_start:
            target, self.reason = self.limit * 2.0, "slow start"
        elif pressed:
            target, self.reason = self.limit + max(1, self.ceiling // 16), "probe"
        else:
            target, self.reason = self.limit, "hold"
        if saturated or load > 1:
            self.slow_start = False  # from here on, additive increase
        self.limit = int(max(self.floor, min(self.ceiling, math.floor(target))))
        if self.limit > before:
            self._wake()
        if self.limit != before:
            log.debug("session limit %d → %d (%s)", before, self.limit, self.reason)
        self.history.append((time.time(), self.limit, self.reason))
        return self.limit

    def look(self, sampler: CpuSampler | None = None) -> Signals:
        """The signals now: the observation median, the loop lag since the last look (then
        forgotten), the CPU since the last look."""
        observe = statistics.median(self._observed) if len(self._observed) >= 3 else None
        lag = statistics.median(self._lags) if self._lags else None
        self._lags = []
        busy, cores = sampler.sample() if sampler is not None else (None, None)
        return Signals(observe, lag, busy, cores)

    def tick(self, seconds: float) -> str:
        """Count `seconds` for the limit that binds now; returns it."""
        self._forget_stale()
        try:
            engine = bool(self.engine_bound())
        except Exception:  # a gauge of the engine must never stop admission
            engine = False
        self.binding = binding(
            in_flight=self.in_flight,
            ceiling=self.ceiling,
            waiting=self._waiting,
            engine_bound=engine,
        )
        if self.binding != IDLE:
            self.bound_s[self.binding] += seconds
        return self.binding

    # --- the probe ----------------------------------------------------------------------------

    def start(self, processes: Callable[[], list[psutil.Process]]) -> None:
        """Start the probe on the running loop (the browser's); `processes`: the browser's.
        A host outside a worker (no ceiling: tests, benchmarks) has nothing to probe for."""
        self.stop()
        if self.ceiling >= NO_CEILING:
            return
        self._probe = asyncio.create_task(self._run(CpuSampler(processes)), name="datagen-admit")

    def stop(self) -> None:
        if self._probe is not None:
            self._probe.cancel()  # not awaited: it holds nothing
            self._probe = None
        self._wake()

    async def _run(self, sampler: CpuSampler) -> None:
        loop = asyncio.get_running_loop()
        sampler.sample()  # the first reading only sets the start
        last = looked = loop.time()
        while True:
            await asyncio.sleep(PROBE_S)
            now = loop.time()
            self._lags.append(max(0.0, now - last - PROBE_S) * 1000)
            self.tick(now - last)
            last = now
            if now - looked >= self.config.interval_s:
                looked = now
                try:
                    self.update(self.look(sampler))
                except Exception:  # a failed look keeps the limit; admission goes on
                    log.warning("session limit not updated", exc_info=True)

    def figures(self) -> dict[str, float]:
        """The meter's gauges: the limit, the signals, the binding limit and its seconds."""
        s = self.signals
        out = {
            "session_limit": float(self.limit if self.ceiling < NO_CEILING else 0),
            "sessions_in_flight": float(self.in_flight),
            "observe_work_ms": s.observe_ms or 0.0,
            "loop_lag_ms": s.loop_lag_ms or 0.0,
            "cpu_busy_pct": (s.cpu_busy or 0.0) * 100,
            "browser_cores": s.browser_cores or 0.0,
            "binding": float(BINDINGS.index(self.binding) + 1 if self.binding in BINDINGS else 0),
            "admission_waits": float(sum(self.waits.values())),
        }
        return out | {f"bound_{name}_s": seconds for name, seconds in self.bound_s.items()}
