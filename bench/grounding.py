"""Grounding quality on pages written the way real web apps are, judged by an independent oracle.

For each page of `tests/fixtures/pages/real/` and `controls/` (late rendering, relayout,
animation, shadow DOM, custom controls, listener-only clickables, SVG, iframes, wrapped links,
unlabeled fields, …) and each bundled site: one observation as the pipeline takes it (goto,
observe, rows kept by `check_grounding`), judged at once on the live page by `oracle` (its own
Playwright code and real clicks). Fixture pages carry their ground truth (`data-gt`); on the
bundled sites the oracle discovers targets by role queries and CDP listeners. Figures
(precision, recall by kind and case, duplicates, disagreement, early observations, cost):
docs/benchmarks.md, "Grounding on pages nobody here wrote".

    .venv/bin/python -m bench.grounding [--repeats N] [--pages NAME ...] [--no-sites] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import oracle
from bench.harness import PAGES, Row, parser, print_table, write_json
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


# --------------------------------------------------------------------------- figures


@dataclass
class Tally:
    """The oracle's figures of some judged observations: one (`of`), or a sum (`+`, `sum`)."""

    observations: int = 0
    rows: int = 0
    correct: int = 0
    wrong: int = 0
    unjudged: int = 0
    recall: dict[str, list[int]] = field(default_factory=dict)  # kind → [found, counted]
    cases: dict[str, list[int]] = field(default_factory=dict)  # data-gt-case → [found, counted]
    duplicate_rows: int = 0
    duplicate_observations: int = 0
    disagreeing_rows: int = 0
    disagreeing_observations: int = 0
    misnamed_rows: int = 0
    loose_rows: int = 0
    outside_rows: int = 0  # rows quoting text from outside their target's row
    unshown_rows: int = 0  # rows quoting text the page does not show (oracle.shown_text)
    changed_while_judged: int = 0

    @classmethod
    def of(cls, v: oracle.PageVerdict) -> Tally:
        return cls(
            observations=1, rows=len(v.rows), correct=v.correct, wrong=len(v.wrong),
            unjudged=sum(r.status == "unjudged" for r in v.rows),
            recall={k: [h, n] for k, (h, n) in v.recall().items()},
            cases={k: [h, n] for k, (h, n) in v.recall_by_case().items()},
            duplicate_rows=v.duplicate_rows, duplicate_observations=int(v.duplicate_rows > 0),
            disagreeing_rows=len(v.disagreeing), disagreeing_observations=int(bool(v.disagreeing)),
            misnamed_rows=len(v.misnamed), loose_rows=len(v.loose), outside_rows=len(v.outside),
            unshown_rows=len(v.unshown), changed_while_judged=int(v.page_changed),
        )  # fmt: skip

    def __add__(self, other: Tally) -> Tally:
        ints = {k: v + getattr(other, k) for k, v in vars(self).items() if isinstance(v, int)}
        total = replace(self, recall={}, cases={}, **ints)
        for name in ("recall", "cases"):
            mine, theirs, into = getattr(self, name), getattr(other, name), getattr(total, name)
            for k in {**mine, **theirs}:
                pairs = zip(mine.get(k, [0, 0]), theirs.get(k, [0, 0]), strict=True)
                into[k] = [a + b for a, b in pairs]
        return total

    @property
    def precision(self) -> float:
        judged = self.correct + self.wrong
        return round(self.correct / judged, 4) if judged else 1.0

    def ratios(self, which: str = "recall") -> dict[str, list[float]]:
        """kind (or case) → [found, counted, ratio], kinds in oracle.KINDS' order."""
        got: dict[str, list[int]] = getattr(self, which)
        order = oracle.KINDS if which == "recall" else sorted(got)
        return {
            k: [*got[k], round(got[k][0] / got[k][1], 4)] for k in order if got.get(k, [0, 0])[1]
        }

    def met(self) -> dict[str, bool]:
        met = {"precision": self.precision >= PRECISION_TARGET}
        met |= {f"recall {k}": v[2] >= RECALL_TARGETS[k] for k, v in self.ratios().items()}
        return met | {
            "duplicates": self.duplicate_rows == 0,
            "disagreement": self.disagreeing_rows == 0,
        }


