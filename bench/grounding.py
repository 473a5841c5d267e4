"""Grounding quality on pages written the way real web apps are, judged by an independent oracle.

What it measures: for each page of `tests/fixtures/pages/real/` (late rendering, relayout,
animation, shadow DOM, custom checkboxes, listener-only clickables, SVG, iframes, wrapped links,
unlabeled fields, duplicate labels) and each bundled site, one observation as the pipeline
takes it (`Session.goto`, `Session.observe`, grounding rows kept by `check_grounding`), judged
at once on the live page by `oracle` (its own Playwright code and real clicks, never
datagen's element scan):

    precision        rows whose point reaches a target and whose box lies inside it
    recall by kind   targets (visible, static, in the viewport, reachable) with a correct row
    duplicates       rows of one screenshot that share a referring expression
    disagreement     observations with a row whose box is not where its target is painted
                     in the screenshot (or the row of a moving element)
    early            observations taken before the page settled: 1.5 s later, targets had
                     appeared or moved (the oracle judges the moment datagen observed)
    cost             median wall ms of Session.observe() vs a bare page.screenshot(jpeg),
                     and of the oracle's CDP listener walk (the expensive alternative)

The fixture pages carry their ground truth (`data-gt`); the bundled sites do not, so there the
oracle's targets are what Playwright's role queries and CDP's listener lists find.

    .venv/bin/python -m bench.grounding [--repeats N] [--pages NAME ...] [--no-sites] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import oracle
from datagen import SCHEMA_VERSION
from datagen.annotate import grounding_rows
from datagen.annotate.describe import describe
from datagen.browser.host import BrowserHost
from datagen.browser.session import Session
from datagen.config import BrowserConfig, ValidationConfig
from datagen.records import Click, Decision, GroundingRow, Observation
from datagen.source.readers import BUNDLED_SITES, list_sites
from datagen.source.serve import SiteServer
from datagen.validate import check_grounding

REPO = Path(__file__).resolve().parents[1]
PAGES = REPO / "tests" / "fixtures" / "pages"
REAL = PAGES / "real"
CONTROLS = PAGES / "controls"
# Targets from issue 10.
PRECISION_TARGET = 0.995
RECALL_TARGETS = {"native": 0.97, "custom": 0.90, "listener": 0.90, "aria": 0.90, "svg": 0.90}
COORDINATES = re.compile(r"\bat \(\d+, \d+\)")
COST_SAMPLES = 3  # observe() and screenshot() timings per page


def control_pages() -> list[str]:
    """The pages of controls without a name of their own (issue 24: icon-only buttons, glyphs,
    sibling-label toggles, a field beside instructions, filled fields, a slow first render),
    as `controls/NAME.html`; each target carries its `data-gt-case`."""
    return sorted(f"controls/{p.name}" for p in CONTROLS.glob("*.html"))


def page_url(base_url: str, name: str) -> str:
    """Where a page of the corpus is served: `controls/…` as named, the others under real/."""
    return base_url + (name if name.startswith("controls/") else "real/" + name)


def real_pages() -> list[str]:
    """The fixture pages that carry ground truth (`data-gt`); an iframe's inner document is
    part of its page, not a page itself."""
    return sorted(
        p.name
        for p in REAL.glob("*.html")
        if not p.stem.endswith("-inner") and "data-gt" in p.read_text(encoding="utf-8")
    )


def accepted_rows(obs: Observation, browser_version: str) -> list[GroundingRow]:
    """The grounding rows the pipeline would keep for `obs` (as `pipeline._annotate` makes
    them, without model expressions). The one place that knows how: swap it when that changes."""
    rows = grounding_rows(
        obs,
        run_id="bench",
        schema_version=SCHEMA_VERSION,
        task_id="bench",
        episode_id="bench",
        browser_version=browser_version,
        step_index=0,
        limit=400,
    )
    config = ValidationConfig()
    stable = {e.index: e.stable for e in obs.elements}
    return [row for row in rows if check_grounding(row, config, stable[row.element_index]) is None]


async def observe_and_judge(
    session: Session, browser_version: str, *, discover: bool = False
) -> tuple[Observation, list[GroundingRow], oracle.PageVerdict]:
    """One observation as the pipeline takes it, judged at once on the same live page."""
    obs = await session.observe()
    rows = accepted_rows(obs, browser_version)
    verdict = await oracle.judge(
        session.page, rows, obs.screenshot, obs.device_scale_factor, discover=discover
    )
    return obs, rows, verdict


def coordinate_descriptions(obs: Observation, rows: list[GroundingRow]) -> int:
    """How many of the rows' points a target-less click (a scripted or model click) there
    would be described by coordinates (`Click at (x, y)`, `the button at (x, y)`), not by the
    element the DOM has there."""
    said = [describe(obs, Decision(action=Click(x=r.point_px[0], y=r.point_px[1]))) for r in rows]
    return sum(bool(COORDINATES.search(d)) for d in said)


# --------------------------------------------------------------------------- one page


@dataclass
class PageResult:
    """One observation of one page, judged."""

    page: str
    repeat: int
    rows: int
    correct: int
    wrong: int
    unjudged: int
    recall: dict[str, list[int]]  # kind → [found, counted]
    cases: dict[str, list[int]]  # data-gt-case → [found, counted]
    outside_rows: int  # rows quoting text from outside their target's row
    unshown_rows: int  # rows quoting text the page does not show (oracle.shown_text)
    coordinate_descriptions: int  # target-less clicks at a row's point described by coordinates
    duplicate_rows: int
    disagreeing_rows: int
    misnamed_rows: int
    loose_rows: int
    page_changed: bool
    settled_changes: list[str]
    settle_timed_out: bool  # the observation's settle gave up at its limit (recorded)
    stable: bool  # the observation's own verdict (false when its settle gave up)
    observe_ms: float
    judge_ms: float
    report: str
    observe_wall_ms: list[float] = field(default_factory=list)
    screenshot_ms: list[float] = field(default_factory=list)
    listener_walk_ms: float | None = None
    listener_nodes: int | None = None
    annotation_gaps: list[str] = field(default_factory=list)

    @property
    def disagrees(self) -> bool:
        return self.disagreeing_rows > 0

    @property
    def early(self) -> bool:
        return bool(self.settled_changes)


async def run_page(
    host: BrowserHost, name: str, url: str, repeat: int, *, discover: bool, measure: bool
) -> PageResult:
    """Open `url` in a fresh session, observe and judge; on `measure`, also time observe()
    against a bare screenshot and the oracle's CDP listener walk, and check the annotation."""
    async with host.session() as session:
        await session.goto(url)
        started = time.perf_counter()
        obs, rows, verdict = await observe_and_judge(session, host.version, discover=discover)
        observe_ms = obs.observe_ms or (time.perf_counter() - started) * 1000
        changes = await oracle.settled_changes(session.page, verdict.targets, discover=discover)
        result = PageResult(
            page=name,
            repeat=repeat,
            rows=len(rows),
            correct=verdict.correct,
            wrong=len(verdict.wrong),
            unjudged=sum(r.status == "unjudged" for r in verdict.rows),
            recall={k: [h, n] for k, (h, n) in verdict.recall().items()},
            cases={k: [h, n] for k, (h, n) in verdict.recall_by_case().items()},
            outside_rows=len(verdict.outside),
            unshown_rows=len(verdict.unshown),
            coordinate_descriptions=coordinate_descriptions(obs, rows),
            duplicate_rows=verdict.duplicate_rows,
            disagreeing_rows=len(verdict.disagreeing),
            misnamed_rows=len(verdict.misnamed),
            loose_rows=len(verdict.loose),
            page_changed=verdict.page_changed,
            settled_changes=changes,
            settle_timed_out=obs.settle_timed_out,
            stable=obs.stable,
            observe_ms=round(observe_ms, 1),
            judge_ms=verdict.judge_ms,
            report=verdict.report(),
        )
        if measure:
            # Not interleaved: Playwright's screenshot adds and removes a style element (to
            # hide the caret), a DOM change that the next observe() would wait out.
            for _ in range(COST_SAMPLES):
                t0 = time.perf_counter()
                await session.observe()
                result.observe_wall_ms.append(round((time.perf_counter() - t0) * 1000, 1))
            for _ in range(COST_SAMPLES):
                t0 = time.perf_counter()
                await session.page.screenshot(type="jpeg", quality=host.config.image_quality)
                result.screenshot_ms.append(round((time.perf_counter() - t0) * 1000, 1))
            gaps = await oracle.annotation_gaps(session.page)
            result.listener_walk_ms, result.listener_nodes = gaps.listener_ms, gaps.listener_nodes
            if not discover:
                result.annotation_gaps = gaps.by_role + gaps.by_listener
    return result


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class Summary:
    """All observations together, against the issue's targets."""

    observations: int
    rows: int
    precision: float
    recall: dict[str, list[float]]  # kind → [found, counted, ratio]
    cases: dict[str, list[float]]  # data-gt-case → [found, counted, ratio]
    outside_rows: int
    unshown_rows: int
    coordinate_descriptions: int
    duplicate_rate: float
    duplicate_observations: int
    misnamed_rows: int
    loose_rows: int
    disagreeing_observations: int
    early_observations: int
    early_unmarked: int  # early, yet neither settle_timed_out nor unstable
    settle_timeouts: int  # observations whose settle gave up (each marked not stable)
    changed_while_judged: int
    first_observe_ms_median: float
    observe_ms_median: float
    screenshot_ms_median: float
    listener_walk_ms_median: float
    met: dict[str, bool]

    @classmethod
    def of(cls, results: list[PageResult]) -> Summary:
        correct, wrong = sum(r.correct for r in results), sum(r.wrong for r in results)
        precision = correct / (correct + wrong) if correct + wrong else 1.0
        recall: dict[str, list[float]] = {}
        for kind in oracle.KINDS:
            found = sum(r.recall.get(kind, [0, 0])[0] for r in results)
            counted = sum(r.recall.get(kind, [0, 0])[1] for r in results)
            if counted:
                recall[kind] = [found, counted, round(found / counted, 4)]
        cases: dict[str, list[float]] = {}
        for case in sorted({c for r in results for c in r.cases}):
            found = sum(r.cases.get(case, [0, 0])[0] for r in results)
            counted = sum(r.cases.get(case, [0, 0])[1] for r in results)
            cases[case] = [found, counted, round(found / counted, 4)]
        rows = sum(r.rows for r in results)
        observe = [v for r in results for v in r.observe_wall_ms]
        shots = [v for r in results for v in r.screenshot_ms]
        walks = [r.listener_walk_ms for r in results if r.listener_walk_ms is not None]
        disagreeing = sum(r.disagrees for r in results)
        dup_rows = sum(r.duplicate_rows for r in results)
        met = {"precision": precision >= PRECISION_TARGET}
        met |= {f"recall {k}": v[2] >= RECALL_TARGETS[k] for k, v in recall.items()}
        met |= {"duplicates": dup_rows == 0, "disagreement": disagreeing == 0}
        met |= {"settled": not any(r.early for r in results)}
        met |= {"names": not any(r.misnamed_rows for r in results)}
        met |= {"own row": not any(r.outside_rows for r in results)}
        met |= {"shown": not any(r.unshown_rows for r in results)}
        met |= {"no coordinates": not any(r.coordinate_descriptions for r in results)}
        met |= {"one line": not any(r.loose_rows for r in results)}
        return cls(
            observations=len(results),
            rows=rows,
            precision=round(precision, 4),
            recall=recall,
            cases=cases,
            outside_rows=sum(r.outside_rows for r in results),
            unshown_rows=sum(r.unshown_rows for r in results),
            coordinate_descriptions=sum(r.coordinate_descriptions for r in results),
            duplicate_rate=round(dup_rows / rows, 4) if rows else 0.0,
            duplicate_observations=sum(r.duplicate_rows > 0 for r in results),
            misnamed_rows=sum(r.misnamed_rows for r in results),
            loose_rows=sum(r.loose_rows for r in results),
            disagreeing_observations=disagreeing,
            early_observations=sum(r.early for r in results),
            early_unmarked=sum(r.early and r.stable and not r.settle_timed_out for r in results),
            settle_timeouts=sum(r.settle_timed_out for r in results),
            changed_while_judged=sum(r.page_changed for r in results),
            first_observe_ms_median=round(statistics.median(r.observe_ms for r in results), 1),
            observe_ms_median=round(statistics.median(observe), 1) if observe else float("nan"),
            screenshot_ms_median=round(statistics.median(shots), 1) if shots else float("nan"),
            listener_walk_ms_median=round(statistics.median(walks), 1) if walks else float("nan"),
            met=met,
        )


