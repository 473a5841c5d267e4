"""Grounding quality over whole explore episodes, as the pipeline records them, judged by the
independent oracle at every observation.

`bench.grounding` judges one observation per page, right after load. Here each fixture page of
`tests/fixtures/pages/real/` and `tests/fixtures/pages/controls/` that carries ground truth
(`data-gt`), plus `offsite.html` and
`errorlinks.html` (no annotation: judged with the oracle's `discover=True`), is the start of
`datagen.pipeline.run_episode` with the explore policy, as a shard would run it. The bench
instruments only itself: its `BrowserHost` hands out sessions whose `observe()` is wrapped, so
that right after each observation (before the pipeline's success check, decision and action)
`oracle.judge` runs on the live page with the rows the pipeline would accept for it
(`bench.grounding.accepted_rows`). Each verdict is keyed by the screenshot bytes' sha256 and
joined afterwards to the episode's recorded steps (`EpisodeOutcome.steps`), so only
observations that became steps count; those the pipeline dropped (off scope, error or blank
page) and the final observation are counted apart.

    precision         rows whose point reaches a target and whose box lies inside it
    recall by kind    targets (visible, static, in the viewport, reachable) with a correct row
    duplicates        rows of one screenshot that share a referring expression
    disagreement      steps with a row whose box is not where its target is painted in the
                      screenshot (or the row of a moving element)
    bad pages         steps recorded on chrome-error://, about:, data: or a document answered
                      with HTTP ≥ 400 (from the bench's own response listener)
    in scope          steps whose URL is on the start URL's host (run.scope "site" for an IP)
    dropped           the pipeline's `step` rejects, by reason
    observe ms        median `observe_ms` of the recorded steps (judging is not in it)
    own row           rows quoting text from outside their target's control row (data-gt-row)
    coordinates       steps whose description places the target by coordinates, and of them
                      those whose target has a grounding row (should be none)

The oracle's probe clicks move the mouse; after judging, the bench puts the pointer back where
the pipeline left it (with the oracle's event swallowing on), so the page's :hover state and
mouse listeners are as they would be without the bench.

    .venv/bin/python -m bench.episodes [--seeds N] [--steps N] [--pages NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Page, Response

import oracle
from bench.grounding import (
    COORDINATES,
    PAGES,
    PRECISION_TARGET,
    RECALL_TARGETS,
    accepted_rows,
    control_pages,
    page_url,
    real_pages,
)
from datagen.browser.host import BrowserHost
from datagen.browser.session import Session
from datagen.config import BrowserConfig, PipelineConfig, parse_pipeline
from datagen.pipeline import EpisodeOutcome, ShardContext, run_episode
from datagen.records import GroundingRow, Observation, TaskSpec
from datagen.sink.storage import LocalStorage
from datagen.source.serve import SiteServer

UNANNOTATED = ("offsite.html", "errorlinks.html")  # judged with discover=True
SCOPE_TARGET = 0.95  # share of recorded steps in scope, offsite.html
BAD_SCHEMES = ("chrome-error:", "about:", "data:")
STEP_TIMEOUT_S = 180.0  # the oracle judges inside observe(), which the pipeline bounds


def digest(image: bytes) -> str:
    return hashlib.sha256(image).hexdigest()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _unhashed(url: str) -> str:
    return urlsplit(url)._replace(fragment="").geturl()


def bad_page(url: str, status: int | None) -> str:
    """ "error" | "blank" | "" for a page that is data."""
    if url.startswith("chrome-error:") or (status is not None and status >= 400):
        return "error"
    if url.startswith(BAD_SCHEMES):
        return "blank"
    return ""


# --------------------------------------------------------------------------- instrumentation


@dataclass
class Observed:
    """One `Session.observe()` of an episode, judged on the live page right after it."""

    order: int
    digest: str
    url: str
    status: int | None  # HTTP status of the page's main document, as the bench saw it
    observe_ms: float
    rows: list[GroundingRow]
    verdict: oracle.PageVerdict | None  # None: not judged (not an http(s) page, or it failed)
    error: str = ""
    moved_on: bool = False  # the page's URL changed between observing and judging


class JudgingHost(BrowserHost):
    """A BrowserHost whose sessions judge every observation before handing it back."""

    def __init__(self, config: BrowserConfig, allow: list[str] | None = None) -> None:
        super().__init__(config, allow)
        self.observed: list[Observed] = []  # of the current episode; the bench resets it
        self.discover = False
        self._judging = False

    @asynccontextmanager
    async def session(self, record: Path | None = None) -> AsyncIterator[Session]:
        async with super().session(record) as session:
            self._instrument(session)
            yield session

    def _instrument(self, session: Session) -> None:
        page = session.page
        document: dict[str, Any] = {"url": "", "status": None}
        pointer = [0.0, 0.0]  # where the pipeline last put the mouse (CSS px)

        def on_response(response: Response) -> None:
            try:
                if response.request.is_navigation_request() and response.frame == page.main_frame:
                    document["url"], document["status"] = response.url, response.status
            except Exception:
                return

        page.on("response", on_response)

        def track(original: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
            async def moved(x: float, y: float, *args: Any, **kwargs: Any) -> None:
                if not self._judging:
                    pointer[:] = [x, y]
                await original(x, y, *args, **kwargs)

            return moved

        for name in ("move", "click", "dblclick"):
            setattr(page.mouse, name, track(getattr(page.mouse, name)))

        observe = session.observe

        async def observe_and_judge() -> Observation:
            obs = await observe()
            # the status of the document answered for this URL; None: not known (a page
            # restored from the back/forward cache, a same-document change of URL)
            status = (
                document["status"] if _unhashed(document["url"]) == _unhashed(obs.url) else None
            )
            await self._judge(page, obs, status, (pointer[0], pointer[1]))
            return obs

        setattr(session, "observe", observe_and_judge)  # noqa: B010 (a method, on one object)

    async def _judge(
        self, page: Page, obs: Observation, status: int | None, pointer: oracle.Point
    ) -> None:
        rows = accepted_rows(obs, self.version)
        entry = Observed(
            order=len(self.observed),
            digest=digest(obs.screenshot),
            url=obs.url,
            status=status,
            observe_ms=round(obs.observe_ms, 1),
            rows=rows,
            verdict=None,
        )
        self.observed.append(entry)
        if not obs.url.startswith(("http:", "https:")):
            return
        entry.moved_on = page.url != obs.url
        self._judging = True
        try:
            entry.verdict = await oracle.judge(
                page, rows, obs.screenshot, obs.device_scale_factor, discover=self.discover
            )
        except Exception as exc:
            entry.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        finally:
            with suppress(Exception):
                await oracle.put_pointer_back(page, pointer)
            self._judging = False


# --------------------------------------------------------------------------- one episode


@dataclass
class StepResult:
    """One recorded step, judged."""

    page: str
    seed: int
    step: int
    url: str
    after: str  # the previous step's action, and its target
    rows: int
    recorded_rows: int  # grounding rows the pipeline recorded for this step
    rows_differ: bool  # recorded rows ≠ judged rows (expression and box)
    judged: bool
    correct: int = 0
    wrong: int = 0
    unjudged: int = 0
    recall: dict[str, list[int]] = field(default_factory=dict)  # kind → [found, counted]
    duplicate_rows: int = 0
    disagreeing_rows: int = 0
    misnamed_rows: int = 0
    outside_rows: int = 0  # rows quoting text from outside their target's control row
    unshown_rows: int = 0  # rows quoting text the page does not show (oracle.shown_text)
    coordinates: bool = False  # the step's description places its target by coordinates
    coordinates_with_row: bool = False  # … though its target has a grounding row
    loose_rows: int = 0
    page_changed: bool = False
    moved_on: bool = False
    bad_page: str = ""
    in_scope: bool = True
    observe_ms: float = 0.0
    judge_ms: float = 0.0
    error: str = ""
    report: str = ""

    @property
    def flawed(self) -> bool:
        return bool(
            self.wrong
            or self.disagreeing_rows
            or self.duplicate_rows
            or self.misnamed_rows
            or self.outside_rows
            or self.unshown_rows
            or self.coordinates_with_row
            or self.loose_rows
            or any(h < n for h, n in self.recall.values())
            or self.error
            or self.rows_differ
        )


@dataclass
class EpisodeResult:
    """One episode of one page: its judged steps and what the pipeline dropped."""

    page: str
    seed: int
    status: str  # the episode's status, or the reject reason of a failed episode
    steps: list[StepResult]
    observations: int
    dropped: dict[str, int]  # `step` rejects by reason
    grounding_rejects: dict[str, int]  # rows the pipeline did not keep, by reason
    not_steps: list[str]  # observations that did not become steps: "why url"
    seconds: float


def join(
    page: str, seed: int, start: str, outcome: EpisodeOutcome, observed: list[Observed]
) -> EpisodeResult:
    """Verdicts of the observations that became steps, matched by screenshot hash in order."""
    host = urlsplit(start).hostname
    recorded: dict[int, list[GroundingRow]] = {}
    for g in outcome.grounding:
        recorded.setdefault(g.step_index, []).append(g)
    used: set[int] = set()
    cursor = 0
    steps: list[StepResult] = []
    for s in outcome.steps:
        key = digest(s.screenshot.bytes)
        match = next((o for o in observed[cursor:] if o.digest == key), None)
        previous = outcome.steps[s.step_index - 1] if s.step_index else None
        after = "load" if previous is None else previous.action_repr
        if previous is not None and previous.target_name:
            after += f" on {previous.target_role or ''} {previous.target_name!r}"
        if previous is not None and previous.action_error:
            after += f" ({previous.action_error[:120]})"
        mine = recorded.get(s.step_index, [])
        result = StepResult(
            page=page,
            seed=seed,
            step=s.step_index,
            url=s.url,
            after=after,
            rows=0,
            recorded_rows=len(mine),
            rows_differ=False,
            judged=False,
            in_scope=urlsplit(s.url).hostname == host,
            observe_ms=s.observe_ms,
        )
        result.coordinates = bool(COORDINATES.search(s.action_description))
        result.coordinates_with_row = result.coordinates and any(
            g.selector == s.target_selector for g in mine
        )
        if match is None:
            result.error = "no observation with this screenshot"
            result.bad_page = bad_page(s.url, None)
            steps.append(result)
            continue
        cursor = match.order + 1
        used.add(match.order)
        result.rows = len(match.rows)
        result.rows_differ = _row_keys(match.rows) != _row_keys(mine)
        result.bad_page = bad_page(s.url, match.status)
        result.moved_on, result.error = match.moved_on, match.error
        v = match.verdict
        if v is not None:
            result.judged = True
            result.correct, result.wrong = v.correct, len(v.wrong)
            result.unjudged = sum(r.status == "unjudged" for r in v.rows)
            result.recall = {k: [h, n] for k, (h, n) in v.recall().items()}
            result.duplicate_rows = v.duplicate_rows
            result.disagreeing_rows = len(v.disagreeing)
            result.misnamed_rows, result.loose_rows = len(v.misnamed), len(v.loose)
            result.outside_rows = len(v.outside)
            result.unshown_rows = len(v.unshown)
            result.page_changed, result.judge_ms = v.page_changed, v.judge_ms
            result.report = v.report()
        steps.append(result)
    final = outcome.episode.final_screenshot.bytes if outcome.episode else None
    final_key = digest(final) if final is not None else None
    not_steps = []
    for o in observed:
        if o.order in used:
            continue
        why = "final" if o.digest == final_key and o.order > max(used, default=-1) else "dropped"
        trouble = bad_page(o.url, o.status)
        not_steps.append(f"{why}{' ' + trouble if trouble else ''} {o.url[:120]}")
    failed = next((r for r in outcome.rejects if r.stage in ("task", "episode")), None)
    status = outcome.episode.status if outcome.episode else (failed.reason if failed else "?")
    return EpisodeResult(
        page=page,
        seed=seed,
        status=status,
        steps=steps,
        observations=len(observed),
        dropped=dict(Counter(r.reason for r in outcome.rejects if r.stage == "step")),
        grounding_rejects=dict(
            Counter(r.reason for r in outcome.rejects if r.stage == "grounding")
        ),
        not_steps=not_steps,
        seconds=0.0,
    )


def _row_keys(rows: list[GroundingRow]) -> list[tuple[str, tuple[float, ...]]]:
    return sorted((r.referring_expression, tuple(round(v, 1) for v in r.bbox_px)) for r in rows)


# --------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class Figures:
    """Recorded steps of some episodes together (one page, or all)."""

    episodes: int
    steps: int
    judged: int
    rows: int
    correct: int
    wrong: int
    precision: float
    recall: dict[str, list[float]]  # kind → [found, counted, ratio]
    duplicate_rows: int
    duplicate_steps: int
    disagreeing_steps: int
    misnamed_rows: int
    loose_rows: int
    error_steps: int
    blank_steps: int
    in_scope: float
    dropped: dict[str, int]
    not_steps: int  # observations that did not become steps (final ones included)
    outside_rows: int
    unshown_rows: int
    coordinate_steps: int  # steps described by coordinates
    coordinate_steps_with_row: int  # … whose target has a grounding row
    rows_differ: int  # steps whose recorded rows are not the rows judged
    changed_while_judged: int
    judge_errors: int
    observe_ms_median: float
    judge_ms_median: float

    @classmethod
    def of(cls, episodes: list[EpisodeResult]) -> Figures:
        steps = [s for e in episodes for s in e.steps]
        judged = [s for s in steps if s.judged]
        correct, wrong = sum(s.correct for s in judged), sum(s.wrong for s in judged)
        recall: dict[str, list[float]] = {}
        for kind in oracle.KINDS:
            found = sum(s.recall.get(kind, [0, 0])[0] for s in judged)
            counted = sum(s.recall.get(kind, [0, 0])[1] for s in judged)
            if counted:
                recall[kind] = [found, counted, round(found / counted, 4)]
        dropped: Counter[str] = Counter()
        for e in episodes:
            dropped.update(e.dropped)
        observe = [s.observe_ms for s in steps]
        judge = [s.judge_ms for s in judged]
        return cls(
            episodes=len(episodes),
            steps=len(steps),
            judged=len(judged),
            rows=sum(s.rows for s in judged),
            correct=correct,
            wrong=wrong,
            precision=round(correct / (correct + wrong), 4) if correct + wrong else 1.0,
            recall=recall,
            duplicate_rows=sum(s.duplicate_rows for s in judged),
            duplicate_steps=sum(s.duplicate_rows > 0 for s in judged),
            disagreeing_steps=sum(s.disagreeing_rows > 0 for s in judged),
            misnamed_rows=sum(s.misnamed_rows for s in judged),
            loose_rows=sum(s.loose_rows for s in judged),
            outside_rows=sum(s.outside_rows for s in judged),
            unshown_rows=sum(s.unshown_rows for s in judged),
            coordinate_steps=sum(s.coordinates for s in steps),
            coordinate_steps_with_row=sum(s.coordinates_with_row for s in steps),
            error_steps=sum(s.bad_page == "error" for s in steps),
            blank_steps=sum(s.bad_page == "blank" for s in steps),
            in_scope=round(sum(s.in_scope for s in steps) / len(steps), 4) if steps else 1.0,
            dropped=dict(sorted(dropped.items())),
            not_steps=sum(len(e.not_steps) for e in episodes),
            rows_differ=sum(s.rows_differ for s in steps),
            changed_while_judged=sum(s.page_changed for s in judged),
            judge_errors=sum(bool(s.error) for s in steps),
            observe_ms_median=round(statistics.median(observe), 1) if observe else float("nan"),
            judge_ms_median=round(statistics.median(judge), 1) if judge else float("nan"),
        )

    def met(self, offsite: Figures | None) -> dict[str, bool]:
        met = {"precision": self.precision >= PRECISION_TARGET}
        met |= {f"recall {k}": v[2] >= RECALL_TARGETS[k] for k, v in self.recall.items()}
        met |= {"duplicates": self.duplicate_rows == 0, "disagreement": self.disagreeing_steps == 0}
        met |= {"bad pages": self.error_steps + self.blank_steps == 0}
        if offsite is not None:
            met["in scope"] = offsite.in_scope >= SCOPE_TARGET
        return met


def print_report(episodes: list[EpisodeResult], verbose: bool) -> dict[str, Any]:
    kinds = oracle.KINDS
    names = sorted({e.page for e in episodes}, key=[e.page for e in episodes].index)
    per_page = {n: Figures.of([e for e in episodes if e.page == n]) for n in names}
    overall = Figures.of(episodes)
    offsite = per_page.get("offsite.html")
    met = overall.met(offsite)

    if verbose:
        for e in episodes:
            for s in e.steps:
                if not s.flawed:
                    continue
                print(f"\n{s.page} seed {s.seed} step {s.step} (after {s.after}):")
                if s.error:
                    print(f"    judging: {s.error}")
                if s.rows_differ:
                    print(f"    recorded {s.recorded_rows} rows, judged {s.rows} (they differ)")
                if s.moved_on:
                    print("    the page's URL changed between observing and judging")
                if s.report:
                    print("    " + s.report.replace("\n", "\n    "))
            strays = [n for n in e.not_steps if not n.startswith("final ")]
            if strays:
                print(f"\n{e.page} seed {e.seed}: observed, not steps: {'; '.join(strays)}")
        print()

    head = f"{'page':<25} {'eps':>3} {'steps':>5} {'rows':>5} {'bad':>3} {'prec':>6} " + " ".join(
        f"{k[:8]:>9}" for k in kinds
    )
    print(head + f" {'dups':>4} {'disagr':>6} {'err/blk':>7} {'scope':>5} {'obs ms':>6}  dropped")
    for name, f in per_page.items():
        prec = f"{f.precision:.3f}" if f.correct + f.wrong else "-"
        cells = " ".join(
            f"{f.recall[k][0]:>4.0f}/{f.recall[k][1]:<4.0f}" if k in f.recall else f"{'-':>9}"
            for k in kinds
        )
        dropped = " ".join(f"{r}:{n}" for r, n in f.dropped.items()) or "-"
        print(
            f"{name:<25} {f.episodes:>3} {f.steps:>5} {f.rows:>5} {f.wrong:>3} {prec:>6} {cells} "
            f"{f.duplicate_rows:>4} {f.disagreeing_steps:>6} "
            f"{f.error_steps:>3}/{f.blank_steps:<3} {f.in_scope:>5.2f} {f.observe_ms_median:>6.0f}"
            f"  {dropped}"
        )
    statuses = Counter(e.status for e in episodes)
    print(f"\nepisodes: {dict(statuses)}")

    o = overall
    print()
    print(f"{'figure':<48} {'measured':<26} {'target':<8} met")

    def line(what: str, measured: str, target: str, ok: bool | None) -> None:
        mark = "" if ok is None else ("yes" if ok else "NO")
        print(f"{what:<48} {measured:<26} {target:<8} {mark}")

    line("recorded steps (judged)", f"{o.steps} ({o.judged}) in {o.episodes} episodes", "-", None)
    line("precision (all rows of recorded steps)", f"{o.precision:.4f} ({o.wrong} wrong)",
         "≥ 0.995", met["precision"])  # fmt: skip
    for kind, (found, counted, ratio) in o.recall.items():
        target = RECALL_TARGETS[kind]
        line(f"recall {kind}", f"{ratio:.3f} ({found:.0f}/{counted:.0f})", f"≥ {target:.2f}",
             met[f"recall {kind}"])  # fmt: skip
    line("rows sharing an expression", f"{o.duplicate_rows} ({o.duplicate_steps} steps)", "0",
         met["duplicates"])  # fmt: skip
    line("steps whose boxes disagree with the image", f"{o.disagreeing_steps}/{o.judged}", "0",
         met["disagreement"])  # fmt: skip
    line("steps on chrome-error:, about:blank, error pages",
         f"{o.error_steps} error, {o.blank_steps} blank", "0", met["bad pages"])  # fmt: skip
    if offsite is not None:
        line("steps in scope, offsite.html", f"{offsite.in_scope:.3f} ({offsite.steps} steps)",
             f"≥ {SCOPE_TARGET}", met["in scope"])  # fmt: skip
    line("steps in scope, all pages", f"{o.in_scope:.3f}", "-", None)
    line("steps dropped, by reason", " ".join(f"{r}:{n}" for r, n in o.dropped.items()) or "0",
         "-", None)  # fmt: skip
    line("observations that became no step (incl. final)", f"{o.not_steps}", "-", None)
    line("rows naming the wrong thing (data-gt-name)", f"{o.misnamed_rows}", "-", None)
    line("rows quoting text from outside their row", f"{o.outside_rows}", "0", o.outside_rows == 0)
    line("rows quoting text the page does not show", f"{o.unshown_rows}", "0", o.unshown_rows == 0)
    line("steps described by coordinates (target with a row)",
         f"{o.coordinate_steps} ({o.coordinate_steps_with_row})", "(0)",
         o.coordinate_steps_with_row == 0)  # fmt: skip
    line("wrapped-link rows boxing several lines", f"{o.loose_rows}", "-", None)
    line("steps whose recorded rows ≠ rows judged", f"{o.rows_differ}", "0", o.rows_differ == 0)
    line("steps the page changed while judged", f"{o.changed_while_judged}", "-", None)
    line("steps the oracle could not judge", f"{o.judge_errors}", "-", None)
    line("median ms: observe() of recorded steps", f"{o.observe_ms_median:.1f}", "-", None)
    line("median ms: oracle judge() per step", f"{o.judge_ms_median:.1f}", "-", None)
    return {
        "overall": asdict(overall),
        "met": met,
        "pages": {n: asdict(f) for n, f in per_page.items()},
    }


# --------------------------------------------------------------------------- main


def pipeline_config(out: Path, origin: str, steps: int) -> PipelineConfig:
    """A pipeline as `datagen run` would read it: explore policy, the fixtures' origin allowed."""
    return parse_pipeline(
        {
            "name": "bench-episodes",
            "sources": [{"type": "sites"}],
            "output": {"uri": str(out / "out")},
            "cluster": {"workers": 1, "sessions_per_worker": 1, "dashboard": "127.0.0.1:0"},
            "policy": {"type": "explore"},
            "browser": {"allow": [origin]},
            "run": {
                "max_steps": steps,
                "seed": 0,
                "step_timeout_s": STEP_TIMEOUT_S,
                "episode_timeout_s": STEP_TIMEOUT_S * (steps + 2),
            },
            "base_dir": str(out),
        }
    )


