"""How many requests to keep in flight: a budget steered by the engine's own gauges, and the
gate that enforces it with per-role shares and priority.

    GET /metrics ─► EngineLoad ─► InFlightController.update() ─► total ─► PriorityGate.limit

The aim is an engine that is always full with a short queue. Too few requests in flight and
the GPU idles between steps; too many and vLLM's waiting queue grows (latency, timeouts), or
its KV cache overflows and it preempts running requests and recomputes them (throughput lost).
The control law, applied every `interval`:

- a preemption since the last look, or the KV cache at `kv_high`: fall back to 0.8 × what was
  running (the cache is the limit and it was crossed);
- otherwise the budget is capped at what the cache holds: running × kv_target / kv_usage;
- more waiting than a short queue (`queue_fraction` of running, at least `min_queue`) in two
  readings running: the engine is full, keep running + the short queue;
- little waits and the whole budget is at the engine: the budget is what limits, probe up
  ×`probe`;
- else (a short queue, or demand below the budget): hold.

Every worker runs the same law on the same gauges and takes its fraction of the total, so the
cluster agrees on one budget without a coordinator; the cost is one /metrics read per worker
per interval.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EngineLoad:
    """One reading of vLLM's scheduler gauges (summed over the server's label sets)."""

    running: float
    waiting: float
    kv_usage: float
    preemptions: float = 0.0

    @classmethod
    def from_metrics(cls, values: dict[str, float]) -> EngineLoad:
        """The load of a reading; ValueError if a gauge is not a finite, non-negative number
        (a NaN would otherwise reach `round()` in the clamp, an infinity pin the floor)."""
        for name, value in values.items():
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} is {value}")
        return cls(
            running=values.get("vllm:num_requests_running", 0.0),
            waiting=values.get("vllm:num_requests_waiting", 0.0),
            kv_usage=values.get("vllm:kv_cache_usage_perc", 0.0),
            preemptions=values.get("vllm:num_preemptions_total", 0.0),
        )


class InFlightController:
    """The cluster-wide budget of requests in flight, from the engine's gauges."""

    def __init__(
        self,
        ceiling: int,
        *,
        floor: int = 4,
        start: int | None = None,
        queue_fraction: float = 0.1,
        min_queue: int = 8,
        kv_target: float = 0.9,
        kv_high: float = 0.97,
        probe: float = 1.5,
    ) -> None:
        self.ceiling, self.floor = max(1, ceiling), max(1, min(floor, ceiling))
        self.total = self._clamp(start if start is not None else min(ceiling, 64))
        self.queue_fraction, self.min_queue = queue_fraction, min_queue
        self.kv_target, self.kv_high, self.probe = kv_target, kv_high, probe
        self._preemptions: float | None = None
        self._waiting = 0.0
        self.last_reason = "start"
        self.history: deque[tuple[float, int, str, EngineLoad]] = deque(maxlen=4096)

    def _clamp(self, value: float) -> int:
        return int(max(self.floor, min(self.ceiling, round(value))))

    def update(self, load: EngineLoad) -> int:
        """Read the gauges once; returns the new total budget. A load with a value that is not
        finite is no reading: the budget stays."""
        gauges = (load.running, load.waiting, load.kv_usage, load.preemptions)
        if not all(map(math.isfinite, gauges)):
            return self.total
        preempted = self._preemptions is not None and load.preemptions > self._preemptions
        self._preemptions = load.preemptions
        running, waiting, kv = load.running, load.waiting, load.kv_usage
        # a queue seen twice in a row: single readings catch requests between arrival and
        # admission (vLLM admits a few per step, within its token budget)
        queued = min(waiting, self._waiting)
        self._waiting = waiting
        queue = max(self.min_queue, self.queue_fraction * running)
        if preempted or kv >= self.kv_high:
            # of what ran, never more than ours (another tenant's requests may run too)
            target, self.last_reason = 0.8 * min(max(running, self.floor), self.total), "memory"
        else:
            fits = running * self.kv_target / kv if running and kv > 0 else math.inf
            if queued > queue:
                target, self.last_reason = running + queue, "full"
            elif queued <= queue / 2 and running + waiting >= 0.95 * self.total:
                target, self.last_reason = self.total * self.probe, "probe"
            else:
                target, self.last_reason = self.total, "hold"
            if fits < target:
                target, self.last_reason = fits, "cache"
        self.total = self._clamp(target)
        self.history.append((time.time(), self.total, self.last_reason, load))
        return self.total


