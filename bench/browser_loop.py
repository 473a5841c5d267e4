"""Per-step throughput of our browser loop against a bare Playwright loop, side by side.

Steps/s and CPU a step of two loops doing the same work on the bundled sites, with the same
Chromium, switches, viewport, image encoding, episodes, steps and concurrency:

    ours   BrowserHost.session() ─► [Session.observe() ─► Explorer.decide() ─► Session.act(Click)] x steps
    bare   new_context/new_page  ─► [page.screenshot(jpeg) ─► page.evaluate(small JS) ─► mouse.click
                                      ─► wait_for_load_state("load")] x steps

Both sides live in this process, each with its own driver and Chromium, in alternating rounds
(noise falls on both); `settle_ms` 0 (work, not sleeps). CPU: this process, the side's driver
and every process under it, read with psutil around each round (after TEARDOWN_GRACE_S; a
zombie renderer's time is reaped into its zygote's `children_*`); the machine's other load is
reported as "others". Method and results: docs/benchmarks.md, "Browser loop".

    python -m bench.browser_loop --rounds 3 --episodes 4 --steps 10 --sessions 4 [--json OUT]
    python -m bench.browser_loop --variants all --rounds 6 --episodes 2
    python -m bench.browser_loop --soak 1000

`--variants`: more sides, our loop with one part switched off or swapped (VARIANTS: a
measurement, not a mode to run in), and each side's CPU split by Chromium `--type`.
`--soak STEPS`: rounds of `--steps-per-round` steps, new seeds each, until each side has done
STEPS on one browser; `flat`: ours' CPU a step, last ÷ first quarter, moved by less than FLAT
and by no more than the bare loop's (the machine's) drift.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import psutil
from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright

from bench.harness import at_least_one, busy_seconds, parser, print_columns, write_json
from datagen.browser.host import BrowserHost
from datagen.browser.launch import find_executable, launch_options
from datagen.browser.session import Session
from datagen.config import BrowserConfig, ExplorePolicyConfig, Viewport
from datagen.policy.explore import Explorer
from datagen.records import Click, Element, TaskSpec
from datagen.scope import Scope
from datagen.source.readers import BUNDLED_SITES, list_sites
from datagen.source.serve import SiteServer

# The bare side's element scan: what a minimal loop would write (no names, roles or hit tests).
BARE_ELEMENTS_JS = """() => {
  const vw = window.innerWidth, vh = window.innerHeight, out = [];
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], '
    + '[role=tab], [role=switch], [role=checkbox], [onclick]';
  for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    const x1 = Math.max(0, r.left), y1 = Math.max(0, r.top);
    const x2 = Math.min(vw, r.right), y2 = Math.min(vh, r.bottom);
    if (x2 - x1 >= 1 && y2 - y1 >= 1) out.push([(x1 + x2) / 2, (y1 + y2) / 2]);
  }
  return out;
}"""
# Clicks only on both sides: typing would make ours do work the bare loop doesn't.
CLICKS_ONLY = ExplorePolicyConfig(type="explore", type_probability=0.0, submit_probability=0.0)
WARMUP_STEPS = 3
FLAT = 0.10  # a soak's CPU a step may move by this much between the first and last quarter
# After a round, closed contexts' renderers are still exiting: their last CPU belongs to it.
TEARDOWN_GRACE_S = 0.3
Job = tuple[str, int]  # (start URL, seed)


# --------------------------------------------------------------------------- measurement


@dataclass
class Cpu:
    """CPU seconds (user+system) by where they were spent."""

    python: float = 0.0
    driver: float = 0.0
    chromium: float = 0.0

    @property
    def total(self) -> float:
        return self.python + self.driver + self.chromium

    def __add__(self, other: Cpu) -> Cpu:
        return Cpu(
            self.python + other.python, self.driver + other.driver, self.chromium + other.chromium
        )

    def __sub__(self, other: Cpu) -> Cpu:
        return self + Cpu(-other.python, -other.driver, -other.chromium)


def _own_cpu(proc: psutil.Process, reaped: bool) -> float:
    """A process's CPU time, plus its exited children's when `reaped` (see module docstring)."""
    try:
        t = proc.cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0  # reaped between listing and reading: a rare race that can miss one renderer
    own = float(t.user + t.system)
    return own + (float(t.children_user + t.children_system) if reaped else 0.0)


def sample_cpu(driver: psutil.Process) -> Cpu:
    """Now: this process (its children are drivers, still alive: nothing reaped), the driver,
    and everything under the driver."""
    chromium = sum(_own_cpu(p, reaped=True) for p in driver.children(recursive=True))
    return Cpu(_own_cpu(psutil.Process(), reaped=False), _own_cpu(driver, reaped=True), chromium)


async def spawned_driver(start: Callable[[], Awaitable[None]]) -> psutil.Process:
    """Run `start` and return the one child process it spawned: Playwright's driver."""
    me = psutil.Process()
    before = {p.pid for p in me.children()}
    await start()
    new = [p for p in me.children() if p.pid not in before]
    if len(new) != 1:
        raise RuntimeError(f"expected one new Playwright driver process, found {len(new)}")
    return new[0]


