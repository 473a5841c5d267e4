"""The stand-in's engine: vLLM-style continuous batching on a virtual GPU (spec §3.7, §6.2).

One asyncio task runs engine steps. Each step: running requests get their next prefill chunk
or one decode token within `max_num_batched_tokens`; if the memory pool overflows the newest
running request is preempted (back to the front of the queue, recomputed later); otherwise
waiting requests are admitted FCFS while fewer than `max_num_seqs` run. The waiting queue is
unbounded, as in vLLM: overload shows as queue depth and latency, never as a 429.
The step then takes `t_fixed + a·decoding + b·prefill_tokens + c·tiles` (÷ speed_factor).

The settings come from a named calibration (`SimConfig.calibration`, config/sim.py): `decode`
by default, or a fit to a published figure on the reference workload. `datagen plan` runs this
same class on a virtual clock (`virtual_rate`), so the plan and the stand-in are one model.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from datagen.config import SimConfig
from datagen.engine.sim.metrics import SimMetrics
from datagen.engine.tokens import BYTES_PER_TOKEN


@dataclass(eq=False)
class SimRequest:
    """One chat completion inside the engine."""

    id: str
    prompt_tokens: int
    tiles: int
    max_tokens: int
    answer: str
    arrival: float = field(default_factory=time.monotonic)
    stream: asyncio.Queue[str | None] | None = None
    done: asyncio.Future[str] | None = None
    prefilled: int = 0
    output_tokens: int = 0
    scheduled_at: float | None = None
    first_token_at: float | None = None
    last_token_at: float | None = None
    finish_reason: str = ""
    text: str = ""
    encoded: bytes = field(init=False, repr=False)
    target_tokens: int = field(init=False)

    def __post_init__(self) -> None:
        # once, not once per token: the engine model (`datagen plan`) emits millions of them
        self.encoded = self.answer.encode()
        needed = max(1, -(-len(self.encoded) // BYTES_PER_TOKEN))
        self.target_tokens = min(needed, self.max_tokens)

    def text_so_far(self) -> str:
        """The answer's first `output_tokens` tokens (a character cut by the last one left out)."""
        cut = self.encoded[: self.output_tokens * BYTES_PER_TOKEN]
        return cut.decode("utf-8", errors="ignore")

    def reset(self) -> None:
        """Preempted: everything is recomputed from scratch later."""
        self.prefilled = 0


@dataclass
class StepWork:
    decode: int = 0
    prefill: int = 0
    tiles: int = 0
    emit: list[SimRequest] = field(default_factory=list)