MAX_SHEDS = 2  # a request shed this often is left alone: under sustained preemption, the
# same request must not be aborted and re-queued for ever


@dataclass(eq=False)
class Ticket:
    """A held slot. `work` is what `shed()` cancels: the holder's request, not the holder.
    `sheds` counts how often the holder's request was shed before this slot."""

    name: str = ""
    sheds: int = 0
    work: asyncio.Future[Any] | None = None
    shed: bool = False


class PriorityGate:
    """At most `limit` holders at once. A freed slot goes to the waiting class of highest
    priority (lowest number) that is under its share of the limit; FIFO within a class.

    Acquiring with room and nobody waiting is O(1) and never yields to the loop. `shed(n)`
    cancels the work of n holders, which then queue again: how a client stops an engine that
    thrashes on requests already sent (vLLM aborts a request whose client leaves). The lowest
    priority goes first, and the newest within a class: the likeliest to be still waiting in
    the engine's FCFS queue, so little work is lost (a preempting engine recomputes anyway)."""

    def __init__(self, limit: int) -> None:
        self._limit = max(1, limit)
        self.active = 0
        self._classes: dict[str, tuple[int, float]] = {}  # name -> (priority, share)
        self._order: list[str] = []
        self._active: dict[str, int] = {}
        self._waiters: dict[str, deque[asyncio.Future[None]]] = {}
        self._holders: dict[Ticket, None] = {}  # in the order they got their slot

    def add_class(self, name: str, *, priority: int = 0, share: float = 1.0) -> None:
        self._classes[name] = (priority, share)
        self._active.setdefault(name, 0)
        self._waiters.setdefault(name, deque())
        self._order = sorted(self._classes, key=lambda n: self._classes[n][0])

    @property
    def limit(self) -> int:
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        self._limit = max(1, int(value))
        self._wake()

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self._waiters.values())

    def cap(self, name: str) -> int:
        return max(1, math.floor(self._limit * self._classes[name][1]))

    def _room(self, name: str) -> bool:
        return self.active < self._limit and self._active[name] < self.cap(name)

    @asynccontextmanager
    async def slot(self, name: str = "", sheds: int = 0) -> AsyncIterator[Ticket]:
        if name not in self._classes:
            self.add_class(name)
        await self._acquire(name)
        ticket = Ticket(name, sheds)
        self._holders[ticket] = None
        try:
            yield ticket
        finally:
            del self._holders[ticket]
            self._release(name)

    def shed(self, count: int) -> int:
        """Cancel the work of up to `count` holders: the lowest-priority class first, newest
        first within it, never a request already shed MAX_SHEDS times. Returns how many."""
        candidates = [
            (ticket, work)
            for ticket in reversed(list(self._holders))  # newest first
            if (work := ticket.work) is not None
            and not work.done()
            and not ticket.shed
            and ticket.sheds < MAX_SHEDS
        ]
        candidates.sort(key=lambda pair: -self._classes[pair[0].name][0])  # stable sort
        chosen = candidates[: max(0, count)]
        for ticket, work in chosen:
            ticket.shed = True
            work.cancel()
        return len(chosen)

    async def _acquire(self, name: str) -> None:
        if self._room(name) and not self._served_first(name):
            self._take(name)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters[name].append(future)
        self._wake()  # a class ahead may be at its share: then this one goes now
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted, then cancelled: give back
                self._release(name)
            elif future in self._waiters[name]:
                self._waiters[name].remove(future)
                self._wake()
            raise

    def _served_first(self, name: str) -> bool:
        """Is a waiter of `name`'s class, or of a class ahead of it, able to take a slot now?
        (Waiters held back by their own class's share do not block the others.)"""
        priority = self._classes[name][0]
        return any(
            self._waiters[n] and self._active[n] < self.cap(n)
            for n in self._order
            if self._classes[n][0] <= priority
        )

    def _take(self, name: str) -> None:
        self.active += 1
        self._active[name] += 1

    def _release(self, name: str) -> None:
        self.active -= 1
        self._active[name] -= 1
        self._wake()

    def _wake(self) -> None:
        while self.active < self._limit:
            for name in self._order:
                queue = self._waiters[name]
                while queue and queue[0].done():  # cancelled while waiting
                    queue.popleft()
                if queue and self._active[name] < self.cap(name):
                    future = queue.popleft()
                    self._take(name)
                    future.set_result(None)
                    break
            else:
                return