# --------------------------------------------------------------------------- the two loops


@dataclass
class EpisodeResult:
    """One episode: steps done, actions that returned an error, and why it stopped early."""

    steps: int = 0
    action_errors: int = 0
    no_target: int = 0
    failure: str | None = None


class Side(Protocol):
    """One loop under test: a browser it owns, and episodes run on it."""

    name: str
    driver: psutil.Process | None
    version: str

    async def start(self) -> None: ...
    async def episode(self, url: str, seed: int, steps: int) -> EpisodeResult: ...
    async def close(self) -> None: ...


class OursSide:
    """Our loop: BrowserHost + Session + Explorer, as `pipeline._walk` drives them."""

    name = "ours"

    def __init__(self, config: BrowserConfig, allow: list[str]) -> None:
        # As in the pipeline: the URL guard and egress proxy on, the site server allowed.
        self.host = BrowserHost(config, allow=allow)
        self.driver: psutil.Process | None = None  # Playwright's driver, once started
        self.version = ""

    async def start(self) -> None:
        self.driver = await spawned_driver(self.host.start)
        self.version = self.host.version

    async def episode(self, url: str, seed: int, steps: int) -> EpisodeResult:
        result = EpisodeResult()
        task = TaskSpec(id=f"bench-{seed}", start_url=url, instruction="explore the page")
        # the scope once an episode, as the pipeline gives it (not worked out again each step)
        explorer = Explorer(CLICKS_ONLY, seed, Scope.for_task("site", url))
        try:
            async with self.host.session() as session:
                await session.goto(url)
                for _ in range(steps):
                    obs = await session.observe()
                    decision = await explorer.decide(obs, task)
                    explorer.pending.clear()  # no key follow-ups after a <select>: one click a step
                    error = await session.act(decision.action)
                    result.steps += 1
                    result.action_errors += error is not None
                    result.no_target += not isinstance(decision.action, Click)
        except Exception as exc:  # recorded in the result, never aborts the round
            result.failure = f"{type(exc).__name__}: {str(exc)[:200]}"
        return result

    async def close(self) -> None:
        await self.host.close()


