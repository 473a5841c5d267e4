"""What each part of our browser loop costs: `bench/browser_loop.py`'s two loops, plus our loop
with one part switched off or swapped at a time, side by side in alternating rounds, with the
CPU a step split by Chromium process type.

    ours               as in the pipeline
    ours-no-remeasure  the boxes not measured again after the screenshot
    ours-no-settle     `settle_quiet_ms` 0 (the settle returns at once unless a timer is due)
    ours-no-guard      no URL guard, no egress proxy
    ours-pw-shot       Playwright's `page.screenshot` instead of the CDP capture
    ours-no-listeners  the session's request and egress-proxy event listeners removed
    ours-record        + the episode's traffic recorded (HAR, by Playwright's driver): what an
                       episode a replay may verify pays (annotation.verify, a task with a check)
    bare               the bare Playwright loop

A variant is a measurement, not a mode to run in: each drops something the pipeline needs (the
proof that boxes match the image, the settle, the guard). The ratio of a variant's CPU a step
to ours says what that part costs in the loop; the split by process says where (the renderers
of closed contexts are counted under `zygote`, which reaps them).

    python bench/loop_parts.py --variants no-remeasure no-settle --rounds 6 [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from bench.browser_loop import (
    BareSide,
    OursSide,
    RoundResult,
    Side,
    SideSummary,
    at_least_one,
    bench_config,
    make_jobs,
    run_jobs,
    run_round,
)
from datagen.browser.launch import find_executable
from datagen.browser.session import Session
from datagen.config import BrowserConfig
from datagen.records import Element
from datagen.source.readers import BUNDLED_SITES, list_sites
from datagen.source.serve import SiteServer

WARMUP_STEPS = 3


def _no_remeasure(session: Session) -> None:
    async def moved(
        elements: tuple[Element, ...], scroll: tuple[float, float]
    ) -> tuple[set[int], str | None]:
        return set(), ""  # a title, so that observe() asks the page for none

    session.camera._moved = moved  # type: ignore[method-assign]


def _no_settle(session: Session) -> None:
    camera = session.camera
    camera.config = camera.config.model_copy(update={"settle_quiet_ms": 0})


def _pw_shot(session: Session) -> None:
    config = session.config

    async def shot(scroll_x: float = 0.0, scroll_y: float = 0.0) -> bytes:
        return await session.page.screenshot(type="jpeg", quality=config.image_quality)

    session.camera.screenshot = shot  # type: ignore[method-assign]


def _no_listeners(session: Session) -> None:
    page, context = session.page, session.context
    for event, handler in (
        ("request", session._request_started),
        ("requestfinished", session._request_ended),
        ("requestfailed", session._request_ended),
        ("websocket", session._socket_opened),
    ):
        page.remove_listener(event, handler)
    context.remove_listener("response", session._proxy_answered)
    context.remove_listener("requestfailed", session._proxy_failed)


# variant name -> (what it changes in each session, whether it runs without the guard)
VARIANTS: dict[str, tuple[Callable[[Session], None] | None, bool]] = {
    "no-remeasure": (_no_remeasure, False),
    "no-settle": (_no_settle, False),
    "no-guard": (None, True),
    "pw-shot": (_pw_shot, False),
    "no-listeners": (_no_listeners, False),
    "record": (None, False),  # not a part dropped: one added (VariantSide records)
}


class VariantSide(OursSide):
    """Our loop with one part changed in every session it opens."""

    def __init__(self, config: BrowserConfig, allow: list[str], variant: str) -> None:
        change, unguarded = VARIANTS[variant]
        if unguarded:
            config, allow = config.model_copy(update={"url_guard": False}), []
        super().__init__(config, allow)
        self.name = f"ours-{variant}"
        opened = self.host.session

        @asynccontextmanager
        async def session(record: Path | None = None) -> AsyncIterator[Session]:
            if variant == "record":
                record = Path(tempfile.mkdtemp(prefix="bench-har-")) / "traffic.har"
            try:
                async with opened(record) as s:
                    if change is not None:
                        change(s)
                    yield s
            finally:
                if variant == "record" and record is not None:
                    shutil.rmtree(record.parent, ignore_errors=True)

        self.host.session = session  # type: ignore[method-assign]


def cpu_by_type(driver: psutil.Process) -> dict[str, float]:
    """CPU seconds of every process under the driver, by Chromium's `--type` (utility
    processes by their sub-type; the browser process has none)."""
    out: dict[str, float] = defaultdict(float)
    for process in driver.children(recursive=True):
        try:
            args = process.cmdline()
            times = process.cpu_times()
        except psutil.Error:
            continue
        kind = next((a.split("=", 1)[1] for a in args if a.startswith("--type=")), "browser")
        if kind == "utility":
            sub = next((a for a in args if a.startswith("--utility-sub-type=")), "=utility")
            kind = sub.split("=", 1)[1].rsplit(".", 1)[-1]
        out[kind] += times.user + times.system + times.children_user + times.children_system
    return dict(out)


@dataclass(frozen=True)
class PartsReport:
    """Per side: its summary, CPU ms a step by process type, and its CPU a step ÷ bare's."""

    summary: dict[str, SideSummary]
    by_type_ms: dict[str, dict[str, float]]
    cpu_vs_bare: dict[str, float]
    cpu_vs_bare_by_round: dict[str, list[float]]