def print_report(results: list[PageResult], summary: Summary, verbose: bool) -> None:
    kinds = oracle.KINDS
    head = f"{'page':<28} {'rows':>4} {'ok':>4} {'bad':>4} {'prec':>6} " + " ".join(
        f"{k[:8]:>8}" for k in kinds
    )
    print(head + f" {'dups':>4} {'disagr':>6} {'early':>5} {'obs ms':>7}")
    for r in results:
        judged = r.correct + r.wrong
        prec = f"{r.correct / judged:.3f}" if judged else "-"
        cells = " ".join(
            f"{r.recall[k][0]:>3}/{r.recall[k][1]:<4}" if k in r.recall else f"{'-':>8}"
            for k in kinds
        )
        flag = " (changed while judged)" if r.page_changed else ""
        print(
            f"{r.page:<28} {r.rows:>4} {r.correct:>4} {r.wrong:>4} {prec:>6} {cells} "
            f"{r.duplicate_rows:>4} {r.disagreeing_rows:>6} {len(r.settled_changes):>5} "
            f"{r.observe_ms:>7.0f}{flag}"
        )
        if verbose and (
            r.wrong or r.disagrees or r.duplicate_rows or r.misnamed_rows or r.loose_rows
            or r.outside_rows
            or r.unshown_rows
            or "miss " in r.report
        ):  # fmt: skip
            print("    " + r.report.replace("\n", "\n    "))
        if verbose and r.early:
            print(
                f"    after the observation: {'; '.join(r.settled_changes[:4])}"
                + (f" (+{len(r.settled_changes) - 4} more)" if len(r.settled_changes) > 4 else "")
            )
        for gap in r.annotation_gaps:
            print(f"    WARNING annotation gap on {r.page}: {gap}")
    s = summary
    print()
    print(f"{'figure':<44} {'measured':<26} {'target':<8} met")

    def line(what: str, measured: str, target: str, met: bool | None) -> None:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{what:<44} {measured:<26} {target:<8} {mark}")

    line("precision (all rows)", f"{s.precision:.4f}", "≥ 0.995", s.met["precision"])
    for kind, (found, counted, ratio) in s.recall.items():
        target = RECALL_TARGETS[kind]
        line(f"recall {kind}", f"{ratio:.3f} ({found:.0f}/{counted:.0f})", f"≥ {target:.2f}",
             s.met[f"recall {kind}"])  # fmt: skip
    for case, (found, counted, ratio) in s.cases.items():
        line(f"recall, case {case}", f"{ratio:.3f} ({found:.0f}/{counted:.0f})", "-", None)
    line("rows sharing an expression", f"{s.duplicate_rate:.4f} ({s.duplicate_observations} obs)",
         "0", s.met["duplicates"])  # fmt: skip
    line("rows naming the wrong thing (data-gt-name)", f"{s.misnamed_rows}", "0", s.met["names"])
    line("rows quoting text from outside their row", f"{s.outside_rows}", "0", s.met["own row"])
    line("rows quoting text the page does not show", f"{s.unshown_rows}", "0", s.met["shown"])
    line("clicks at a row's point described by coordinates", f"{s.coordinate_descriptions}",
         "0", s.met["no coordinates"])  # fmt: skip
    line("wrapped-link rows boxing several lines", f"{s.loose_rows}", "0", s.met["one line"])
    line("observations whose boxes disagree with image",
         f"{s.disagreeing_observations}/{s.observations}", "0", s.met["disagreement"])  # fmt: skip
    line("observations before the page settled", f"{s.early_observations}/{s.observations}",
         "0", s.met["settled"])  # fmt: skip
    line("  of them not marked (stable, no settle timeout)", f"{s.early_unmarked}", "0",
         s.early_unmarked == 0)  # fmt: skip
    line("observations whose settle gave up (marked)", f"{s.settle_timeouts}", "-", None)
    line("observations the page changed while judged", f"{s.changed_while_judged}", "-", None)
    line("median ms: first observe() after goto", f"{s.first_observe_ms_median:.1f}", "-", None)
    line("median ms: Session.observe(), page settled", f"{s.observe_ms_median:.1f}", "-", None)
    line("median ms: bare page.screenshot(jpeg)", f"{s.screenshot_ms_median:.1f}", "-", None)
    ratio = s.observe_ms_median / s.screenshot_ms_median if s.screenshot_ms_median else 0.0
    line("observe ÷ bare screenshot", f"{ratio:.2f}", "-", None)
    line("median ms: CDP listener walk (oracle)", f"{s.listener_walk_ms_median:.1f}", "-", None)