class SimEngine:
    """Continuous batching with an unbounded FCFS waiting queue."""

    def __init__(self, config: SimConfig, metrics: SimMetrics) -> None:
        self.config = config
        self.metrics = metrics
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self._wake = asyncio.Event()
        self.steps = 0
        self.peak_running = 0
        self.peak_in_flight = 0
        self.completed = 0
        self.completion_tokens = 0
        self.prompt_token_sum = 0
        self.busy_seconds = 0.0
        self._children: dict[int, Any] = {}

    # ------------------------------------------------------------------ requests

    def submit(self, request: SimRequest) -> None:
        self.waiting.append(request)
        self.peak_in_flight = max(self.peak_in_flight, len(self.waiting) + len(self.running))
        self._wake.set()

    def submit_wake(self) -> None:
        """Settings changed: let the loop re-evaluate (e.g. a larger max_num_seqs)."""
        self._wake.set()

    def abort(self, request: SimRequest) -> None:
        """The client went away: vLLM aborts the request (finished_reason=abort)."""
        if request in self.running:
            self.running.remove(request)
        elif request in self.waiting:
            self.waiting.remove(request)
        else:
            return
        self._finish(request, "abort", time.monotonic())

    def fail_all(self) -> None:
        """Engine death: every request in flight ends with an error."""
        now = time.monotonic()
        for request in [*self.running, *self.waiting]:
            self._finish(request, "error", now)
        self.running.clear()
        self.waiting.clear()

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        while True:
            if not self.running and not self.waiting:
                self._publish()
                self._wake.clear()
                await self._wake.wait()
                continue
            await self.step()

    async def step(self) -> None:
        work, seconds = self.plan_step()
        started = time.monotonic()
        await asyncio.sleep(seconds)
        self.busy_seconds += time.monotonic() - started
        self.complete_step(work, time.monotonic())

    def plan_step(self) -> tuple[StepWork, float]:
        """Schedule one engine step; returns the work and how long the step takes."""
        cfg = self.config
        work = self._schedule()
        seconds = (
            cfg.t_fixed_ms
            + cfg.per_seq_ms * work.decode
            + cfg.per_prefill_token_ms * work.prefill
            + cfg.per_tile_ms * work.tiles
        ) / 1000
        return work, seconds / cfg.speed_factor

    def complete_step(self, work: StepWork, now: float) -> None:
        """The step is over: its tokens come out, finished requests leave."""
        self.steps += 1
        self.labelled(self.metrics.iteration).observe(work.decode + work.prefill)
        # the metrics' children once a step, not once a token
        ttft, itl = self.labelled(self.metrics.ttft), self.labelled(self.metrics.itl)
        emitted = 0
        for request in work.emit:
            if not request.finish_reason:  # not aborted while the step ran (its client left)
                self._emit(request, now, ttft, itl)
                emitted += 1
        self.labelled(self.metrics.generation_tokens).inc(emitted)
        self._publish()

    def _schedule(self) -> StepWork:
        cfg = self.config
        work = StepWork()
        budget = cfg.max_num_batched_tokens
        for request in self.running:
            budget = self._advance(request, budget, work)
        preempted = False
        while self.running and self._memory_bytes() > cfg.pool_gib * 2**30:
            victim = self.running.pop()
            victim.reset()
            self.waiting.appendleft(victim)
            work.emit = [r for r in work.emit if r is not victim]
            self.labelled(self.metrics.preemptions).inc()
            preempted = True
        while (
            not preempted
            and self.waiting
            and len(self.running) < cfg.max_num_seqs
            and budget > 0
            and self._fits(self.waiting[0], budget)
        ):
            request = self.waiting.popleft()
            if request.scheduled_at is None:
                request.scheduled_at = time.monotonic()
                self.labelled(self.metrics.queue).observe(request.scheduled_at - request.arrival)
            self.running.append(request)
            budget = self._advance(request, budget, work)
        self.peak_running = max(self.peak_running, len(self.running))
        return work

    def _advance(self, request: SimRequest, budget: int, work: StepWork) -> int:
        """Give a running request its share of this step: a prefill chunk or one decode token."""
        remaining = request.prompt_tokens - request.prefilled
        if remaining > 0:
            chunk = min(remaining, budget)
            if chunk <= 0:
                return budget
            request.prefilled += chunk
            work.prefill += chunk
            if request.prefilled == request.prompt_tokens:
                work.tiles += request.tiles
                work.emit.append(request)  # first token at the end of the step that ends prefill
            return budget - chunk
        if budget <= 0:
            return budget
        work.decode += 1
        work.emit.append(request)
        return budget - 1

    def _fits(self, request: SimRequest, budget: int) -> bool:
        """Does the pool hold `request`'s state and its first chunk beside what runs? vLLM's
        scheduler leaves a request waiting when its blocks cannot be allocated, rather than
        admitting it and preempting later (`admit_when_fits`; the `decode` fit admits and
        preempts, as the stand-in always did). The first request always goes in."""
        cfg = self.config
        if not cfg.admit_when_fits or not self.running:
            return True
        chunk = min(request.prompt_tokens - request.prefilled, budget)
        added = cfg.state_bytes_per_seq + chunk * cfg.kv_bytes_per_token
        return self._memory_bytes() + added <= cfg.pool_gib * 2**30

    def _memory_bytes(self) -> float:
        cfg = self.config
        tokens = sum(r.prefilled + r.output_tokens for r in self.running)
        return len(self.running) * cfg.state_bytes_per_seq + tokens * cfg.kv_bytes_per_token

    # ------------------------------------------------------------------ tokens out

    def _emit(self, request: SimRequest, now: float, ttft: Any, itl: Any) -> None:
        """One output token: the next 4 bytes of the answer (the rest of it, when last)."""
        request.output_tokens += 1
        last = request.output_tokens >= request.target_tokens
        if request.stream is not None:
            text = request.text_so_far()
            piece, request.text = text[len(request.text) :], text
            if piece:
                request.stream.put_nowait(piece)
        if request.first_token_at is None:
            request.first_token_at = now
            ttft.observe(now - request.arrival)
        elif request.last_token_at is not None:
            itl.observe(now - request.last_token_at)
        request.last_token_at = now
        if last:
            self.running.remove(request)
            cut = request.output_tokens * BYTES_PER_TOKEN < len(request.encoded)
            self._finish(request, "length" if cut else "stop", now)

    def _finish(self, request: SimRequest, reason: str, now: float) -> None:
        request.finish_reason = reason
        if request.stream is None:  # a whole answer's text is read once, when it ends
            request.text = request.text_so_far()
        self.metrics.success.labels(finished_reason=reason, **self.metrics.values).inc()
        if reason in ("stop", "length"):
            self.completed += 1
            self.completion_tokens += request.output_tokens
            self.prompt_token_sum += request.prompt_tokens
            self.labelled(self.metrics.prompt_tokens).inc(request.prompt_tokens)
            self.labelled(self.metrics.e2e).observe(now - request.arrival)
            self.labelled(self.metrics.req_prompt).observe(request.prompt_tokens)
            self.labelled(self.metrics.req_generation).observe(request.output_tokens)
        if request.stream is not None:
            request.stream.put_nowait(None)
        if request.done is not None and not request.done.done():
            request.done.set_result(reason)

    def _publish(self) -> None:
        self.labelled(self.metrics.running).set(len(self.running))
        self.labelled(self.metrics.waiting).set(len(self.waiting))
        self.labelled(self.metrics.kv_usage).set(
            min(1.0, self._memory_bytes() / (self.config.pool_gib * 2**30))
        )

    def labelled(self, metric: Any) -> Any:
        """`metric` with the engine's labels; the child is kept, since looking it up again on
        every token costs the engine model (`datagen plan`) a third of its time."""
        child = self._children.get(id(metric))
        if child is None:
            child = self._children[id(metric)] = self.metrics.labelled(metric)
        return child