async def run(args: argparse.Namespace) -> PartsReport:
    sites = list_sites(BUNDLED_SITES)
    config = bench_config(find_executable(args.executable, None))
    results: dict[str, list[RoundResult]] = {}
    by_type: dict[str, dict[str, float]] = {}
    with SiteServer(BUNDLED_SITES) as server:
        sides: list[Side] = [OursSide(config, [server.origin])]
        sides += [VariantSide(config, [server.origin], v) for v in args.variants]
        sides.append(BareSide(config))
        jobs = make_jobs(server, sites, args.episodes, args.seed)
        try:
            for side in sides:
                await side.start()
                await run_jobs(side, jobs[: len(sites)], WARMUP_STEPS, args.sessions)
                results[side.name], by_type[side.name] = [], defaultdict(float)
            for index in range(args.rounds):
                for side in sides:
                    assert side.driver is not None
                    before = cpu_by_type(side.driver)
                    result = await run_round(side, index, jobs, args.steps, args.sessions)
                    after = cpu_by_type(side.driver)
                    for kind, seconds in after.items():
                        by_type[side.name][kind] += seconds - before.get(kind, 0.0)
                    results[side.name].append(result)
                    print(
                        f"round {index} {side.name}: {result.cpu_ms_per_step:.1f} CPU ms/step",
                        file=sys.stderr,
                    )
        finally:
            for side in sides:
                await side.close()
    summary = {name: SideSummary.of(rounds) for name, rounds in results.items()}
    bare = summary["bare"].cpu_ms_per_step
    return PartsReport(
        summary=summary,
        by_type_ms={
            name: {k: round(1000 * v / summary[name].steps, 2) for k, v in sorted(c.items())}
            for name, c in by_type.items()
        },
        cpu_vs_bare={name: round(s.cpu_ms_per_step / bare, 3) for name, s in summary.items()},
        cpu_vs_bare_by_round={
            name: [round(o.cpu_ms_per_step / b.cpu_ms_per_step, 3) for o, b in zip(rs, results["bare"], strict=True)]
            for name, rs in results.items()
        },
    )  # fmt: skip


def print_report(report: PartsReport) -> None:
    for name, s in report.summary.items():
        print(
            f"{name:<18} CPU ms/step {s.cpu_ms_per_step:6.1f} (python {s.cpu_ms_per_step_python:.1f}, "
            f"driver {s.cpu_ms_per_step_driver:.1f}, chromium {s.cpu_ms_per_step_chromium:.1f})  "
            f"÷ bare {report.cpu_vs_bare[name]:.3f}  steps/s {s.steps_per_s:.2f}  others {s.others_cores_mean:.2f}"
        )  # fmt: skip
        print(f"{'':<18} by process: {report.by_type_ms[name]}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--rounds", type=int, default=6, help="alternating rounds per side (default 6)")
    p.add_argument("--episodes", type=int, default=2, help="episodes per site per round")
    p.add_argument("--steps", type=int, default=10, help="steps per episode (default 10)")
    p.add_argument("--sessions", type=int, default=4, help="concurrent episodes per browser")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--executable", default=None, help="Chromium binary (default: /usr/bin/chromium)"
    )
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write results here")
    return at_least_one(p, p.parse_args(argv), ("rounds", "episodes", "steps", "sessions"))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = asyncio.run(run(args))
    print_report(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(asdict(report), indent=2, default=str) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