async def run_bench(args: argparse.Namespace) -> tuple[list[EpisodeResult], str]:
    pages = args.pages or [*real_pages(), *control_pages(), *UNANNOTATED]
    episodes: list[EpisodeResult] = []
    with tempfile.TemporaryDirectory() as tmp, SiteServer(PAGES) as fixtures:
        config = pipeline_config(Path(tmp), fixtures.origin, args.steps)
        host = JudgingHost(config.browser)
        await host.start()
        ctx = ShardContext(
            config=config, run_id="bench", host=host, storage=LocalStorage(Path(tmp) / "out")
        )
        try:
            for name in pages:
                url = page_url(fixtures.base_url, name)
                if name == "errorlinks.html":
                    url += f"?closed={closed_port()}"
                task = TaskSpec(
                    id=name.removesuffix(".html").replace("/", "-"),
                    start_url=url,
                    instruction="Explore.",
                )
                for seed in range(args.seeds):
                    host.observed, host.discover = [], name in UNANNOTATED
                    started = time.perf_counter()
                    outcome = await run_episode(task, seed, ctx)
                    result = join(name, seed, url, outcome, host.observed)
                    result.seconds = round(time.perf_counter() - started, 1)
                    episodes.append(result)
                    f = Figures.of([result])
                    print(
                        f"{name} seed {seed}: {result.status}, {f.steps} steps, "
                        f"{f.correct}/{f.rows} rows correct, recall "
                        + " ".join(f"{k} {v[0]:.0f}/{v[1]:.0f}" for k, v in f.recall.items())
                        + f", dropped {result.dropped or 0} ({result.seconds:.0f} s)",
                        file=sys.stderr,
                    )
        finally:
            version = host.version
            await host.close()
    return episodes, version


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=2, help="episodes per page (default 2)")
    p.add_argument("--steps", type=int, default=10, help="run.max_steps (default 10)")
    p.add_argument("--pages", nargs="*", default=None, help="fixture page file names (default all)")
    p.add_argument("--quiet", action="store_true", help="no per-step misses and wrong rows")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write results here")
    args = p.parse_args(argv)
    if args.seeds < 1 or args.steps < 1:
        p.error("--seeds and --steps must be at least 1")
    known = [*real_pages(), *control_pages(), *UNANNOTATED]
    unknown = sorted(set(args.pages or []) - set(known))
    if unknown:
        p.error(f"unknown pages {unknown}; pages are: {', '.join(known)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    episodes, version = asyncio.run(run_bench(args))
    summary = print_report(episodes, verbose=not args.quiet)
    if args.json:
        report: dict[str, Any] = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(["python", "-m", "bench.episodes", *(argv or sys.argv[1:])]),
            "browser": version,
            "seeds": args.seeds,
            "max_steps": args.steps,
            "summary": summary,
            "episodes": [asdict(e) for e in episodes],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
