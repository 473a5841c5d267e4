"""Does the browser loop stay as cheap after 1,000 steps as at first? Per-step CPU and
steps/s, round by round, of our loop and the bare one on one browser each (no restart).

What it measures: `bench/browser_loop.py`'s two sides (same switches, same jobs), alternating
rounds of `--steps-per-round` steps until each side has done `--steps`. A loop that leaks
(listeners, contexts, CDP sessions, per-page state growing with the episodes) gets dearer or
slower round after round; the bare loop shows what the machine itself drifts by.

    python bench/loop_soak.py --steps 1000 [--json OUT]

Prints each round, then per side: CPU ms a step and steps/s of the first and the last quarter
of the rounds, and their ratio (last ÷ first); `flat` says whether our CPU a step moved by less
than FLAT (10%) and by no more than the bare loop's drift.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.browser_loop import (
    BareSide,
    OursSide,
    RoundResult,
    Side,
    bench_config,
    make_jobs,
    run_jobs,
    run_round,
)
from datagen.browser.launch import find_executable
from datagen.source.readers import BUNDLED_SITES, list_sites
from datagen.source.serve import SiteServer

FLAT = 0.10  # CPU a step may move by this much between the first and last quarter
STEPS_PER_EPISODE = 10
SESSIONS = 4
WARMUP_STEPS = 3


@dataclass(frozen=True)
class Drift:
    """One side: first and last quarter of its rounds."""

    rounds: int
    steps: int
    cpu_ms_first: float
    cpu_ms_last: float
    steps_per_s_first: float
    steps_per_s_last: float

    @property
    def cpu_ratio(self) -> float:
        return round(self.cpu_ms_last / self.cpu_ms_first, 3)

    @property
    def speed_ratio(self) -> float:
        return round(self.steps_per_s_last / self.steps_per_s_first, 3)

    @classmethod
    def of(cls, rounds: list[RoundResult]) -> Drift:
        quarter = max(1, len(rounds) // 4)
        first, last = rounds[:quarter], rounds[-quarter:]

        def cpu(rs: list[RoundResult]) -> float:
            return round(1000 * sum(r.cpu.total for r in rs) / sum(r.steps for r in rs), 2)

        def speed(rs: list[RoundResult]) -> float:
            return round(statistics.fmean(r.steps_per_s for r in rs), 2)

        return cls(
            rounds=len(rounds),
            steps=sum(r.steps for r in rounds),
            cpu_ms_first=cpu(first),
            cpu_ms_last=cpu(last),
            steps_per_s_first=speed(first),
            steps_per_s_last=speed(last),
        )


def is_flat(ours: Drift, bare: Drift) -> bool:
    """Our CPU a step moved by less than FLAT, and grew no more than the bare loop's did (plus
    5 points: the machine drifts both)."""
    return abs(ours.cpu_ratio - 1) < FLAT and ours.cpu_ratio <= max(1.0, bare.cpu_ratio) + 0.05


async def soak(steps: int, per_round: int) -> dict[str, list[RoundResult]]:
    """Alternate rounds of both sides until each has done `steps`."""
    config = bench_config(find_executable(None, None))
    sites = list_sites(BUNDLED_SITES)
    episodes = max(1, per_round // (STEPS_PER_EPISODE * len(sites)))
    with SiteServer(BUNDLED_SITES) as server:
        sides: list[Side] = [OursSide(config, [server.origin]), BareSide(config)]
        results: dict[str, list[RoundResult]] = {s.name: [] for s in sides}
        try:
            for side in sides:
                await side.start()
                warm = make_jobs(server, sites, 1, 999)
                await run_jobs(side, warm, WARMUP_STEPS, SESSIONS)
            index = 0
            while min(sum(r.steps for r in rs) for rs in results.values()) < steps:
                jobs = make_jobs(server, sites, episodes, index)  # new seeds each round
                for side in sides:
                    result = await run_round(side, index, jobs, STEPS_PER_EPISODE, SESSIONS)
                    results[side.name].append(result)
                    print(
                        f"round {index:>3} {side.name:<4} {result.steps:>4} steps "
                        f"{result.steps_per_s:6.2f}/s {result.cpu_ms_per_step:7.1f} CPU ms/step "
                        f"others {result.others_cores:.2f}"
                        + (f" failed {len(result.failures)}" if result.failures else ""),
                        file=sys.stderr,
                    )
                index += 1
        finally:
            for side in sides:
                await side.close()
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1000, help="steps per side (default 1000)")
    p.add_argument("--steps-per-round", type=int, default=100, help="(default 100)")
    p.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = p.parse_args(argv)
    if args.steps < 1 or args.steps_per_round < 1:
        p.error("--steps and --steps-per-round must be at least 1")
    results = asyncio.run(soak(args.steps, args.steps_per_round))
    drift = {name: Drift.of(rs) for name, rs in results.items()}
    for name, d in drift.items():
        print(
            f"{name:<4} {d.steps} steps in {d.rounds} rounds: CPU ms/step {d.cpu_ms_first:.1f} -> "
            f"{d.cpu_ms_last:.1f} (x{d.cpu_ratio:.3f}), steps/s {d.steps_per_s_first:.2f} -> "
            f"{d.steps_per_s_last:.2f} (x{d.speed_ratio:.3f})"
        )
    ours, bare = drift["ours"], drift["bare"]
    flat = is_flat(ours, bare)
    print(
        f"flat: {flat} (ours' CPU a step moved x{ours.cpu_ratio:.3f}; the bare loop's x{bare.cpu_ratio:.3f})"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "drift": {n: asdict(d) | {"cpu_ratio": d.cpu_ratio} for n, d in drift.items()},
            "flat": flat,
            "rounds": {n: [asdict(r) for r in rs] for n, rs in results.items()},
        }
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