# --------------------------------------------------------------------------- main


async def run_bench(args: argparse.Namespace) -> tuple[list[PageResult], str]:
    pages = args.pages or [*real_pages(), *control_pages()]
    sites = [] if args.no_sites else list_sites(BUNDLED_SITES)
    results: list[PageResult] = []
    with SiteServer(PAGES) as fixtures, SiteServer(BUNDLED_SITES) as bundled:
        host = BrowserHost(BrowserConfig(), allow=[fixtures.origin, bundled.origin])
        await host.start()
        try:
            jobs = [(p, page_url(fixtures.base_url, p), False) for p in pages]
            jobs += [(f"site:{s}", bundled.resolve(f"site://{s}/"), True) for s in sites]
            for repeat in range(args.repeats):
                for name, url, discover in jobs:
                    result = await run_page(
                        host, name, url, repeat, discover=discover, measure=repeat == 0
                    )
                    results.append(result)
                    print(
                        f"{name} #{repeat}: {result.correct}/{result.rows} rows correct, "
                        f"recall {result.recall}",
                        file=sys.stderr,
                    )
        finally:
            version = host.version
            await host.close()
    return results, version


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=1, help="observations per page (default 1)")
    p.add_argument("--pages", nargs="*", default=None, help="fixture page file names (default all)")
    p.add_argument("--no-sites", action="store_true", help="leave the bundled sites out")
    p.add_argument("--quiet", action="store_true", help="no per-page misses and wrong rows")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write results here")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    known = [*real_pages(), *control_pages()]
    unknown = sorted(set(args.pages or []) - set(known))
    if unknown:
        p.error(f"unknown pages {unknown}; pages are: {', '.join(known)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results, version = asyncio.run(run_bench(args))
    summary = Summary.of(results)
    print_report(results, summary, verbose=not args.quiet)
    if args.json:
        report: dict[str, Any] = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(["python", "-m", "bench.grounding", *(argv or sys.argv[1:])]),
            "browser": version,
            "summary": asdict(summary),
            "pages": [asdict(r) for r in results],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
