"""One shard's whole flow, top to bottom. No Dask in here: runtime/ calls `run_shard` on a
worker's browser loop, tests call it directly.

    TaskSpec ─► session.goto ─► [observe ─► check ─► policy ─► validate ─► act] × steps
             ─► StepRow, GroundingRow, EpisodeRow | RejectRow ─► sink.write_shard

Every failure inside a task becomes a RejectRow with a reason code; a shard always finishes.
Only pages inside the episode's scope (`run.scope`) become data: after an action that led off
it, or to an error or a blank page, that page is a reject and the session goes back.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sysconfig
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from playwright.async_api import Error as PlaywrightError
from pydantic import ValidationError

from datagen import SCHEMA_VERSION, __version__
from datagen.annotate import grounding_rows
from datagen.annotate.model import model_expressions
from datagen.browser.actions import action_json, action_repr
from datagen.browser.memory import PageMemoryExceeded
from datagen.browser.session import (
    BrowserDied,
    BrowserHost,
    CheckNotBoolean,
    NavigationFailed,
    Session,
    target_closed,
)
from datagen.config import PipelineConfig
from datagen.course import MAX_RETURNS, Course, led_to
from datagen.engine.roles import Engines, profile_for
from datagen.observe.meter import Meter
from datagen.policy import Policy, PolicyFailure, Recovering, make_policy
from datagen.records import (
    Back,
    Click,
    Decision,
    Done,
    EpisodeRow,
    Goto,
    GroundingRow,
    ImageData,
    ModelTrace,
    Observation,
    RejectReason,
    RejectRow,
    ShardResult,
    StepRow,
    TaskSpec,
    TypeText,
)
from datagen.sink.storage import Storage
from datagen.sink.writer import write_shard
from datagen.validate import check_grounding, check_step

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class ShardContext:
    """What a shard needs from its surroundings."""

    config: PipelineConfig
    run_id: str
    host: BrowserHost
    storage: Storage
    resolve_url: Callable[[str], str] = lambda url: url
    on_episode: Callable[[dict[str, Any]], None] = lambda event: None
    engines: Engines | None = None
    meter: Meter = field(default_factory=Meter)


@dataclass
class EpisodeOutcome:
    """Rows produced by one episode."""

    ids: dict[str, str]
    steps: list[StepRow] = field(default_factory=list)
    grounding: list[GroundingRow] = field(default_factory=list)
    rejects: list[RejectRow] = field(default_factory=list)
    episode: EpisodeRow | None = None

    def reject(self, stage: str, reason: RejectReason, detail: str, **where: int) -> None:
        self.rejects.append(
            RejectRow(**self.ids, stage=stage, reason=reason.value, detail=detail[:2000], **where)
        )


def image_width_limit(config: PipelineConfig) -> int:
    """Widest screenshot sent to a model (the vlm policy's setting, else 1280)."""
    return getattr(config.policy, "image_max_width", 1280)


def _digest(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


async def run_shard(shard: int, tasks: list[TaskSpec], ctx: ShardContext) -> ShardResult:
    """Run every episode of a shard (`sessions_per_worker` at once), then write its parts.

    Only on a browser that lasted: if it was closed, restarted or stopped answering before
    the shard ends (a shutdown, an interrupt, a crash), the shard raises BrowserDied and is
    not committed, since its episodes may have failed for that and not for their tasks."""
    started = time.perf_counter()
    launch = ctx.host.launches
    gate = asyncio.Semaphore(ctx.config.cluster.sessions_per_worker)
    active = [0, 0]  # in flight now, most at once

    async def one(task: TaskSpec, repeat: int) -> EpisodeOutcome:
        async with gate:
            await ctx.host.admit(active[0])
            active[0] += 1
            active[1] = max(active)
            try:
                outcome = await run_episode(task, repeat, ctx)
            finally:
                active[0] -= 1
        ctx.meter.add("episodes")
        for reject in outcome.rejects:
            ctx.meter.add("reject:" + reject.reason)
        ctx.on_episode(
            {
                "shard": shard,
                "episode_id": outcome.ids["episode_id"],  # a rerun's episode counts once
                "episode": outcome.episode is not None,
                "steps": len(outcome.steps),
                "solved": bool(outcome.episode and outcome.episode.success),
                "rejects": dict(Counter(r.reason for r in outcome.rejects)),
            }
        )
        return outcome

    # A TaskGroup, not gather: when one episode fails the shard (its browser died), the others
    # are cancelled and their contexts closed, instead of running on beside the shard's retry.
    try:
        async with asyncio.TaskGroup() as group:
            jobs = [
                group.create_task(one(t, r)) for t in tasks for r in range(ctx.config.run.repeats)
            ]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    outcomes = [job.result() for job in jobs]
    if ctx.host.launches != launch or not await ctx.host.responsive():
        raise BrowserDied(f"the browser closed or stopped answering under shard {shard}")
    tables: dict[str, list[Any]] = {"episodes": [], "steps": [], "grounding": [], "rejects": []}
    for o in outcomes:
        tables["episodes"] += [o.episode] if o.episode else []
        tables["steps"] += o.steps
        tables["grounding"] += o.grounding
        tables["rejects"] += o.rejects
    result = ShardResult(
        shard=shard,
        tasks=len(tasks),
        episodes=len(tables["episodes"]),
        steps=len(tables["steps"]),
        grounding=len(tables["grounding"]),
        rejects=len(tables["rejects"]),
        solved=sum(1 for e in tables["episodes"] if e.success),
        reject_reasons=dict(Counter(r.reason for r in tables["rejects"])),
        seconds=round(time.perf_counter() - started, 3),
        peak_sessions=active[1],
        browser_memory_mb=round(ctx.host.memory_mb(max_age_s=0), 1),
        browser_episodes=ctx.host.episodes,
        tasks_with_episodes=len({e.task_id for e in tables["episodes"]}),
    )
    await asyncio.to_thread(write_shard, ctx.storage, shard, tables, result.model_dump())
    return result


async def run_episode(task: TaskSpec, repeat: int, ctx: ShardContext) -> EpisodeOutcome:
    """One episode; never raises for a task's own failures."""
    episode_id = _digest(ctx.run_id, task.id, repeat)[:16]
    ids = {
        "run_id": ctx.run_id,
        "schema_version": SCHEMA_VERSION,
        "task_id": task.id,
        "episode_id": episode_id,
        "browser_version": ctx.host.version,
    }
    out = EpisodeOutcome(ids=ids)
    seed = int(_digest(ctx.config.run.seed, task.id, repeat)[:8], 16)
    started = time.perf_counter()
    opened: list[Session] = []
    limit = asyncio.timeout(ctx.config.run.episode_timeout_s)
    try:
        async with limit, ctx.host.session() as session:
            opened.append(session)
            try:
                start_url = ctx.resolve_url(task.start_url)
                session.watch_documents()
                await session.goto(start_url)
                course = Course.for_episode(
                    ctx.config.run.scope, start_url, session.page.url, ctx.host.guard
                )
                policy = make_policy(ctx.config.policy, task, seed, ctx.engines, course.scope)
                await _walk(session, task, policy, seed, started, out, ctx, course)
            except PlaywrightError as exc:  # asked while the page is still open: is it hung?
                if ctx.host.connected and await _hung(session, exc):
                    raise StepTimedOut(f"the page stopped responding ({_first_line(exc)})") from exc
                raise
    except EPISODE_FAILURES as exc:
        stage, reason, detail = await _failure(exc, opened, ctx, task, expired=limit.expired())
        out.reject(stage, reason, detail)
        if reason in (
            RejectReason.TIMEOUT_STEP,
            RejectReason.TIMEOUT_EPISODE,
            RejectReason.RENDERER_CRASH,
        ):
            await _watchdog(ctx, task)
    if out.rejects and out.rejects[-1].stage in ("task", "episode"):
        # A failed episode leaves one row: the reason. Its steps and annotations are dropped.
        out.steps, out.grounding, out.episode, out.rejects = [], [], None, out.rejects[-1:]
    return out


class StepTimedOut(Exception):
    """One step (observe, decide, act) overran `run.step_timeout_s`: a hung page, usually."""


class CheckFailed(Exception):
    """The task's success check itself raised (bad JS, say): the task is at fault."""


LIBRARY_DIRS = tuple(
    {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)
EPISODE_FAILURES = (
    PageMemoryExceeded,
    NavigationFailed,
    CheckFailed,
    PolicyFailure,
    StepTimedOut,
    TimeoutError,
    PlaywrightError,
    ValidationError,
)


async def _failure(
    exc: BaseException,
    opened: list[Session],
    ctx: ShardContext,
    task: TaskSpec,
    expired: bool = False,
) -> tuple[str, RejectReason, str]:
    """The reject row for an episode that failed: (stage, reason, detail)."""
    if not ctx.host.connected:
        # the browser is gone or being closed (a shutdown, an interrupt, a crash): whatever
        # failed did so for that, not for the task. The shard fails and is retried. (No
        # `from exc`: Dask cannot pickle Playwright's chained errors, it logs a RecursionError.)
        raise BrowserDied(f"browser closed during task {task.id}: {_first_line(exc)}") from None
    exceeded = opened[0].memory.exceeded if opened and opened[0].memory else None
    if isinstance(exc, PageMemoryExceeded) or exceeded is not None:
        # first: whatever failed after the watchdog stopped the page (a load, a check, a
        # crashed page) failed for that
        return "episode", RejectReason.PAGE_MEMORY, str(exceeded or exc)
    if isinstance(exc, NavigationFailed):
        return "task", exc.reason, str(exc)
    if isinstance(exc, CheckFailed):
        return "episode", RejectReason.CHECK_ERROR, str(exc)
    if isinstance(exc, PolicyFailure):
        return "episode", exc.reason, str(exc)
    if isinstance(exc, StepTimedOut):
        return "episode", RejectReason.TIMEOUT_STEP, str(exc)
    if isinstance(exc, TimeoutError) and expired:  # only the episode's own limit, not any
        return (
            "task",
            RejectReason.TIMEOUT_EPISODE,
            f"episode took over {ctx.config.run.episode_timeout_s:g}s",
        )
    if target_closed(exc) and not await ctx.host.responsive():
        # the browser itself is gone (or going, e.g. a worker shutting down): fail the shard,
        # it is retried; a page that merely closed itself is the task's doing, below
        raise BrowserDied(f"browser died during task {task.id}: {_first_line(exc)}") from None
    first_line = _first_line(exc)
    if opened and opened[0].events.crashed:
        return "episode", RejectReason.RENDERER_CRASH, f"the page's renderer crashed: {first_line}"
    log.warning("episode failed", extra={"task_id": task.id}, exc_info=exc)
    return "task", RejectReason.BROWSER_ERROR, f"{type(exc).__name__}: {first_line}"


async def _hung(session: Session, exc: BaseException) -> bool:
    """Did a browser call fail because the page's main thread is stuck (a script that never
    yields)? Chromium then sometimes answers a screenshot with an error instead of waiting."""
    if target_closed(exc) or session.events.crashed:
        return False
    if session.memory is not None and session.memory.exceeded is not None:
        return False  # stopped for its memory, not stuck
    return not await session.answers()


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else _origin(exc)


def _origin(exc: BaseException) -> str:
    """Where an exception without a message came from: "file:line in function" of the
    innermost frame outside the standard library and installed packages (a TimeoutError is
    raised inside asyncio; what matters is which of our awaits it ended)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [
        f for f in frames if "/datagen/" in f.filename or not f.filename.startswith(LIBRARY_DIRS)
    ] or frames
    return f"at {ours[-1].filename}:{ours[-1].lineno} in {ours[-1].name}" if ours else ""


async def _watchdog(ctx: ShardContext, task: TaskSpec) -> None:
    """After a hang or a crash: is the browser still answering? If not, kill it; the shard
    then fails and is retried on a fresh browser."""
    if not await ctx.host.responsive():
        await ctx.host.kill()
        raise BrowserDied(f"browser stopped answering after task {task.id}")


async def _walk(
    session: Session,
    task: TaskSpec,
    policy: Policy,
    seed: int,
    started: float,
    out: EpisodeOutcome,
    ctx: ShardContext,
    course: Course,
) -> None:
    provenance = {
        "playwright_version": ctx.host.playwright_version,
        "datagen_version": __version__,
        "policy": policy.name,
    }
    ended = await _steps(session, task, policy, provenance, out, ctx, course)
    if ended is None:
        return
    status, answer, success = ended
    after = f"after step {len(out.steps) - 1}"  # a page can hang after its last step too
    final = None
    if status != "left_scope":
        what = f"the final observation ({after})"
        final = await _observed(session, policy, course, out, ctx, what)
    if final is None:  # it left its scope for good: the last page in scope ends the episode
        status, final, success = "left_scope", course.last, course.success
    elif status != "solved":
        success = await _bounded(_check(session, task), ctx, f"the final success check ({after})")
        status = "solved" if success else status
    if not out.steps or final is None:
        if course.stray is not None:
            reason, detail = course.stray.reason, "no page in scope to start from: "
            out.reject("episode", reason, detail + course.stray.detail)
            return
        out.reject("episode", RejectReason.NO_STEPS, "the episode ended before its first step")
        return
    out.episode = EpisodeRow(
        **out.ids,
        **provenance,
        source=task.source,
        site=task.site,
        instruction=task.instruction,
        start_url=task.start_url,
        final_url=final.url,
        n_steps=len(out.steps),
        success=success,
        status=status,
        answer=answer,
        seed=seed,
        duration_s=round(time.perf_counter() - started, 3),
        final_screenshot=ImageData(
            bytes=final.screenshot, path=f"{out.ids['episode_id']}-final.{final.image_format}"
        ),
        viewport_width=final.viewport_width,
        viewport_height=final.viewport_height,
        device_scale_factor=final.device_scale_factor,
        blocked_requests=session.events.blocked,
        dialogs=session.events.dialogs,
        popups=session.events.popups,
    )


async def _steps(
    session: Session,
    task: TaskSpec,
    policy: Policy,
    provenance: dict[str, str],
    out: EpisodeOutcome,
    ctx: ShardContext,
    course: Course,
) -> tuple[str, str, bool | None] | None:
    """Steps until done, the budget or leaving the scope for good: (status, answer, success);
    None if rejected."""
    success: bool | None = None
    budget = ctx.config.run.max_steps  # the run caps every episode; a task may ask for fewer
    for index in range(min(task.max_steps or budget, budget)):
        outcome = await _step(session, task, policy, provenance, out, ctx, index, course)
        if outcome is None:
            return None
        ended, success, answer = outcome
        if ended:
            return ended, answer, success
    return "max_steps", "", success


async def _bounded(awaitable: Awaitable[T], ctx: ShardContext, what: str) -> T:
    """The browser's part of a step, within `run.step_timeout_s`. The model's part is bounded by
    the engine client's own timeouts instead: queueing at a busy engine is not a hung page."""
    limit = ctx.config.run.step_timeout_s
    try:
        async with asyncio.timeout(limit):
            return await awaitable
    except TimeoutError:
        raise StepTimedOut(f"{what} took over {limit:g}s") from None


async def _step(
    session: Session,
    task: TaskSpec,
    policy: Policy,
    provenance: dict[str, str],
    out: EpisodeOutcome,
    ctx: ShardContext,
    index: int,
    course: Course,
) -> tuple[str, bool | None, str] | None:
    """observe → check → decide → validate → act → annotate: (ended, success, answer), where
    `ended` is "" (go on), "solved", "done" or "left_scope"."""
    obs = await _observed(session, policy, course, out, ctx, f"observing (step {index})")
    if obs is None:
        return "left_scope", course.success, ""
    ctx.meter.add("screenshots")
    success = await _bounded(
        _check(session, task, first=index == 0), ctx, f"the success check (step {index})"
    )
    if success:
        decision = Decision(action=Done(), note="check passed")
    else:
        decision = await policy.decide(obs, task)
    problem = check_step(obs, decision.action)
    if problem:
        out.reject("episode", problem[0], problem[1], step_index=index)
        return None
    began = time.perf_counter()
    error = None
    action = decision.action
    if isinstance(action, Goto) and course.elsewhere(action.url):
        # a model asking for another site: not loaded at all (off task, though allowed)
        error = f"not taken: {action.url[:300]} is outside the episode's scope (run.scope: "
        error += f"{course.scope.describe()})"
    elif not isinstance(action, Done):
        error = await _bounded(session.act(action), ctx, f"acting (step {index})")
    act_ms = (time.perf_counter() - began) * 1000
    out.steps.append(_step_row(out.ids, provenance, index, obs, decision, error, act_ms))
    course.last, course.success = obs, success
    ctx.meter.add("steps")
    if ctx.config.annotation.grounding:
        await _annotate(obs, index, out, ctx)
    if isinstance(action, Done):
        return ("solved" if success else "done"), success, action.answer
    return "", success, ""


async def _observed(
    session: Session,
    policy: Policy,
    course: Course,
    out: EpisodeOutcome,
    ctx: ShardContext,
    what: str,
) -> Observation | None:
    """An observation that may become data. Out of scope, on an error or a blank page there is
    none: a `step` reject (step_index: the step it would have been), the last step's
    action_error says where it led, the session goes back, and looks again; None when it
    cannot get back or has gone back MAX_RETURNS times in a row."""
    index = len(out.steps)
    first = True
    while True:
        stray = course.stray_of(session)
        if stray is None:
            obs = await _bounded(session.observe(), ctx, what)
            stray = course.stray_of(session, obs.url)  # it may have moved on while observed
            if stray is None:
                course.returns = 0 if first else course.returns
                return obs
        course.stray = stray
        if first and out.steps:
            led_to(out.steps, stray)
            if isinstance(policy, Recovering):
                policy.strayed(stray.reason.value, stray.url)
        first = False
        course.returns += 1
        way = await _return(session, course, ctx) if course.returns <= MAX_RETURNS else ""
        after = f"after step {index - 1}: " if index else "before the first step: "
        then = f"; {way}" if way else "; no way back: the episode ends here"
        if course.returns > MAX_RETURNS:
            then = f"; gone back {MAX_RETURNS} times in a row already: the episode ends here"
        out.reject("step", stray.reason, after + stray.detail + then, step_index=index)
        if not way:
            return None


async def _return(session: Session, course: Course, ctx: ShardContext) -> str:
    """Back to a page in scope: history back if that lands there, else the start URL again
    (vetted like the first load). Says which, or "" when neither worked."""
    await _bounded(session.act(Back()), ctx, "going back from a page out of scope")
    if course.stray_of(session) is None:
        return "went back"
    try:
        await _bounded(session.goto(course.start_url), ctx, "reopening the start URL")
    except NavigationFailed:
        return ""
    return "reopened the start URL" if course.stray_of(session) is None else ""


async def _check(session: Session, task: TaskSpec, first: bool = False) -> bool | None:
    """The task's success check on the live page; None when the task has none.

    A check that throws on the start page is broken (the task is at fault: CheckFailed).
    Later, a throw means the page is no longer one the check understands (the agent went
    elsewhere, an element it reads is gone): not solved.
    """
    if task.check is None:
        return None
    try:
        return await session.check(task.check)
    except CheckNotBoolean as exc:  # broken wherever it is evaluated: never a label
        raise CheckFailed(str(exc)) from None
    except PlaywrightError as exc:
        if first:
            raise CheckFailed(f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
        log.debug("check raised on %s: %s", session.page.url, exc, extra={"task_id": task.id})
        return False


async def _annotate(obs: Observation, index: int, out: EpisodeOutcome, ctx: ShardContext) -> None:
    """DOM grounding rows, validated; optionally model-written expressions checked by round trip."""
    rows = grounding_rows(
        obs, **out.ids, step_index=index, limit=ctx.config.annotation.max_elements_per_step
    )
    stable = {e.index: e.stable for e in obs.elements}
    accepted = []
    for row in rows:
        problem = check_grounding(row, ctx.config.validation, stable[row.element_index])
        if problem:
            out.reject(
                "grounding",
                problem[0],
                problem[1],
                step_index=index,
                element_index=row.element_index,
            )
        else:
            accepted.append(row)
    expressions = ctx.config.annotation.model_expressions
    if expressions is not None and ctx.engines is not None and accepted:
        trips = await model_expressions(
            accepted,
            obs,
            ctx.engines,
            expressions,
            profile_for(ctx.config),
            image_width_limit(ctx.config),
        )
        accepted = trips.rows
        for row, reason, detail in trips.problems:
            out.reject(
                "grounding", reason, detail, step_index=index, element_index=row.element_index
            )
    out.grounding += accepted


def _step_row(
    ids: dict[str, str],
    provenance: dict[str, str],
    index: int,
    obs: Observation,
    decision: Decision,
    error: str | None,
    act_ms: float,
) -> StepRow:
    action, target = decision.action, decision.target
    point = (action.x, action.y) if isinstance(action, Click) else None
    box = None
    if target is not None:
        s, b = obs.device_scale_factor, target.box
        box = (b.x * s, b.y * s, (b.x + b.width) * s, (b.y + b.height) * s)
    return StepRow(
        **ids,
        **provenance,
        step_index=index,
        url=obs.url,
        title=obs.title,
        screenshot=ImageData(
            bytes=obs.screenshot, path=f"{ids['episode_id']}-{index:03d}.{obs.image_format}"
        ),
        image_width=obs.image_width,
        image_height=obs.image_height,
        viewport_width=obs.viewport_width,
        viewport_height=obs.viewport_height,
        device_scale_factor=obs.device_scale_factor,
        action_type=action.type,
        action_repr=action_repr(action),
        action_json=action_json(action),
        x_px=point[0] if point else None,
        y_px=point[1] if point else None,
        x_norm=point[0] / obs.image_width if point else None,
        y_norm=point[1] / obs.image_height if point else None,
        text=action.text if isinstance(action, TypeText) else None,
        target_selector=target.selector if target else None,
        target_role=target.role if target else None,
        target_name=target.name if target else None,
        target_bbox_px=box,
        target_hit=target.hit if target else None,
        action_error=error,
        n_elements=len(obs.elements),
        observe_ms=round(obs.observe_ms, 2),
        act_ms=round(act_ms, 2),
        settle_ms=obs.settle_ms,
        observation_stable=obs.stable,
        **_trace_columns(decision.trace),
    )


def _trace_columns(trace: ModelTrace | None) -> dict[str, Any]:
    """The model columns of a step row (all null for policies without a model)."""
    if trace is None:
        return {}
    return {
        "model": trace.model,
        "model_standin": trace.standin,
        "prompt_profile": trace.prompt_profile,
        "prompt_version": trace.prompt_version,
        "engine_roles": trace.roles,
        "raw_output": trace.raw_output,
        "localizer_output": trace.localizer_output,
        "judge_output": trace.judge_output,
        "thought": trace.thought,
        "note": trace.note,
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "engine_latency_ms": trace.latency_ms,
        "engine_attempts": trace.attempts,
    }
