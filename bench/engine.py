"""The engine client against the stand-in (in its own process): utilisation at many sessions,
the adaptive in-flight budget against static caps, and the engine side of bench/e2e.py. Only
public interfaces: the stand-in's CLI and routes, the profiles' prompt builders, `EngineClient`.
Method and results: docs/benchmarks.md, "Engine utilisation" and "Adaptive in-flight budget".

    python -m bench.engine util                 # 100 and 1000 sessions, ~1 minute
    python -m bench.engine util --sessions 100 --seconds 20 --json out.json
    python -m bench.engine adaptive             # caps 12..176 and adaptive, ~8 minutes
    python -m bench.engine adaptive --caps 48 192 --phase-seconds 6 --json out.json

`util`: sessions send navigation requests back to back; utilisation = sustained req/s ÷ the
stand-in's engine model with a queue that never runs dry (`saturated_rate`), and the client's
CPU a request (`--static`: no in-flight controller). `adaptive`: the engine's memory pool
changes mid-run (POOLS_GIB), so a cap right for one phase is wrong for the other: req/s per
phase, engine latency, adaptive ÷ the best static cap. For e2e: `Sampler` (in flight from
/metrics, completions from /sim/stats) and `client_alone_max` (a run's request mix, `mix_of`).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
from PIL import Image

from bench.harness import StandIn, parser, print_columns, write_json
from datagen.config import SimConfig
from datagen.config.sim import CALIBRATIONS
from datagen.engine.client import EngineClient
from datagen.engine.control import InFlightController
from datagen.engine.profiles import PROFILES, SentImage, encode_screenshot
from datagen.engine.sim.engine import Shape, saturated_rate, virtual_rate

PREFERRED = "holotron-12b/all-tokens"  # the published linear workload fit (`CALIBRATIONS`)
PROFILE = PROFILES["holo2_norm1000"]
HISTORY_IMAGES = 3  # VlmPolicyConfig's default: the mix below assumes it
POOLS_GIB = (38.0, 3.2, 38.0)
ANSWER = "The cart shows the yoga mat; the checkout button is at the bottom right. " * 8


def describe(name: str) -> str:
    """The calibration in words: the stand-in's own line for a named fit, else ours."""
    if name == "linear":
        return "linear (bench's own: constant 635.4 ms steps, no prefill or per-sequence cost)"
    if name == "standin":
        return "standin (the stand-in's defaults: prefill-bound)"
    return CALIBRATIONS[name].line() if name in CALIBRATIONS else name


def in_flight_of(metrics: str) -> float:
    """vllm:num_requests_running + vllm:num_requests_waiting from a /metrics text."""
    total = 0.0
    for line in metrics.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
            total += float(line.rsplit(" ", 1)[1])
    return total