class BareSide:
    """The minimal loop: plain Playwright, page.screenshot, one small evaluate, mouse.click."""

    name = "bare"

    def __init__(self, config: BrowserConfig) -> None:
        self.config = config
        self.driver: psutil.Process | None = None  # Playwright's driver, once started
        self.version = ""
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    async def start(self) -> None:
        async def launch() -> None:
            self._playwright = await async_playwright().start()

        self.driver = await spawned_driver(launch)
        assert self._playwright is not None and self.config.executable is not None
        options = launch_options(
            self.config.executable, self.config.headless, self.config.extra_args
        )
        self._browser = await self._playwright.chromium.launch(**options)  # type: ignore[arg-type]
        self.version = f"chromium/{self._browser.version}"

    async def episode(self, url: str, seed: int, steps: int) -> EpisodeResult:
        assert self._browser is not None, "start() first"
        result, rng, cfg = EpisodeResult(), random.Random(seed), self.config
        context: BrowserContext | None = None
        try:
            context = await self._browser.new_context(
                viewport={"width": cfg.viewport.width, "height": cfg.viewport.height},
                device_scale_factor=cfg.device_scale_factor,
            )
            page = await context.new_page()
            await page.goto(url, wait_until="load")
            for _ in range(steps):
                await page.screenshot(type="jpeg", quality=cfg.image_quality)
                centres = await page.evaluate(BARE_ELEMENTS_JS)
                if centres:
                    await page.mouse.click(*rng.choice(centres))
                result.no_target += not centres
                await page.wait_for_load_state("load")
                result.steps += 1
        except Exception as exc:  # recorded in the result, never aborts the round
            result.failure = f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            if context is not None:
                await _guarded("context close", context.close())
        return result

    async def close(self) -> None:
        if self._browser is not None:
            await _guarded("browser close", self._browser.close())
        if self._playwright is not None:
            await _guarded("playwright stop", self._playwright.stop())


async def _guarded(what: str, step: Awaitable[None]) -> None:
    """One cleanup step: a failure is reported, and does not stop the next step."""
    try:
        await step
    except Exception as exc:
        print(f"warning: {what} failed: {type(exc).__name__}: {exc}", file=sys.stderr)


# --------------------------------------------------------------------------- variants


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
        async def session(
            record: Path | None = None, proxy: dict[str, str] | None = None, counted: bool = True
        ) -> AsyncIterator[Session]:
            if variant == "record":
                record = Path(tempfile.mkdtemp(prefix="bench-har-")) / "traffic.har"
            try:
                async with opened(record, proxy, counted) as s:
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


# --------------------------------------------------------------------------- rounds


@dataclass
class RoundResult:
    """One side's round: all jobs at the given concurrency."""

    side: str
    round: int
    steps: int
    wall_s: float
    cpu: Cpu
    others_cores: float  # average cores busy with work that isn't ours, during the round
    action_errors: int
    no_target: int
    failures: list[str] = field(default_factory=list)

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.wall_s if self.wall_s else 0.0

    @property
    def cpu_ms_per_step(self) -> float:
        return 1000 * self.cpu.total / self.steps if self.steps else float("nan")


async def run_jobs(
    side: Side, jobs: list[Job], steps: int | list[int], sessions: int
) -> list[EpisodeResult]:
    """Every (url, seed) job as one episode, `sessions` at a time on the side's one browser;
    `steps` each, or each job its own number of steps (a list as long as `jobs`)."""
    gate = asyncio.Semaphore(sessions)
    lengths = [steps] * len(jobs) if isinstance(steps, int) else steps

    async def one(url: str, seed: int, length: int) -> EpisodeResult:
        async with gate:
            return await side.episode(url, seed, length)

    return await asyncio.gather(
        *(one(url, seed, n) for (url, seed), n in zip(jobs, lengths, strict=True))
    )


async def run_round(
    side: Side, index: int, jobs: list[Job], steps: int | list[int], sessions: int
) -> RoundResult:
    """One measured round of one side: wall time and CPU over all its episodes."""
    driver = side.driver
    assert driver is not None, "start() first"
    busy0, cpu0, t0 = busy_seconds(), sample_cpu(driver), time.perf_counter()
    episodes = await run_jobs(side, jobs, steps, sessions)
    wall = time.perf_counter() - t0
    await asyncio.sleep(TEARDOWN_GRACE_S)
    cpu = sample_cpu(driver) - cpu0
    others = max(0.0, (busy_seconds() - busy0 - cpu.total) / (wall + TEARDOWN_GRACE_S))
    return RoundResult(
        side=side.name,
        round=index,
        steps=sum(e.steps for e in episodes),
        wall_s=round(wall, 3),
        cpu=cpu,
        others_cores=others,
        action_errors=sum(e.action_errors for e in episodes),
        no_target=sum(e.no_target for e in episodes),
        failures=[e.failure for e in episodes if e.failure],
    )