def recall_rows(s: dict[str, Any]) -> list[Row]:
    """Precision and recall by kind against their targets, from a summary (`asdict` of a
    Tally with `precision` and `recall` as `ratios()`)."""
    p = s["precision"]
    rows: list[Row] = [("precision (all rows)", f"{p:.4f} ({s['wrong']} wrong)", f"≥ {PRECISION_TARGET}", p >= PRECISION_TARGET)]  # fmt: skip
    for kind, (found, counted, ratio) in s["recall"].items():
        goal = RECALL_TARGETS[kind]
        rows.append((f"recall {kind}", f"{ratio:.3f} ({found:.0f}/{counted:.0f})", f"≥ {goal:.2f}", ratio >= goal))  # fmt: skip
    return rows


def recall_cells(recall: dict[str, list[int]]) -> str:
    return " ".join(
        f"{recall[k][0]:>4.0f}/{recall[k][1]:<4.0f}" if k in recall else f"{'-':>9}"
        for k in oracle.KINDS
    )


# --------------------------------------------------------------------------- one page


@dataclass
class PageResult:
    """One observation of one page, judged."""

    page: str
    repeat: int
    tally: Tally
    coordinate_descriptions: int  # target-less clicks at a row's point described by coordinates
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
            tally=Tally.of(verdict),
            coordinate_descriptions=coordinate_descriptions(obs, rows),
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


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else float("nan")


def summarise(results: list[PageResult]) -> dict[str, Any]:
    """All observations together, against the issue's targets (what `python -m bench` reads)."""
    t = sum((r.tally for r in results), Tally())
    early = sum(r.early for r in results)
    met = t.met() | {"settled": early == 0, "names": t.misnamed_rows == 0}
    met |= {"own row": t.outside_rows == 0, "shown": t.unshown_rows == 0, "one line": t.loose_rows == 0}  # fmt: skip
    met["no coordinates"] = not any(r.coordinate_descriptions for r in results)
    return asdict(t) | {
        "precision": t.precision, "recall": t.ratios(), "cases": t.ratios("cases"),
        "coordinate_descriptions": sum(r.coordinate_descriptions for r in results),
        "duplicate_rate": round(t.duplicate_rows / t.rows, 4) if t.rows else 0.0,
        "early_observations": early,
        "early_unmarked": sum(r.early and r.stable and not r.settle_timed_out for r in results),
        "settle_timeouts": sum(r.settle_timed_out for r in results),
        "first_observe_ms_median": median([r.observe_ms for r in results]),
        "observe_ms_median": median([v for r in results for v in r.observe_wall_ms]),
        "screenshot_ms_median": median([v for r in results for v in r.screenshot_ms]),
        "listener_walk_ms_median": median([r.listener_walk_ms for r in results if r.listener_walk_ms is not None]),
        "met": met,
    }  # fmt: skip


