"""One episode, start to end: open a session, load the start URL, step until done, and leave
its rows in an `EpisodeOutcome`.

    TaskSpec ─► session.goto ─► [observe ─► check ─► policy ─► validate ─► act ─► annotate] × steps
             ─► StepRow, GroundingRow, EpisodeRow | RejectRow
    EpisodeOutcome ─► relabel() (annotation.relabel, browser closed) ─► the relabel columns

Every failure inside a task becomes a RejectRow with a reason code (failures.py). Only pages
inside the episode's scope (`run.scope`) become data: after an action that led off it, or to
an error or a blank page, that page is a reject and the session goes back (course.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from typing import TypeVar

from playwright.async_api import Error as PlaywrightError

from datagen.annotate.describe import element_at
from datagen.annotate.relabel import relabel_episode
from datagen.browser.consent import answer_consent
from datagen.browser.failures import StepTimedOut
from datagen.browser.navigation import NavigationFailed
from datagen.browser.session import Session
from datagen.browser.triage import as_hang, run_check, watchdog
from datagen.browser.walls import on_page, wall_checked
from datagen.config.urls import strip_credentials
from datagen.pipeline.context import ShardContext
from datagen.pipeline.course import MAX_RETURNS, Course, led_to
from datagen.pipeline.failures import EPISODE_FAILURES, WATCHED, failure
from datagen.pipeline.hosts import open_start
from datagen.pipeline.recording import discard_recording, recording_path, verifiable
from datagen.pipeline.rows import (
    EpisodeOutcome,
    Hit,
    annotate,
    digest,
    image_width_limit,
    new_outcome,
    step_row,
)
from datagen.pipeline.straggler import StepClock, StragglerWatch, Straggling
from datagen.policy import Policy, Recovering, make_policy
from datagen.records import (
    Back,
    Click,
    Decision,
    Done,
    EpisodeRow,
    Goto,
    ImageData,
    Observation,
    PageState,
    RejectReason,
    TaskSpec,
)
from datagen.scope import Stray
from datagen.validate import check_step
from datagen.versions import __version__

T = TypeVar("T")
BODY_TEXT = "() => document.body ? document.body.innerText : ''"


async def run_episode(task: TaskSpec, repeat: int, ctx: ShardContext) -> EpisodeOutcome:
    """One episode; never raises for a task's own failures."""
    episode = Episode(task, repeat, ctx)
    try:
        return await episode.run()
    except BaseException:  # the shard fails (its browser died): nothing will verify it
        discard_recording(episode.out)
        raise


async def relabel(out: EpisodeOutcome, ctx: ShardContext) -> None:
    """Hindsight relabeling of an ended episode (`annotation.relabel`), from its rows alone.
    The shard calls it after the episode's browser context is closed and its session slot
    freed, outside the episode's time limit: the model's part is bounded by the engine
    client's timeouts, and a failed or rejected relabel leaves the episode row as it is but
    for its relabel columns, plus a `relabel` reject."""
    config, episode = ctx.config.annotation.relabel, out.episode
    if config is None or ctx.engines is None or episode is None:
        return
    if config.skip_solved and episode.success:
        return  # the task's own check passed: its instruction is the better label
    limit = image_width_limit(ctx.config)
    done = await relabel_episode(episode, out.steps, ctx.engines, config, limit)
    out.episode = episode.model_copy(update=done.columns)
    if done.problem is not None:
        out.reject("relabel", *done.problem)


