"""Adaptive in-flight control against static caps, when the engine's capacity changes mid-run.

The stand-in runs in its own process. 1,000 sessions send policy-shaped requests back to back
(one 1280×800 screenshot, a 150-token answer). The engine's memory pool changes during the
run (POST /sim/config): 38 GiB (≈ 190 such requests fit), then 3.2 GiB (≈ 16 fit), then
38 GiB again, as when another model or a long-context tenant takes the cache and gives it
back. With more requests running than the
cache holds, the engine preempts and recomputes (vLLM's behaviour, and the stand-in's), so a
cap that is right for one phase is wrong for the other: too low wastes the large cache, too
high thrashes the small one.

Each run is one cap, static or adaptive (`datagen.engine.control`, as pipelines use it), on a
fresh stand-in with the same schedule. Printed: completed requests/s in each phase and over
the run, median and p95 latency at the engine (waits in the client's gate left out), and
adaptive ÷ the best static cap. The static caps are chosen around each phase's best (from
the stand-in's engine model: ≈ 16 for the small pool, ≈ 176 for the large one).

    python -m bench.adaptive                       # caps 12..176 and adaptive, ~8 minutes
    python -m bench.adaptive --caps 48 192 --phase-seconds 6 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from dataclasses import asdict, dataclass, field

import httpx

from bench.engine_util import payload, start_sim
from datagen.engine.client import EngineClient
from datagen.engine.control import InFlightController

POOLS_GIB = (38.0, 3.2, 38.0)
ANSWER = "The cart shows the yoga mat; the checkout button is at the bottom right. " * 8


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
    body = payload(schema=False) | {"max_tokens": 150}
    client = EngineClient(url, max_in_flight=cap or sessions, timeout_s=600, retries=2)
    await client.wait_ready(30)
    control = None
    if cap is None:
        controller = InFlightController(sessions)
        control = asyncio.create_task(client.control(controller, interval_s=0.5))
    stop = asyncio.Event()
    latencies: list[float] = []

    async def session() -> None:
        while not stop.is_set():
            result = await client.chat(body)
            latencies.append(result.latency_ms - result.queued_ms)  # at the engine

    async def configure(**settings: object) -> None:
        await asyncio.to_thread(httpx.post, url + "/sim/config", json=settings)

    await configure(pool_gib=POOLS_GIB[0], text_reply=ANSWER)
    tasks = [asyncio.create_task(session()) for _ in range(sessions)]
    await asyncio.sleep(warm_s)
    run = Run(cap="adaptive" if cap is None else str(cap))
    counted = len(latencies)
    for i, pool in enumerate(POOLS_GIB):
        if i:
            await configure(pool_gib=pool)
        start, done = time.monotonic(), client.stats.requests
        await asyncio.sleep(phase_s)
        run.per_phase_rps.append(
            round((client.stats.requests - done) / (time.monotonic() - start), 2)
        )
        run.limits.append(client.gate.limit)
    run.overall_rps = round(
        sum(run.per_phase_rps) / len(run.per_phase_rps), 2
    )  # phases are equally long
    measured = latencies[counted:]
    stop.set()
    if control is not None:
        control.cancel()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await client.close()
    if measured:
        run.p50_ms = round(statistics.median(measured), 1)
        run.p95_ms = round(statistics.quantiles(measured, n=20)[-1], 1)
    run.errors = sum(client.stats.failures.values())
    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--caps", type=int, nargs="*", default=[12, 14, 16, 24, 48, 96, 176])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--speed", type=float, default=10.0, help="stand-in speed factor")
    parser.add_argument("--phase-seconds", type=float, default=15.0)
    parser.add_argument("--warm-seconds", type=float, default=5.0)
    parser.add_argument("--json", help="write results here")
    args = parser.parse_args()
    runs: list[Run] = []
    for cap in [*args.caps, None]:
        proc, url = start_sim(256, args.speed)
        try:
            run = asyncio.run(
                one_run(url, cap, args.sessions, args.phase_seconds, args.warm_seconds)
            )
        finally:
            proc.terminate()
            proc.wait(10)
        runs.append(run)
        phases = "  ".join(f"{r:6.2f}" for r in run.per_phase_rps)
        print(
            f"cap {run.cap:>8}  req/s by phase (pool {'/'.join(f'{p:g}' for p in POOLS_GIB)} GiB) "
            f"{phases}  overall {run.overall_rps:6.2f}  p50 {run.p50_ms:7.0f} ms  "
            f"p95 {run.p95_ms:7.0f} ms  limit at phase ends {run.limits}  errors {run.errors}",
            flush=True,
        )
    static = [r for r in runs if r.cap != "adaptive"]
    adaptive = runs[-1]
    if static:
        best = max(static, key=lambda r: r.overall_rps)
        print(
            f"adaptive {adaptive.overall_rps:.2f} req/s vs best static cap {best.cap} "
            f"{best.overall_rps:.2f} req/s: ratio {adaptive.overall_rps / best.overall_rps:.3f}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([asdict(r) for r in runs], fh, indent=1)


if __name__ == "__main__":
    main()