# --------------------------------------------------------------------------- report


def _cpu_ms(rounds: list[RoundResult]) -> float:
    steps = sum(r.steps for r in rounds)
    return round(1000 * sum(r.cpu.total for r in rounds) / steps, 2) if steps else float("nan")


def drift(rounds: list[RoundResult]) -> dict[str, Any]:
    """One side: CPU ms a step and steps/s over the first and the last quarter of its rounds."""
    quarter = max(1, len(rounds) // 4)
    first, last = rounds[:quarter], rounds[-quarter:]
    cpu = [_cpu_ms(rs) for rs in (first, last)]
    speed = [round(statistics.fmean(r.steps_per_s for r in rs), 2) for rs in (first, last)]
    return {
        "rounds": len(rounds),
        "steps": sum(r.steps for r in rounds),
        "cpu_ms_first": cpu[0],
        "cpu_ms_last": cpu[1],
        "cpu_ratio": round(cpu[1] / cpu[0], 3),
        "steps_per_s_first": speed[0],
        "steps_per_s_last": speed[1],
        "speed_ratio": round(speed[1] / speed[0], 3),
    }


def is_flat(ours: dict[str, Any], bare: dict[str, Any]) -> bool:
    """Our CPU a step (`drift`) moved by less than FLAT, and grew no more than the bare loop's
    did (plus 5 points: the machine drifts both)."""
    ratio = ours["cpu_ratio"]
    return bool(abs(ratio - 1) < FLAT and ratio <= max(1.0, bare["cpu_ratio"]) + 0.05)


def summarise(rounds: list[RoundResult]) -> dict[str, Any]:
    """One side over all its rounds."""
    steps, wall = sum(r.steps for r in rounds), sum(r.wall_s for r in rounds)
    cpu = sum((r.cpu for r in rounds), Cpu())
    ms = (lambda s: round(1000 * s / steps, 2)) if steps else (lambda s: float("nan"))
    return {
        "steps": steps,
        "wall_s": round(wall, 3),
        "steps_per_s": round(steps / wall, 3),
        "steps_per_s_min": round(min(r.steps_per_s for r in rounds), 3),
        "steps_per_s_max": round(max(r.steps_per_s for r in rounds), 3),
        "cpu_ms_per_step": ms(cpu.total),
        "cpu_ms_per_step_python": ms(cpu.python),
        "cpu_ms_per_step_driver": ms(cpu.driver),
        "cpu_ms_per_step_chromium": ms(cpu.chromium),
        "others_cores_mean": round(statistics.fmean(r.others_cores for r in rounds), 2),
        "action_errors": sum(r.action_errors for r in rounds),
        "no_target": sum(r.no_target for r in rounds),
        "failed_episodes": sum(len(r.failures) for r in rounds),
    }


def vs_bare(side: list[RoundResult], bare: list[RoundResult]) -> dict[str, Any]:
    """A side ÷ the bare loop over all rounds, and per round pair (their spread shows the noise)."""
    so, sb, pairs = summarise(side), summarise(bare), list(zip(side, bare, strict=True))
    return {
        "steps_per_s": round(so["steps_per_s"] / sb["steps_per_s"], 3),
        "cpu_per_step": round(so["cpu_ms_per_step"] / sb["cpu_ms_per_step"], 3),
        "steps_per_s_by_round": [round(o.steps_per_s / b.steps_per_s, 3) for o, b in pairs],
        "cpu_per_step_by_round": [
            round(o.cpu_ms_per_step / b.cpu_ms_per_step, 3) for o, b in pairs
        ],
    }


# --------------------------------------------------------------------------- main


def bench_config(executable: str) -> BrowserConfig:
    """The one config every side uses. settle_ms=0: measure work, not sleeps."""
    return BrowserConfig(
        executable=executable,
        viewport=Viewport(width=1280, height=800),
        device_scale_factor=1.0,
        image_format="jpeg",
        image_quality=80,
        settle_ms=0,
    )


def make_jobs(server: SiteServer, sites: list[str], episodes: int, seed: int) -> list[Job]:
    """(url, seed) per site and episode; the same list for every side in a round."""
    return [
        (server.resolve(f"site://{site}/"), seed * 1000 + i)
        for i in range(episodes)
        for site in sites
    ]


async def run_bench(
    args: argparse.Namespace, config: BrowserConfig, sites: list[str]
) -> dict[str, Any]:
    """Start every side, warm each up (not measured), then alternate rounds: ours, (variants),
    bare, ... `--rounds` of them, or with `--soak` until each side has done that many steps.
    The report (what `--json` writes): with --variants also `parts`, with --soak `drift`, `flat`."""
    episodes = args.episodes
    if args.soak:
        episodes = max(1, args.steps_per_round // (args.steps * len(sites)))
    with SiteServer(BUNDLED_SITES) as server:
        sides: list[Side] = [OursSide(config, [server.origin])]
        sides += [VariantSide(config, [server.origin], v) for v in args.variants]
        sides.append(BareSide(config))
        results: dict[str, list[RoundResult]] = {s.name: [] for s in sides}
        by_type: dict[str, dict[str, float]] = {s.name: defaultdict(float) for s in sides}
        try:
            for side in sides:
                await side.start()
                warm = make_jobs(server, sites, 1, args.seed)
                await run_jobs(side, warm, WARMUP_STEPS, args.sessions)
            index = 0
            while (
                min(sum(r.steps for r in rs) for rs in results.values()) < args.soak
                if args.soak
                else index < args.rounds
            ):
                jobs = make_jobs(server, sites, episodes, index if args.soak else args.seed)
                for side in sides:
                    assert side.driver is not None
                    before = cpu_by_type(side.driver) if args.variants else {}
                    result = await run_round(side, index, jobs, args.steps, args.sessions)
                    after = cpu_by_type(side.driver) if args.variants else {}
                    for kind, seconds in after.items():
                        by_type[side.name][kind] += seconds - before.get(kind, 0.0)
                    results[side.name].append(result)
                    print(_round_line(result), file=sys.stderr)
                index += 1
        finally:
            for side in sides:
                await side.close()
    summary = {name: summarise(rs) for name, rs in results.items()}
    machine = {"cpus": os.cpu_count(), "platform": platform.platform()}
    report: dict[str, Any] = {
        "machine": machine | {"python": platform.python_version()},
        "versions": {"browser": sides[0].version, "playwright": metadata.version("playwright")},
        "settings": vars(args) | {"sites": sites, "browser": config.model_dump(mode="json")},
        "summary": summary,
        "ratio": vs_bare(results["ours"], results["bare"]),
        "rounds": [asdict(r) for rs in zip(*results.values(), strict=True) for r in rs],
    }
    if args.variants:
        vs = {name: vs_bare(rs, results["bare"]) for name, rs in results.items()}
        report["parts"] = {
            "by_type_ms": {
                name: {k: round(1000 * v / summary[name]["steps"], 2) for k, v in sorted(c.items())}
                for name, c in by_type.items()
            },
            "cpu_vs_bare": {name: v["cpu_per_step"] for name, v in vs.items()},
            "cpu_vs_bare_by_round": {name: v["cpu_per_step_by_round"] for name, v in vs.items()},
        }
    if args.soak:
        report["drift"] = {name: drift(rs) for name, rs in results.items()}
        report["flat"] = is_flat(report["drift"]["ours"], report["drift"]["bare"])
    return report


def print_report(report: dict[str, Any]) -> None:
    """Each side's summary (with --variants, ÷ bare and CPU ms a step by process; with --soak,
    its drift) side by side, then ours ÷ bare."""
    columns = {name: dict(s) for name, s in report["summary"].items()}
    for name, column in columns.items():
        if "parts" in report:
            column["cpu ÷ bare"] = report["parts"]["cpu_vs_bare"][name]
            column |= {f"cpu ms, {k}": v for k, v in report["parts"]["by_type_ms"][name].items()}
        column |= {f"soak {k}": v for k, v in report.get("drift", {}).get(name, {}).items()}
    print_columns(columns)
    for figure in ("steps_per_s", "cpu_per_step"):
        by_round = " ".join(f"{r:.2f}" for r in report["ratio"][f"{figure}_by_round"])
        print(f"ours ÷ bare, {figure}: {report['ratio'][figure]:.2f}   per round: {by_round}")
    if "flat" in report:
        print(f"flat: {report['flat']} (first and last quarter of the soak's rounds)")


def _round_line(r: RoundResult) -> str:
    return (
        f"round {r.round} {r.side}: {r.steps} steps in {r.wall_s:.1f}s = {r.steps_per_s:.1f}/s, "
        f"{r.cpu_ms_per_step:.1f} CPU ms/step, others {r.others_cores:.2f} cores"
        + (f", {len(r.failures)} failed episodes: {r.failures[0]}" if r.failures else "")
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per side (default 3)")
    p.add_argument("--episodes", type=int, default=4, help="episodes per site per round (default 4)")  # fmt: skip
    p.add_argument("--steps", type=int, default=10, help="steps per episode (default 10)")
    p.add_argument("--sessions", type=int, default=4, help="concurrent episodes per browser (default 4)")  # fmt: skip
    sites = list_sites(BUNDLED_SITES)
    p.add_argument("--sites", nargs="*", choices=sites, help="site names (default: all bundled)")
    p.add_argument("--seed", type=int, default=0, help="base seed of the episodes' choices")
    p.add_argument("--executable", default=None, help="Chromium binary (default: /usr/bin/chromium)")  # fmt: skip
    p.add_argument("--variants", nargs="*", default=[], choices=[*VARIANTS, "all"], help="our loop with one part changed, as more sides (all: every one)")  # fmt: skip
    p.add_argument("--soak", type=int, default=0, metavar="STEPS", help="rounds until each side has done STEPS")  # fmt: skip
    p.add_argument("--steps-per-round", type=int, default=100, help="--soak's rounds (default 100)")
    p.add_argument("--dry-run", action="store_true", help="show the plan, launch nothing")
    args = p.parse_args(argv)
    args.variants = list(VARIANTS) if "all" in args.variants else args.variants
    names = ("rounds", "episodes", "steps", "sessions", "steps_per_round")
    return at_least_one(p, args, names)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sites = args.sites or list_sites(BUNDLED_SITES)
    # Resolved once, so that every side runs the very same binary.
    config = bench_config(find_executable(args.executable, None))
    per_round = len(sites) * args.episodes * args.steps
    print(
        f"plan: {args.rounds} rounds x (ours, {len(args.variants)} variants, bare); {len(sites)} "
        f"sites x {args.episodes} episodes x {args.steps} steps = {per_round} steps per side per "
        f"round{f' (soak: {args.soak} steps a side)' if args.soak else ''}; {args.sessions} "
        f"concurrent episodes per browser; {config.executable}",
        file=sys.stderr,
    )
    if args.dry_run:
        return 0
    report = asyncio.run(run_bench(args, config, sites))
    print_report(report)
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