@dataclass
class Sampler:
    """Samples the stand-in every `interval_s` on a thread: (time, in flight, completed)."""

    url: str
    interval_s: float = 0.2
    samples: list[tuple[float, float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as http:
            while not self._stop.is_set():
                try:
                    flight = in_flight_of(http.get(self.url + "/metrics").text)
                    done = int(http.get(self.url + "/sim/stats").json()["completed"])
                    self.samples.append((time.monotonic(), flight, done))
                except httpx.HTTPError:
                    pass  # a missed sample: the time average simply has one point fewer
                self._stop.wait(self.interval_s)

    def window(self) -> tuple[float, float, float, int]:
        """The busy window, from the first sample with a request at the engine to the last
        completion: (seconds, mean in flight, completed req/s, completed)."""
        s = self.samples
        start, last = self._bounds() or (0, 0)
        if last <= start:
            return 0.0, 0.0, 0.0, 0
        span = s[last][0] - s[start][0]
        done = s[last][2] - s[start][2]
        return span, self._mean_in_flight(start, last), (done / span if span else 0.0), done

    def before_tail(self, tail_s: float) -> float:
        """Mean in flight over the busy window less its last `tail_s` (an episode's length:
        from about when the last episode started, the run has fewer left than sessions)."""
        s = self.samples
        start, last = self._bounds() or (0, 0)
        if last <= start:
            return 0.0
        cut = s[last][0] - tail_s
        end = max((i for i in range(last + 1) if s[i][0] <= cut), default=0)
        return self._mean_in_flight(start, end)

    def _bounds(self) -> tuple[int, int] | None:
        """(the sample before the first request at the engine, the last completion seen)."""
        s = self.samples
        first = next((i for i, x in enumerate(s) if x[1] > 0 or x[2] > s[0][2]), None)
        if first is None or len(s) < 3:
            return None
        last = next(i for i, x in enumerate(s) if x[2] == s[-1][2])
        return max(0, first - 1), last

    def _mean_in_flight(self, start: int, end: int) -> float:
        """Time-weighted mean of in flight from sample `start` to `end` (each sample holds
        until the next)."""
        s = self.samples
        span = s[end][0] - s[start][0] if end > start else 0.0
        held = sum(s[i][1] * (s[i + 1][0] - s[i][0]) for i in range(start, end))
        return held / span if span else 0.0


# ----------------------------------------------------------------------- the request mix


@dataclass(frozen=True)
class Kind:
    """One kind of request the vlm policy sends: navigation with `images` screenshots (the rest
    of the history as placeholders), or a click's localization."""

    name: str
    images: int
    weight: float


def synthetic_image() -> SentImage:
    """A 1280×800 JPEG as the policy sends it: the stand-in counts image tokens by size, so a
    drawn page costs the engine what a real screenshot of that size does."""
    image = Image.new("RGB", (1280, 800), "white")
    for x in range(0, 1280, 160):
        image.paste((40 + x % 200, 90, 160), (x + 10, 100, x + 140, 140))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=80)
    return encode_screenshot(out.getvalue(), "jpeg", 1280, 800, 1280)


def body_of(
    kind: Kind, image: SentImage, task: str = "Add a product to the cart."
) -> dict[str, Any]:
    """The request body the vlm policy would send for `kind` (its default roles' settings)."""
    if kind.name == "localizer":
        messages = PROFILE.localization_messages(image, "the blue button at the top")
        schema, temperature, max_tokens = PROFILE.point_schema(image), 0.0, 64
    else:
        step = kind.images - 1
        history: list[SentImage | None] = [None] * max(0, step - HISTORY_IMAGES + 1)
        history += [image] * min(kind.images, HISTORY_IMAGES)
        previous = ['{"type": "click", "element": "a link"}'] * step
        messages = PROFILE.navigation_messages(task, step, "", previous, history)
        schema, temperature, max_tokens = PROFILE.navigation_schema(image), 0.7, 512
    return {
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "structured_outputs": {"json": schema},
    }


def mix_of(step_indices: Sequence[int], localized: int) -> list[Kind]:
    """The run's request mix from its step rows: one navigation request per step (its images:
    step index + 1, at most HISTORY_IMAGES) and `localized` localizations."""
    kinds: dict[int, int] = {}
    for index in step_indices:
        n = min(index + 1, HISTORY_IMAGES)
        kinds[n] = kinds.get(n, 0) + 1
    mix = [Kind(f"navigation/{n}", n, float(c)) for n, c in sorted(kinds.items())]
    return mix + ([Kind("localizer", 1, float(localized))] if localized else [])


@dataclass
class Drive:
    """Sessions sending back to back: samples (time, completed), this process's CPU seconds,
    the client (its stats), (prompt, completion) tokens by kind of request, and each answer's
    latency at the engine (the wait in the client's gate left out)."""

    samples: list[tuple[float, int]]
    cpu_s: float
    client: EngineClient
    usage: dict[str, list[tuple[int, int]]]
    latencies: list[float] = field(default_factory=list)

    def sustained(self) -> float:
        """Completed req/s over the middle 60% of the run (ramp-up and drain left out)."""
        n = len(self.samples)
        (t0, c0), (t1, c1) = self.samples[n // 5], self.samples[n - 1 - n // 5]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0

    def per_request(self) -> tuple[float, float]:
        done = max(1, self.client.stats.requests)
        return self.client.stats.prompt_tokens / done, self.client.stats.completion_tokens / done


async def drive(
    url: str,
    bodies: list[tuple[Kind, dict[str, Any]]],
    sessions: int,
    seconds: float,
    *,
    adaptive: bool = False,
    at_least: int = 0,
    cap: int | None = None,
    beside: Callable[[Drive], Awaitable[None]] | None = None,
) -> Drive:
    """`sessions` loops sending `bodies` in their weights' proportions (the largest deficit
    next) for `seconds` and until `at_least` requests, or, given `beside`, until it returns
    (then the requests in flight are dropped); at most `cap` at once (default: all), or as many
    as the pipeline's in-flight controller lets through with `adaptive`."""
    client = EngineClient(url, max_in_flight=cap or sessions, timeout_s=600, retries=2)
    await client.wait_ready(30)
    control = None
    if adaptive:
        steer = client.control(InFlightController(sessions), interval_s=0.5)
        control = asyncio.create_task(steer)
    stop, total = time.monotonic() + seconds, sum(k.weight for k, _ in bodies)
    d = Drive([], 0.0, client, {k.name: [] for k, _ in bodies})
    owed = [0.0] * len(bodies)

    def going() -> bool:  # at a slow stand-in the answers come in waves: a short window cuts one
        return beside is not None or time.monotonic() < stop or client.stats.requests < at_least

    async def session() -> None:
        while going():
            for i, (k, _) in enumerate(bodies):
                owed[i] += k.weight
            i = max(range(len(bodies)), key=owed.__getitem__)
            owed[i] -= total
            result = await client.chat(bodies[i][1])
            d.usage[bodies[i][0].name].append((result.prompt_tokens, result.completion_tokens))
            d.latencies.append(result.latency_ms - result.queued_ms)

    async def sampler() -> None:
        while going():
            d.samples.append((time.monotonic(), client.stats.requests))
            await asyncio.sleep(0.5)

    cpu = time.process_time()
    if beside is None:
        await asyncio.gather(sampler(), *(session() for _ in range(sessions)))
    else:
        tasks = [asyncio.create_task(session()) for _ in range(sessions)]
        await beside(d)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    d.cpu_s = time.process_time() - cpu
    if control is not None:
        control.cancel()
    await client.close()
    return d


@dataclass(frozen=True)
class Maximum:
    """The client alone at full concurrency on the stand-in: completed req/s (middle 60% of
    the run), mean prompt and completion tokens per request, and what it sent."""

    rps: float
    prompt_tokens: float
    completion_tokens: float
    sessions: int
    seconds: float
    errors: int
    shapes: list[Shape]


def shape_of(usage: list[tuple[int, int]], weight: float) -> Shape:
    """The engine model's request shape of some answers' (prompt, completion) tokens."""
    prompt, completion = (sum(x) / len(usage) for x in zip(*usage, strict=True))
    return Shape(round(prompt), max(1, round(completion)), weight=weight)


def client_alone_max(url: str, mix: list[Kind], capacity: int, seconds: float) -> Maximum:
    """What the stand-in completes with a queue that never runs dry (2 × its capacity of
    sessions, every request sent as soon as the last one answered, no in-flight controller,
    at least 10 requests a session)."""
    image, sessions = synthetic_image(), 2 * capacity
    bodies = [(k, body_of(k, image)) for k in mix]
    d = asyncio.run(drive(url, bodies, sessions, seconds, at_least=10 * sessions))
    shapes = [shape_of(d.usage[k.name], k.weight) for k in mix if d.usage[k.name]]
    p, o = d.per_request()
    errors = sum(d.client.stats.failures.values())
    return Maximum(d.sustained(), p, o, sessions, seconds, errors, shapes)


def model_gain(config: SimConfig, shapes: list[Shape], concurrency: int) -> tuple[float, float]:
    """The engine model's own rates for this mix: (req/s at `concurrency` in flight, at 1)."""
    many = virtual_rate(config, shapes, in_flight=concurrency, requests=max(600, 6 * concurrency))
    one = virtual_rate(config, shapes, in_flight=1, requests=300)
    return many, one


# ----------------------------------------------------------------------- util


@dataclass
class Result:
    sessions: int
    capacity: int
    speed_factor: float
    completed: int
    sustained_rps: float
    theoretical_rps: float
    utilisation: float
    client_cpu_ms_per_request: float
    mean_prompt_tokens: float
    mean_completion_tokens: float
    errors: int


NAVIGATION = Kind("navigation/1", 1, 1.0)
UTIL_TASK = "Add a yoga mat to the cart and check out."


def util(sessions: int, capacity: int, speed: float, seconds: float, adaptive: bool) -> Result:
    with StandIn(capacity, speed) as sim:
        bodies = [(NAVIGATION, body_of(NAVIGATION, synthetic_image(), UTIL_TASK))]
        d = asyncio.run(drive(sim.url, bodies, sessions, seconds, adaptive=adaptive))
        completed = int(sim.stats()["completed"])
    p, o = d.per_request()
    # fewer sessions than slots: only `sessions` can ever run, and that is the most to expect
    config = SimConfig(max_num_seqs=min(capacity, sessions), speed_factor=speed)
    best = saturated_rate(config, round(p), round(o), requests=1500)
    rate, done = d.sustained(), max(1, d.client.stats.requests)
    return Result(
        sessions=sessions, capacity=capacity, speed_factor=speed, completed=completed,
        sustained_rps=round(rate, 2), theoretical_rps=round(best, 2), utilisation=round(rate / best, 3) if best else 0.0,
        client_cpu_ms_per_request=round(d.cpu_s * 1000 / done, 3), mean_prompt_tokens=round(p, 1),
        mean_completion_tokens=round(o, 1), errors=sum(d.client.stats.failures.values()),
    )  # fmt: skip


def main_util(args: argparse.Namespace) -> None:
    results = []
    for n in args.sessions:
        capacity = args.capacity or min(n, 256)
        results.append(util(n, capacity, args.speed, args.seconds, not args.static))
    print_columns({f"{r.sessions} sessions": asdict(r) for r in results})
    write_json(args.json, [asdict(r) for r in results])


# ----------------------------------------------------------------------- adaptive


@dataclass
class Run:
    cap: str
    per_phase_rps: list[float] = field(default_factory=list)
    overall_rps: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    limits: list[int] = field(default_factory=list)  # the gate's limit at each phase's end
    errors: int = 0


async def one_run(url: str, cap: int | None, sessions: int, phase_s: float, warm_s: float) -> Run:
    body = body_of(NAVIGATION, synthetic_image(), UTIL_TASK) | {"max_tokens": 150}
    del body["structured_outputs"]  # the stand-in answers its `text_reply`, ANSWER
    run = Run(cap="adaptive" if cap is None else str(cap))

    async def configure(**settings: object) -> None:
        await asyncio.to_thread(httpx.post, url + "/sim/config", json=settings)

    async def phases(d: Drive) -> None:
        await asyncio.sleep(warm_s)
        counted = len(d.latencies)
        for i, pool in enumerate(POOLS_GIB):
            if i:
                await configure(pool_gib=pool)
            start, done = time.monotonic(), d.client.stats.requests
            await asyncio.sleep(phase_s)
            rate = (d.client.stats.requests - done) / (time.monotonic() - start)
            run.per_phase_rps.append(round(rate, 2))
            run.limits.append(d.client.gate.limit)
        del d.latencies[:counted]  # the warm-up's

    await configure(pool_gib=POOLS_GIB[0], text_reply=ANSWER)
    d = await drive(url, [(NAVIGATION, body)], sessions, 0, adaptive=cap is None, cap=cap, beside=phases)  # fmt: skip
    run.overall_rps = round(statistics.fmean(run.per_phase_rps), 2)  # phases equally long
    if measured := d.latencies:
        run.p50_ms = round(statistics.median(measured), 1)
        run.p95_ms = round(statistics.quantiles(measured, n=20)[-1], 1)
    run.errors = sum(d.client.stats.failures.values())
    return run


def main_adaptive(args: argparse.Namespace) -> None:
    runs: list[Run] = []
    for cap in [*args.caps, None]:
        with StandIn(256, args.speed) as sim:
            run = asyncio.run(
                one_run(sim.url, cap, args.sessions, args.phase_seconds, args.warm_seconds)
            )
        runs.append(run)
    print(f"req/s by phase: pool {'/'.join(f'{p:g}' for p in POOLS_GIB)} GiB")
    print_columns({f"cap {r.cap}": asdict(r) for r in runs})
    static, adaptive = [r for r in runs if r.cap != "adaptive"], runs[-1]
    if static:
        best = max(static, key=lambda r: r.overall_rps)
        print(
            f"adaptive {adaptive.overall_rps:.2f} req/s vs best static cap {best.cap} "
            f"{best.overall_rps:.2f} req/s: ratio {adaptive.overall_rps / best.overall_rps:.3f}"
        )
    write_json(args.json, [asdict(r) for r in runs])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    which = p.add_subparsers(dest="bench", required=True)
    u = which.add_parser("util", parents=[parser(None)], add_help=False)
    u.add_argument("--sessions", type=int, nargs="*", default=[100, 1000])
    u.add_argument("--capacity", type=int, default=0, help="max_num_seqs (default: = sessions, at most 256)")  # fmt: skip
    u.add_argument("--seconds", type=float, default=25.0)
    u.add_argument("--static", action="store_true", help="no in-flight controller")
    a = which.add_parser("adaptive", parents=[parser(None)], add_help=False)
    a.add_argument("--caps", type=int, nargs="*", default=[12, 14, 16, 24, 48, 96, 176])
    a.add_argument("--sessions", type=int, default=1000)
    a.add_argument("--phase-seconds", type=float, default=15.0)
    a.add_argument("--warm-seconds", type=float, default=5.0)
    for sub in (u, a):
        sub.add_argument("--speed", type=float, default=10.0, help="stand-in speed factor")
    args = p.parse_args(argv)
    (main_util if args.bench == "util" else main_adaptive)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