class _NoRecord:
    """A metric child that records nothing: `observe`, `inc` and `set` do nothing."""

    def observe(self, amount: float) -> None:
        """Nothing: no one reads it."""

    def inc(self, amount: float = 1) -> None:
        """Nothing: no one reads it."""

    def set(self, value: float) -> None:
        """Nothing: no one reads it."""


class _UnreadMetrics(SimMetrics):
    """The metrics of an engine on a virtual clock (`virtual_rate`): no one scrapes them, and
    prometheus_client's locked updates, one per token, were 40% of `datagen plan`'s time. The
    engine's own counts (`completed`, `steps`) are kept as ever."""

    def labelled(self, metric: Any) -> Any:
        return _NoRecord()


@dataclass(frozen=True)
class Shape:
    """One kind of request in a load: its sizes and its share of the requests."""

    prompt_tokens: int
    completion_tokens: int
    tiles: int = 0
    weight: float = 1.0


def virtual_rate(
    config: SimConfig, shapes: list[Shape], in_flight: int | None = None, requests: int = 3000
) -> float:
    """Completed requests per second of the engine model under a closed load on a virtual
    clock: `in_flight` requests kept at the engine (None: a queue that never runs dry), the
    shapes interleaved in proportion to their weights; after a third of the requests as
    warm-up."""
    engine = SimEngine(config, _UnreadMetrics(config.served_model_name, config.max_model_len))
    answers = ["x" * (s.completion_tokens * BYTES_PER_TOKEN) for s in shapes]
    total = sum(s.weight for s in shapes)
    owed = [0.0] * len(shapes)
    clock, made = 0.0, 0
    window: tuple[float, int] | None = None
    while engine.completed < requests:
        while (
            len(engine.waiting) < config.max_num_seqs
            if in_flight is None
            else len(engine.waiting) + len(engine.running) < in_flight
        ):
            for i, shape in enumerate(shapes):  # the largest deficit goes next
                owed[i] += shape.weight
            i = max(range(len(shapes)), key=owed.__getitem__)
            owed[i] -= total
            s = shapes[i]
            engine.waiting.append(
                SimRequest(str(made), s.prompt_tokens, s.tiles, s.completion_tokens, answers[i])
            )
            made += 1
        work, seconds = engine.plan_step()
        clock += seconds
        engine.complete_step(work, clock)
        if window is None and engine.completed >= requests // 3:
            window = (clock, engine.completed)
    assert window is not None
    return (engine.completed - window[1]) / (clock - window[0])


def saturated_rate(
    config: SimConfig,
    prompt_tokens: int,
    completion_tokens: int,
    tiles: int = 0,
    requests: int = 3000,
) -> float:
    """Completed requests per second the engine model gives with a queue that never runs dry:
    the theoretical maximum a client can reach for this request shape."""
    return virtual_rate(config, [Shape(prompt_tokens, completion_tokens, tiles)], None, requests)