class Episode:
    """One episode's state: its task, context, seed, session, policy, course and rows, and
    how it ended (`status`, `answer`, `success`)."""

    course: Course  # set once the start URL has loaded
    policy: Policy
    provenance: dict[str, str]

    def __init__(self, task: TaskSpec, repeat: int, ctx: ShardContext) -> None:
        self.task, self.ctx = task, ctx
        self.out = new_outcome(ctx.run_id, task.id, repeat, ctx.host.version)
        self.seed = int(digest(ctx.config.run.seed, task.id, repeat)[:8], 16)
        self.started = time.perf_counter()
        self.session: Session | None = None
        self.status, self.answer = "max_steps", ""
        self.success: bool | None = None
        self.consent: str | None = None  # the consent dialog answered (browser.consent)
        self.stop_note: str | None = None  # why it stopped (EpisodeRow.stop_note)

    async def run(self) -> EpisodeOutcome:
        """Play the episode within `run.episode_timeout_s`; a failure becomes its one reject."""
        ctx, task, out = self.ctx, self.task, self.out
        limit = asyncio.timeout(ctx.config.run.episode_timeout_s)
        clock = ctx.pool.clock if ctx.pool is not None else StepClock()  # the worker's steps
        self.watch = StragglerWatch(
            clock, ctx.config.run.straggler_s, ctx.config.run.straggler_factor
        )
        # A task that may be verified records its traffic: replays are answered from it
        record = recording_path() if verifiable(task, ctx.config) else None
        out.recording = record
        try:
            async with limit, ctx.host.session(record) as session, self.watch.watching():
                self.session = session
                try:
                    await self._play(session)
                except PlaywrightError as exc:  # asked while the page is still open: hung?
                    hang = await as_hang(exc, ctx.host, session)
                    if hang is None:
                        raise
                    raise hang from exc
        except Straggling as exc:  # far slower than its peers: ended, its slot refills
            out.reject("episode", RejectReason.STRAGGLER, str(exc))
        except EPISODE_FAILURES as exc:
            stage, reason, detail = await failure(
                exc, self.session, ctx, task, expired=limit.expired()
            )
            out.reject(stage, reason, detail)
            if reason in WATCHED:
                await watchdog(ctx.host, task.id)
        if out.rejects and out.rejects[-1].stage in ("task", "episode"):
            # A failed episode leaves one row: the reason. Its steps and annotations are dropped.
            out.steps, out.grounding, out.episode, out.rejects = [], [], None, out.rejects[-1:]
        if out.episode is None or out.episode.success is not True:
            discard_recording(out)  # nothing to verify
        return out

    async def _play(self, session: Session) -> None:
        ctx, task = self.ctx, self.task
        start_url = ctx.resolve_url(task.start_url)
        session.watch_documents()
        loaded = open_start(session, start_url, ctx)  # session.goto, keeping the host's rules
        await wall_checked(loaded, session, start_url)  # a bot wall: a bot_wall reject, no step
        consent = answer_consent(session, ctx.config.browser.consent)
        self.consent = await self._bounded(consent, "answering the cookie-consent dialog")
        self.watch.started()
        self.course = Course.for_episode(
            ctx.config.run.scope, start_url, session.page.url, ctx.host.guard
        )
        self.policy = make_policy(
            ctx.config.policy, task, self.seed, ctx.engines, self.course.scope
        )
        self.provenance = {
            "playwright_version": ctx.host.playwright_version,
            "datagen_version": __version__,
            "policy": self.policy.name,
        }
        if await self._steps(session):
            await self._end(session)

    async def _end(self, session: Session) -> None:
        """The final observation and success check, then the episode row (or its reject)."""
        course, out = self.course, self.out
        after = f"after step {len(out.steps) - 1}"  # a page can hang after its last step too
        final = None
        if self.status != "left_scope":
            final = await self._observed(session, f"the final observation ({after})")
        if final is None:  # it left its scope for good: the last page in scope ends the episode
            self.status, final, self.success = "left_scope", course.last, course.success
        elif self.status != "solved":
            check = run_check(session, self.task.check, self.task.id)
            self.success = await self._bounded(check, f"the final success check ({after})")
            self.status = "solved" if self.success else self.status
        if not out.steps or final is None:
            if course.stray is not None:
                reason, detail = course.stray.reason, "no page in scope to start from: "
                out.reject("episode", reason, detail + course.stray.detail)
                return
            out.reject("episode", RejectReason.NO_STEPS, "the episode ended before its first step")
            return
        out.episode = self._row(session, final)
        if self.ctx.config.annotation.tasks is not None:  # other episodes' tasks: specificity
            text = await self._bounded(session.page.evaluate(BODY_TEXT), "reading the final page")
            out.final_state = state = PageState.of(final.url, str(text), final.elements)
            acted = sorted({(h.role, h.name) for h in out.hits.values()})
            out.episode = out.episode.model_copy(
                update={
                    "final_state_json": state.model_dump_json(),
                    "acted_json": json.dumps([list(pair) for pair in acted]),
                }
            )

    def _row(self, session: Session, final: Observation) -> EpisodeRow:
        task, out = self.task, self.out
        return EpisodeRow(
            **out.ids,
            **self.provenance,
            source=task.source,
            site=task.site,
            instruction=task.instruction,
            start_url=strip_credentials(task.start_url),  # user:password@ never kept
            final_url=strip_credentials(final.url),
            n_steps=len(out.steps),
            success=self.success,
            status=self.status,
            answer=self.answer,
            seed=self.seed,
            **out.group,
            duration_s=round(time.perf_counter() - self.started, 3),
            final_screenshot=ImageData(
                bytes=final.screenshot, path=f"{out.ids['episode_id']}-final.{final.image_format}"
            ),
            viewport_width=final.viewport_width,
            viewport_height=final.viewport_height,
            device_scale_factor=final.device_scale_factor,
            blocked_requests=session.events.blocked,
            dialogs=session.events.dialogs,
            popups=session.events.popups,
            consent_action=self.consent,
            stop_note=self.stop_note or ("left scope" if self.status == "left_scope" else None),
        )

    async def _steps(self, session: Session) -> bool:
        """Steps until done, the budget or leaving the scope for good; False if rejected."""
        budget = self.ctx.config.run.max_steps  # the run caps every episode; a task may ask less
        steps = min(self.task.max_steps or budget, budget)
        for index in range(steps):
            ended = await self._step(session, index)
            if ended is None:
                return False
            if ended:
                self.status = ended
                return True
        self.status = "max_steps"
        self.stop_note = f"max_steps: {steps} steps taken (run.max_steps, the task's max_steps)"
        return True

    async def _bounded(self, awaitable: Awaitable[T], what: str) -> T:
        """The browser's part of a step, within `run.step_timeout_s`. The model's part is
        bounded by the engine client's own timeouts instead: queueing at a busy engine is not a
        hung page."""
        limit = self.ctx.config.run.step_timeout_s
        try:
            async with asyncio.timeout(limit):
                return await awaitable
        except TimeoutError:
            raise StepTimedOut(f"{what} took over {limit:g}s") from None

    async def _step(self, session: Session, index: int) -> str | None:
        """observe → check → decide → validate → act → annotate. Returns "" (go on), "solved",
        "done" or "left_scope" (setting `success` and `answer`), or None when rejected."""
        ctx, course, out = self.ctx, self.course, self.out
        self.watch.step_began(index)
        obs = await self._observed(session, f"observing (step {index})")
        if obs is None:
            self.success = course.success
            return "left_scope"
        ctx.meter.add("screenshots")
        check = run_check(session, self.task.check, self.task.id, first=index == 0)
        success = await self._bounded(check, f"the success check (step {index})")
        if success and index == 0:
            detail = "the success check passes on the start page, before any action: the "
            detail += "task asks for nothing, so no step of it could carry its instruction"
            out.reject("task", RejectReason.CHECK_PASSES_AT_START, detail)
            return None
        self.success = success
        if not success and await self._failed(session, index):
            return "failed_task"  # the task ended unsuccessfully here: no step on this page
        if success:
            decision = Decision(action=Done(), note="check passed")
        else:
            decision = await self.policy.decide(obs, self.task)
        problem = check_step(obs, decision.action)
        if problem:
            out.reject("episode", problem[0], problem[1], step_index=index)
            return None
        began = time.perf_counter()
        error = await self._act(session, decision, index)
        act_ms = (time.perf_counter() - began) * 1000
        row = step_row(out, self.provenance, index, obs, decision, error, act_ms)
        if row.note is None and decision.note:  # the policy's own note (explore's why)
            row = row.model_copy(update={"note": decision.note})
        out.steps.append(row)
        # what a replay's click must land on too (found as the replay finds it); typing's field
        hit = decision.target
        if isinstance(decision.action, Click):
            hit = element_at(obs, decision.action.x, decision.action.y)
        if hit is not None:
            out.hits[index] = Hit.of(hit, obs.elements)
        self.watch.step_ended()
        course.last, course.success = obs, success
        ctx.meter.add("steps")
        if ctx.config.annotation.grounding:
            await annotate(obs, index, out, ctx.config, ctx.engines)
        if isinstance(decision.action, Done):
            self.answer = decision.action.answer
            self.stop_note = decision.note or None
            return "solved" if success else "done"
        return ""

    async def _failed(self, session: Session, index: int) -> bool:
        """Has the task ended unsuccessfully (its `fail` check passes on the page)?"""
        if self.task.fail is None:
            return False
        check = run_check(session, self.task.fail, self.task.id, first=index == 0)
        if await self._bounded(check, f"the fail check (step {index})"):
            self.stop_note = f"fail check passed before step {index}"
            return True
        return False

    async def _act(self, session: Session, decision: Decision, index: int) -> str | None:
        """Take the decided action; its error (None: it went through)."""
        action = decision.action
        if isinstance(action, Goto) and self.course.elsewhere(action.url):
            # a model asking for another site: not loaded at all (off task, though allowed)
            error = f"not taken: {action.url[:300]} is outside the episode's scope (run.scope: "
            return error + f"{self.course.scope.describe()})"
        if isinstance(action, Done):
            return None
        return await self._bounded(session.act(action), f"acting (step {index})")

    async def _observed(self, session: Session, what: str) -> Observation | None:
        """An observation that may become data. Out of scope, on an error or a blank page there
        is none: a `step` reject (step_index: the step it would have been), the last step's
        action_error says where it led, the session goes back, and looks again; None when it
        cannot get back or has gone back MAX_RETURNS times in a row."""
        course, out = self.course, self.out
        index = len(out.steps)
        first = True
        while True:
            stray = course.stray_of(session)
            if stray is not None:  # a wall is the better reason (a challenge on another host)
                stray = await self._walled(session, what, observed=False) or stray
            else:
                obs = await self._bounded(session.observe(), what)
                self.ctx.host.admission.observed(obs)  # how the browsers fare: the session limit
                # a wall read in the same round trip; it may have moved on while observed
                stray = await self._walled(session, what) or course.stray_of(session, obs.url)
                if stray is None:
                    course.returns = 0 if first else course.returns
                    return obs
            course.stray = stray
            if first and out.steps:
                led_to(out.steps, stray)
                if isinstance(self.policy, Recovering):
                    self.policy.strayed(stray.reason.value, stray.url)
            first = False
            course.returns += 1
            way = await self._return(session) if course.returns <= MAX_RETURNS else ""
            after = f"after step {index - 1}: " if index else "before the first step: "
            then = f"; {way}" if way else "; no way back: the episode ends here"
            if course.returns > MAX_RETURNS:
                then = f"; gone back {MAX_RETURNS} times in a row already: the episode ends here"
            out.reject("step", stray.reason, after + stray.detail + then, step_index=index)
            if not way:
                return None

    async def _walled(self, session: Session, what: str, observed: bool = True) -> Stray | None:
        """A bot wall, CAPTCHA or login wall on show (browser/walls.py): no data, like an
        error page; the session goes back. `what`: the observation it is part of; `observed`:
        read from the observation just taken (else the page is read again)."""
        read = on_page(session, observed)
        wall = await self._bounded(read, f"{what}: reading the page for a bot wall")
        url = session.page.url
        return None if wall is None else Stray(RejectReason.BOT_WALL, url, wall.describe(url))

    async def _return(self, session: Session) -> str:
        """Back to a page in scope: history back if that lands there, else the start URL again
        (vetted like the first load). Says which, or "" when neither worked."""
        course = self.course
        await self._bounded(session.act(Back()), "going back from a page out of scope")
        if course.stray_of(session) is None:
            return "went back"
        try:
            await self._bounded(session.goto(course.start_url), "reopening the start URL")
        except NavigationFailed:
            return ""
        return "reopened the start URL" if course.stray_of(session) is None else ""
