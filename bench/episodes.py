"""Grounding quality over whole explore episodes, as the pipeline records them, judged by the
independent oracle at every observation.

Each fixture page with ground truth (`tests/fixtures/pages/real/`, `controls/`), plus
`offsite.html` and `errorlinks.html` (judged with `discover=True`), starts
`datagen.pipeline.run_episode` (explore policy) as a shard would run it. The bench instruments
only itself: its `BrowserHost` wraps `observe()` so that `oracle.judge` runs on the live page
right after each observation with the rows the pipeline would keep
(`bench.grounding.accepted_rows`), then puts the mouse back where the pipeline left it. Verdicts
are keyed by the screenshot's sha256 and joined to the recorded steps, so only observations
that became steps count. Figures (precision, recall by kind, duplicates, disagreement, bad
pages, scope, drops, coordinates): docs/benchmarks.md, "Grounding on pages nobody here wrote".

    .venv/bin/python -m bench.episodes [--seeds N] [--steps N] [--pages NAME ...] [--json OUT]

`--add-one`: the demo's add-one tasks (ADD_ONE) as explore episodes with `pipelines/demo.yaml`'s
settings, `--seeds` each (default 20), not judged: solved is the task's own check on the live
page; also counted: typed values never completed (the issue-34 regression) and steps whose
description places an element target by coordinates.

    .venv/bin/python -m bench.episodes --add-one [--seeds 20] [--tasks ID ...]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Page, Response

import oracle
from bench.grounding import (
    COORDINATES,
    Tally,
    accepted_rows,
    control_pages,
    median,
    page_url,
    real_pages,
    recall_cells,
    recall_rows,
)
from bench.harness import DEMO, PAGES, Row, parser, print_columns, print_table, write_json
from datagen.browser.host import BrowserHost
from datagen.browser.session import Session
from datagen.config import BrowserConfig, PipelineConfig, load_pipeline, parse_pipeline
from datagen.pipeline import EpisodeOutcome, LocalRunner
from datagen.records import GroundingRow, Observation, TaskSpec
from datagen.source.readers import BUNDLED_SITES, read_sites
from datagen.source.serve import SiteServer

UNANNOTATED = ("offsite.html", "errorlinks.html")  # judged with discover=True
SCOPE_TARGET = 0.95  # share of recorded steps in scope, offsite.html
BAD_SCHEMES = ("chrome-error:", "about:", "data:")
STEP_TIMEOUT_S = 180.0  # the oracle judges inside observe(), which the pipeline bounds
ADD_ONE = ("todo-add-item", "shop-add-any")


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
    async def session(
        self, record: Path | None = None, proxy: dict[str, str] | None = None, counted: bool = True
    ) -> AsyncIterator[Session]:
        async with super().session(record, proxy, counted) as session:
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
    """One recorded step, judged (`tally`: None when it was not)."""

    page: str
    seed: int
    step: int
    url: str
    after: str  # the previous step's action, and its target
    rows: int
    recorded_rows: int  # grounding rows the pipeline recorded for this step
    in_scope: bool
    observe_ms: float
    coordinates: bool  # the step's description places its target by coordinates
    coordinates_with_row: bool  # … though its target has a grounding row
    rows_differ: bool = False  # recorded rows ≠ judged rows (expression and box)
    tally: Tally | None = None
    moved_on: bool = False
    bad_page: str = ""
    judge_ms: float = 0.0
    error: str = ""
    report: str = ""

    @property
    def flawed(self) -> bool:
        t = self.tally or Tally()
        return bool(
            t.wrong or t.disagreeing_rows or t.duplicate_rows or t.misnamed_rows or t.outside_rows
            or t.unshown_rows or self.coordinates_with_row or t.loose_rows
            or any(h < n for h, n in t.recall.values()) or self.error or self.rows_differ
        )  # fmt: skip


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
        coordinates = bool(COORDINATES.search(s.action_description))
        result = StepResult(
            page=page, seed=seed, step=s.step_index, url=s.url, after=after, rows=0,
            recorded_rows=len(mine), in_scope=urlsplit(s.url).hostname == host,
            observe_ms=s.observe_ms, coordinates=coordinates,
            coordinates_with_row=coordinates and any(g.selector == s.target_selector for g in mine),
        )  # fmt: skip
        steps.append(result)
        if match is None:
            result.error = "no observation with this screenshot"
            result.bad_page = bad_page(s.url, None)
            continue
        cursor = match.order + 1
        used.add(match.order)
        result.rows = len(match.rows)
        result.rows_differ = _row_keys(match.rows) != _row_keys(mine)
        result.bad_page = bad_page(s.url, match.status)
        result.moved_on, result.error = match.moved_on, match.error
        if match.verdict is not None:
            result.tally, result.judge_ms = Tally.of(match.verdict), match.verdict.judge_ms
            result.report = match.verdict.report()
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
        page=page, seed=seed, status=status, steps=steps, observations=len(observed),
        dropped=dict(Counter(r.reason for r in outcome.rejects if r.stage == "step")),
        grounding_rejects=dict(Counter(r.reason for r in outcome.rejects if r.stage == "grounding")),
        not_steps=not_steps, seconds=0.0,
    )  # fmt: skip


def _row_keys(rows: list[GroundingRow]) -> list[tuple[str, tuple[float, ...]]]:
    return sorted((r.referring_expression, tuple(round(v, 1) for v in r.bbox_px)) for r in rows)


# --------------------------------------------------------------------------- summary


def figures(episodes: list[EpisodeResult]) -> dict[str, Any]:
    """Recorded steps of some episodes together (one page, or all)."""
    steps = [s for e in episodes for s in e.steps]
    t = sum((s.tally for s in steps if s.tally is not None), Tally())
    dropped = sum((Counter(e.dropped) for e in episodes), Counter[str]())
    return asdict(t) | {
        "episodes": len(episodes), "steps": len(steps), "judged": t.observations,
        "precision": t.precision, "recall": t.ratios(), "met": t.met(),
        "duplicate_steps": t.duplicate_observations, "disagreeing_steps": t.disagreeing_observations,
        "error_steps": sum(s.bad_page == "error" for s in steps),
        "blank_steps": sum(s.bad_page == "blank" for s in steps),
        "in_scope": round(sum(s.in_scope for s in steps) / len(steps), 4) if steps else 1.0,
        "dropped": dict(sorted(dropped.items())),
        "not_steps": sum(len(e.not_steps) for e in episodes),
        "coordinate_steps": sum(s.coordinates for s in steps),
        "coordinate_steps_with_row": sum(s.coordinates_with_row for s in steps),
        "rows_differ": sum(s.rows_differ for s in steps),
        "judge_errors": sum(bool(s.error) for s in steps),
        "observe_ms_median": median([s.observe_ms for s in steps]),
        "judge_ms_median": median([s.judge_ms for s in steps if s.tally is not None]),
    }  # fmt: skip


def print_flaws(episodes: list[EpisodeResult]) -> None:
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


def print_report(episodes: list[EpisodeResult], verbose: bool) -> dict[str, Any]:
    names = sorted({e.page for e in episodes}, key=[e.page for e in episodes].index)
    per_page = {n: figures([e for e in episodes if e.page == n]) for n in names}
    o, offsite = figures(episodes), per_page.get("offsite.html")
    met = o.pop("met") | {"bad pages": o["error_steps"] + o["blank_steps"] == 0}
    if offsite is not None:
        met["in scope"] = offsite["in_scope"] >= SCOPE_TARGET
    if verbose:
        print_flaws(episodes)
    head = f"{'page':<25} {'eps':>3} {'steps':>5} {'rows':>5} {'bad':>3} {'prec':>6} "
    print(head + " ".join(f"{k[:8]:>9}" for k in oracle.KINDS) + "  dups disagr err/blk scope obs ms  dropped")  # fmt: skip
    for name, f in per_page.items():
        prec = f"{f['precision']:.3f}" if f["correct"] + f["wrong"] else "-"
        dropped = " ".join(f"{r}:{n}" for r, n in f["dropped"].items()) or "-"
        print(
            f"{name:<25} {f['episodes']:>3} {f['steps']:>5} {f['rows']:>5} {f['wrong']:>3} {prec:>6} "
            f"{recall_cells(f['recall'])} {f['duplicate_rows']:>5} {f['disagreeing_steps']:>6} "
            f"{f['error_steps']:>3}/{f['blank_steps']:<3} {f['in_scope']:>5.2f} {f['observe_ms_median']:>6.0f}  {dropped}"
        )  # fmt: skip
    print(f"\nepisodes: {dict(Counter(e.status for e in episodes))}")
    summary = {"overall": o, "met": met, "pages": per_page}
    print_table(table(summary))
    return summary


def table(summary: dict[str, Any]) -> list[Row]:
    """The figures of a summary (`print_report`'s) against their targets."""
    o, met, offsite = summary["overall"], summary["met"], summary["pages"].get("offsite.html")
    rows: list[Row] = [("recorded steps (judged)", f"{o['steps']} ({o['judged']}) in {o['episodes']} episodes", "-", None), *recall_rows(o)]  # fmt: skip
    rows += [
        ("rows sharing an expression", f"{o['duplicate_rows']} ({o['duplicate_steps']} steps)", "0", met["duplicates"]),
        ("steps whose boxes disagree with the image", f"{o['disagreeing_steps']}/{o['judged']}", "0", met["disagreement"]),
        ("steps on chrome-error:, about:blank, error pages", f"{o['error_steps']} error, {o['blank_steps']} blank", "0", met["bad pages"]),
    ]  # fmt: skip
    if offsite is not None:
        rows.append(("steps in scope, offsite.html", f"{offsite['in_scope']:.3f} ({offsite['steps']} steps)", f"≥ {SCOPE_TARGET}", met["in scope"]))  # fmt: skip
    rows += [
        ("steps in scope, all pages", f"{o['in_scope']:.3f}", "-", None),
        ("steps dropped, by reason", " ".join(f"{r}:{n}" for r, n in o["dropped"].items()) or "0", "-", None),
        ("observations that became no step (incl. final)", f"{o['not_steps']}", "-", None),
        ("rows naming the wrong thing (data-gt-name)", f"{o['misnamed_rows']}", "-", None),
        ("rows quoting text from outside their row", f"{o['outside_rows']}", "0", o["outside_rows"] == 0),
        ("rows quoting text the page does not show", f"{o['unshown_rows']}", "0", o["unshown_rows"] == 0),
        ("steps described by coordinates (target with a row)", f"{o['coordinate_steps']} ({o['coordinate_steps_with_row']})", "(0)", o["coordinate_steps_with_row"] == 0),
        ("wrapped-link rows boxing several lines", f"{o['loose_rows']}", "-", None),
        ("steps whose recorded rows ≠ rows judged", f"{o['rows_differ']}", "0", o["rows_differ"] == 0),
        ("steps the page changed while judged", f"{o['changed_while_judged']}", "-", None),
        ("steps the oracle could not judge", f"{o['judge_errors']}", "-", None),
        ("median ms: observe() of recorded steps", f"{o['observe_ms_median']:.1f}", "-", None),
        ("median ms: oracle judge() per step", f"{o['judge_ms_median']:.1f}", "-", None),
    ]  # fmt: skip
    return rows


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
        local = LocalRunner(config, run_id="bench", host=host)  # the host stays ours
        try:
            for name in pages:
                url = page_url(fixtures.base_url, name)
                if name == "errorlinks.html":
                    url += f"?closed={closed_port()}"
                task_id = name.removesuffix(".html").replace("/", "-")
                task = TaskSpec(id=task_id, start_url=url, instruction="Explore.")
                for seed in range(args.seeds):
                    host.observed, host.discover = [], name in UNANNOTATED
                    started = time.perf_counter()
                    outcome = await local.episode(task, seed)
                    result = join(name, seed, url, outcome, host.observed)
                    result.seconds = round(time.perf_counter() - started, 1)
                    episodes.append(result)
                    f = figures([result])
                    print(
                        f"{name} seed {seed}: {result.status}, {f['steps']} steps, "
                        f"{f['correct']}/{f['rows']} rows correct, recall "
                        + " ".join(f"{k} {v[0]:.0f}/{v[1]:.0f}" for k, v in f["recall"].items())
                        + f", dropped {result.dropped or 0} ({result.seconds:.0f} s)",
                        file=sys.stderr,
                    )
        finally:
            version = host.version
            await host.close()
    return episodes, version


# --------------------------------------------------------------------------- add one


def unsubmitted(outcome: EpisodeOutcome) -> bool:
    """Did the episode end with a typed value it never completed (no Enter, no click after
    the last typing)?"""
    kinds = [s.action_type for s in outcome.steps]
    if "type" not in kinds:
        return False
    last = len(kinds) - 1 - kinds[::-1].index("type")
    return not any(s.action_type in ("key", "click") for s in outcome.steps[last + 1 :])


async def add_one(episodes: int, task_ids: list[str]) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp, SiteServer(BUNDLED_SITES) as sites:
        config = load_pipeline(DEMO, output=str(Path(tmp) / "out"))
        tasks = [t for t in read_sites(BUNDLED_SITES) if t.id in task_ids]
        out: dict[str, dict[str, float]] = {}
        async with LocalRunner(
            config, run_id="bench-add-one", allow=[sites.origin], resolve_url=sites.resolve
        ) as local:
            for task in tasks:
                solved = left_typed = coords = steps = 0
                started = time.perf_counter()
                for repeat in range(episodes):
                    outcome = await local.episode(task, repeat)
                    ok = bool(outcome.episode and outcome.episode.success)
                    solved, left_typed = solved + ok, left_typed + unsubmitted(outcome)
                    steps += len(outcome.steps)
                    coords += sum(bool(s.target_selector and COORDINATES.search(s.action_description)) for s in outcome.steps)  # fmt: skip
                    print(f"{task.id} #{repeat}: {'solved' if ok else 'not solved'}, {len(outcome.steps)} steps", file=sys.stderr)  # fmt: skip
                out[task.id] = {
                    "episodes": episodes, "solved": solved, "solved_share": round(solved / episodes, 3),
                    "typed_not_completed": left_typed, "steps": steps, "coordinate_descriptions": coords,
                    "seconds": round(time.perf_counter() - started, 1),
                }  # fmt: skip
    print_columns(out)
    solved, total = (sum(int(f[k]) for f in out.values()) for k in ("solved", "episodes"))
    print(f"all add-one tasks: solved {solved}/{total} ({solved / max(1, total):.1%})")
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--seeds", type=int, default=None, help="episodes per page or task (default 2; --add-one 20)")  # fmt: skip
    p.add_argument("--steps", type=int, default=10, help="run.max_steps (default 10)")
    pages = [*real_pages(), *control_pages(), *UNANNOTATED]
    p.add_argument(
        "--pages", nargs="*", choices=pages, help="fixture page file names (default all)"
    )
    p.add_argument("--quiet", action="store_true", help="no per-step misses and wrong rows")
    p.add_argument("--add-one", action="store_true", help="the demo's add-one tasks, solved or not")
    p.add_argument("--tasks", nargs="*", default=list(ADD_ONE), help="--add-one's task ids")
    args = p.parse_args(argv)
    args.seeds = args.seeds if args.seeds is not None else (20 if args.add_one else 2)
    if args.seeds < 1 or args.steps < 1:
        p.error("--seeds and --steps must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.add_one:
        write_json(args.json, asyncio.run(add_one(args.seeds, args.tasks)))
        return 0
    episodes, version = asyncio.run(run_bench(args))
    summary = print_report(episodes, verbose=not args.quiet)
    report = {"browser": version, "seeds": args.seeds, "max_steps": args.steps, "summary": summary}
    write_json(args.json, report | {"episodes": [asdict(e) for e in episodes]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