def print_report(results: list[PageResult], s: dict[str, Any], verbose: bool) -> None:
    head = f"{'page':<28} {'rows':>4} {'ok':>4} {'bad':>4} {'prec':>6} "
    print(head + " ".join(f"{k[:8]:>9}" for k in oracle.KINDS) + "  dups disagr early  obs ms")
    for r in results:
        t = r.tally
        prec = f"{t.precision:.3f}" if t.correct + t.wrong else "-"
        flag = " (changed while judged)" if t.changed_while_judged else ""
        print(
            f"{r.page:<28} {t.rows:>4} {t.correct:>4} {t.wrong:>4} {prec:>6} {recall_cells(t.recall)} "
            f"{t.duplicate_rows:>5} {t.disagreeing_rows:>6} {len(r.settled_changes):>5} {r.observe_ms:>7.0f}{flag}"
        )  # fmt: skip
        flawed = t.wrong or t.disagreeing_rows or t.duplicate_rows or t.misnamed_rows
        if verbose and (flawed or t.loose_rows or t.outside_rows or t.unshown_rows or "miss " in r.report):  # fmt: skip
            print("    " + r.report.replace("\n", "\n    "))
        if verbose and r.early:
            more = len(r.settled_changes) - 4
            print(f"    after the observation: {'; '.join(r.settled_changes[:4])}" + (f" (+{more} more)" if more > 0 else ""))  # fmt: skip
        for gap in r.annotation_gaps:
            print(f"    WARNING annotation gap on {r.page}: {gap}")
    print_table(table(s))


def table(s: dict[str, Any]) -> list[Row]:
    """The figures of a summary (`summarise`) against their targets."""
    met, n = s["met"], s["observations"]
    ratio = s["observe_ms_median"] / s["screenshot_ms_median"] if s["screenshot_ms_median"] else 0.0
    rows = recall_rows(s)
    rows += [(f"recall, case {c}", f"{r:.3f} ({f:.0f}/{n_:.0f})", "-", None) for c, (f, n_, r) in s["cases"].items()]  # fmt: skip
    rows += [
        ("rows sharing an expression", f"{s['duplicate_rate']:.4f} ({s['duplicate_observations']} obs)", "0", met["duplicates"]),
        ("rows naming the wrong thing (data-gt-name)", f"{s['misnamed_rows']}", "0", met["names"]),
        ("rows quoting text from outside their row", f"{s['outside_rows']}", "0", met["own row"]),
        ("rows quoting text the page does not show", f"{s['unshown_rows']}", "0", met["shown"]),
        ("clicks at a row's point described by coordinates", f"{s['coordinate_descriptions']}", "0", met["no coordinates"]),
        ("wrapped-link rows boxing several lines", f"{s['loose_rows']}", "0", met["one line"]),
        ("observations whose boxes disagree with image", f"{s['disagreeing_observations']}/{n}", "0", met["disagreement"]),
        ("observations before the page settled", f"{s['early_observations']}/{n}", "0", met["settled"]),
        ("  of them not marked (stable, no settle timeout)", f"{s['early_unmarked']}", "0", s["early_unmarked"] == 0),
        ("observations whose settle gave up (marked)", f"{s['settle_timeouts']}", "-", None),
        ("observations the page changed while judged", f"{s['changed_while_judged']}", "-", None),
        ("median ms: first observe() after goto", f"{s['first_observe_ms_median']:.1f}", "-", None),
        ("median ms: Session.observe(), page settled", f"{s['observe_ms_median']:.1f}", "-", None),
        ("median ms: bare page.screenshot(jpeg)", f"{s['screenshot_ms_median']:.1f}", "-", None),
        ("observe ÷ bare screenshot", f"{ratio:.2f}", "-", None),
        ("median ms: CDP listener walk (oracle)", f"{s['listener_walk_ms_median']:.1f}", "-", None),
    ]  # fmt: skip
    return rows


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
                    t = result.tally
                    print(f"{name} #{repeat}: {t.correct}/{t.rows} rows correct, recall {t.recall}", file=sys.stderr)  # fmt: skip
        finally:
            version = host.version
            await host.close()
    return results, version


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--repeats", type=int, default=1, help="observations per page (default 1)")
    p.add_argument("--pages", nargs="*", default=None, help="fixture page file names (default all)")
    p.add_argument("--no-sites", action="store_true", help="leave the bundled sites out")
    p.add_argument("--quiet", action="store_true", help="no per-page misses and wrong rows")
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
    summary = summarise(results)
    print_report(results, summary, verbose=not args.quiet)
    report = {"browser": version, "summary": summary, "pages": [asdict(r) for r in results]}
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
