"""Replay verification of a solved episode: which of its steps does the task need?

    EpisodeOutcome (check passed, its traffic recorded) ─► replays on fresh contexts, answered
        from that recording (recording.py) ─► `needed` on its StepRows, `verification` on its
        EpisodeRow ─► the needed steps replayed once more, observed: `path_*` on those steps

An explore episode that passes its check did much besides the task; a sample pairing the
task's instruction with such a click teaches the wrong thing, so exports give the instruction
only to the steps shown needed here (annotation.verify).

How: the episode's actions that went through (no action error: a step not taken, or one that
led off the scope and was undone, is left out from the start) are replayed from the start URL
on a fresh browser context of the same worker (its consent dialog answered as the episode's
was), each after the page settles, and the check is asked at the end. First the last action
alone (most explore successes are one click); else all of them (does the success reproduce at
all?), then delta debugging (Zeller's ddmin, on complements) drops steps while the check still
passes. When it ends, every remaining step is needed: leaving any one out fails the check
(1-minimal). A replay passes only if it stays the episode's trajectory: each click lands on the
element (role and name) the episode's click landed on, the site is asked nothing the episode
did not ask (recording.py) and the task's `fail` check never passes: else it diverged.

A replay is an experiment on our side only: its requests are answered from the episode's own
recorded traffic, GETs it never made go to the network, and any other request is refused unless
its host is in `annotation.verify.live` (what went out is on the episode: `verify_network`,
`verify_aborted`). One time budget: the episode and all its replays stay inside
`run.episode_timeout_s`, under the straggler watch; `max_replays` bounds them too. A search cut
short keeps the smallest step set that passed (`reduced`), or none (`not_reproduced`), and
`verify_note` says why. Then the needed steps are replayed once more, observing: task-labelled
samples show these screens (`path_screenshot`), whose history and screen agree; a path that
does not pass again, or finds no time, leaves the episode `not_reproduced`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import TypeAdapter

from datagen.annotate.describe import describe, element_under
from datagen.browser.consent import answer_consent
from datagen.browser.failures import BROWSER_FAILURES, BrowserDied
from datagen.browser.session import Session
from datagen.browser.triage import run_check
from datagen.config import VerifyConfig
from datagen.pipeline.context import ShardContext
from datagen.pipeline.recording import Recording, ReplayRouter, discard_recording
from datagen.pipeline.rows import EpisodeOutcome
from datagen.pipeline.straggler import StepClock, StragglerWatch, Straggling
from datagen.records import Action, Click, Decision, ImageData, RejectReason, TaskSpec

log = logging.getLogger(__name__)
ACTION: TypeAdapter[Action] = TypeAdapter(Action)


@dataclass
class Screens:
    """The minimal path, observed: by step index, its screen, the action in words there and
    the page's URL; `final`: the screen and URL after its last action (the done step's)."""

    steps: dict[int, tuple[ImageData, str, str]] = field(default_factory=dict)
    final: tuple[ImageData, str] | None = None


class Replayer:
    """Replays subsets of one episode's actions, each on a fresh context, within a budget."""

    def __init__(
        self,
        task: TaskSpec,
        start_url: str,
        actions: dict[int, Action],
        ctx: ShardContext,
        out: EpisodeOutcome,
    ) -> None:
        self.task, self.start_url, self.actions, self.ctx = task, start_url, actions, ctx
        self.hits = out.hits  # step index -> (role, name) its click landed on
        self.recording = Recording.load(out.recording) if out.recording else Recording()
        config = ctx.config.annotation.verify
        self.live = frozenset(config.live if config is not None else ())
        self.replays = 0
        self.network: Counter[str] = Counter()
        self.aborted: Counter[str] = Counter()
        self.divergences: list[str] = []
        self.passed: list[tuple[int, ...]] = []  # step sets that passed, in the order found
        self.longest = 0.0  # the slowest replay so far (s): what the observed path may need
        self._seen: dict[tuple[int, ...], bool] = {}
        self.watch: StragglerWatch | None = None

    async def passes(self, steps: Sequence[int]) -> bool:
        """Does the check pass after replaying `steps` (step indices, in order)?"""
        key = tuple(sorted(steps))
        if key not in self._seen:
            self.replays += 1
            began = time.perf_counter()
            self._seen[key] = await self.replay(key) is not None
            self.longest = max(self.longest, time.perf_counter() - began)
            if self._seen[key]:
                self.passed.append(key)
        return self._seen[key]

    async def replay(self, steps: tuple[int, ...], observe: bool = False) -> Screens | None:
        """Replay `steps`; the path (its screens when `observe`) if it stayed the episode's
        trajectory and the check passed, else None."""
        ctx = self.ctx
        router = ReplayRouter(self.recording, self.live)
        try:
            async with ctx.host.session() as session:
                await session.context.route("**/*", router.handle)  # before the first request
                await session.context.route_web_socket("**/*", router.socket)
                session.watch_documents()
                if ctx.config.run.hosts.user_agent:  # as the episode's load had it
                    agent = {"userAgent": ctx.config.run.hosts.user_agent}
                    await session.cdp.send("Network.setUserAgentOverride", agent)
                await session.goto(self.start_url)
                # the consent dialog answered as the episode had it answered: a banner left
                # up covers the page's foot, and clicks there would land on it
                await answer_consent(session, ctx.config.browser.consent)
                path = await self._steps(session, steps, router, observe)
                if path is None:
                    return None
                await session.settle()
                if observe:
                    obs = await session.observe()
                    image = ImageData(bytes=obs.screenshot, path=f"path-final.{obs.image_format}")
                    path.final = (image, obs.url)
                if await self._failed(session, "after the last step"):
                    return None
                if await run_check(session, self.task.check, self.task.id) is not True:
                    return None
                return None if self._diverged(router) else path
        except (*BROWSER_FAILURES, TimeoutError) as exc:
            if not ctx.host.connected:
                raise BrowserDied(f"browser closed while replaying task {self.task.id}") from None
            log.info("replay failed: %s", exc, extra={"task_id": self.task.id})
            return None
        finally:
            self.network.update(router.network)
            self.aborted.update(router.aborted)

    async def _steps(
        self, session: Session, steps: tuple[int, ...], router: ReplayRouter, observe: bool
    ) -> Screens | None:
        path = Screens()
        for index in steps:
            if self.watch is not None:
                self.watch.step_began(index)
            await session.settle()
            if await self._failed(session, f"before step {index}"):
                return None
            action = self.actions[index]
            if observe:
                await self._observe(session, index, path, action)
            if isinstance(action, Click) and index in self.hits:
                elements, _, _ = await session.elements()
                scale = session.config.device_scale_factor
                hit = element_under(elements, action.x / scale, action.y / scale)
                landed = None if hit is None else (hit.role, hit.name)
                if landed != self.hits[index]:
                    was, now = self.hits[index], landed or ("nothing", "")
                    self.divergences.append(
                        f"step {index}'s click landed on {now[0]} {now[1]!r}, not on "
                        f"{was[0]} {was[1]!r} as in the episode"
                    )
                    return None
            await session.act(action)
            if self.watch is not None:
                self.watch.step_ended()
            if self._diverged(router):
                return None
        return path

    async def _observe(self, session: Session, index: int, path: Screens, action: Action) -> None:
        obs = await session.observe()
        image = ImageData(bytes=obs.screenshot, path=f"path-{index:03d}.{obs.image_format}")
        # the episode's target (typing's field, a key's) as found on this screen, by role+name
        was = self.hits.get(index)
        target = next((e for e in obs.elements if was == (e.role, e.name)), None)
        if isinstance(action, Click):
            target = None  # where the click lands on this screen (describe finds it)
        words = describe(obs, Decision(action=action, target=target))
        path.steps[index] = (image, words, obs.url)

    async def _failed(self, session: Session, when: str) -> bool:
        """Did the task's `fail` check pass (as in the episode: solved by nothing after it)?"""
        failed = await run_check(session, self.task.fail, self.task.id) is True
        if failed:
            self.divergences.append(f"the task's fail check passed {when}")
        return failed

    def _diverged(self, router: ReplayRouter) -> bool:
        if router.diverged is None:
            return False
        why = (
            f"a replay sent {router.diverged}: the episode never made that request with the "
            "site's cookies as they were (refused, never sent)"
        )
        if why not in self.divergences:
            self.divergences.append(why)
        return True


async def minimal(
    replayer: Replayer, steps: list[int], stop: Callable[[], str | None]
) -> tuple[list[int], str | None]:
    """The steps left after ddmin (complements only), and why it stopped early (None: it
    finished). `steps` must pass; the empty set never does (the check failed at the start).
    `stop` is asked before each replay: a reason to stop, or None."""
    current, n = list(steps), 2
    while len(current) >= 2:
        size = -(-len(current) // n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        for chunk in chunks:
            rest = [s for s in current if s not in chunk]
            why = stop()
            if why is not None:
                return current, why
            if await replayer.passes(rest):
                current, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return current, None


@dataclass
class Verdict:
    """Where the verification stands: status, needed steps, why, and the observed path."""

    status: str = "not_reproduced"
    needed: set[int] = field(default_factory=set)
    note: str | None = None
    path: Screens | None = None
    everything: list[int] = field(default_factory=list)  # the episode's actions replayed

    def cut(self, replayer: Replayer, why: str) -> None:
        """Stopped before the end: the smallest set shown to pass whose screens are known
        (all the actions: the episode's own screens), else nothing."""
        if self.path is not None:  # the observed path finished before the cut
            return
        if tuple(self.everything) in replayer.passed or self.status == "full":
            self.status, self.needed = "reduced", set(self.everything)
            self.note = f"verification cut short, all its actions kept: {why}"
        else:
            self.status, self.needed = "not_reproduced", set()
            self.note = f"verification cut short before a replay passed: {why}"


async def verify(out: EpisodeOutcome, task: TaskSpec, ctx: ShardContext) -> None:
    """Mark which steps of a solved episode its task needs (module docstring); nothing for an
    episode that is not solved or when `annotation.verify` is off. Its recorded traffic is
    removed either way."""
    try:
        await _verify(out, task, ctx)
    finally:
        discard_recording(out)


async def _verify(out: EpisodeOutcome, task: TaskSpec, ctx: ShardContext) -> None:
    config, episode = ctx.config.annotation.verify, out.episode
    if config is None or episode is None or episode.success is not True or task.check is None:
        return
    began = time.perf_counter()
    actions = {
        i: ACTION.validate_json(s.action_json)
        for i, s in enumerate(out.steps)
        if s.action_type != "done" and s.action_error is None
    }
    replayer = Replayer(task, ctx.resolve_url(task.start_url), actions, ctx, out)
    # one budget: what the episode left of run.episode_timeout_s
    left = ctx.config.run.episode_timeout_s - episode.duration_s
    run = ctx.config.run
    clock = ctx.pool.clock if ctx.pool is not None else StepClock()
    replayer.watch = StragglerWatch(clock, run.straggler_s, run.straggler_factor)
    result = Verdict()
    try:
        async with asyncio.timeout(max(left, 0.0)), replayer.watch.watching():
            replayer.watch.started()
            await _search(replayer, sorted(actions), config, result, left, began)
            if result.status != "not_reproduced" and result.needed:
                await _observe_path(replayer, result)
    except TimeoutError:
        result.cut(
            replayer,
            f"its time ran out: run.episode_timeout_s ({run.episode_timeout_s:g}s) holds the episode and all its replays",
        )
    except Straggling as exc:
        result.cut(replayer, f"the straggler watch ended it: {exc}")
    _write(out, result, replayer, began)


async def _search(
    replayer: Replayer,
    steps: list[int],
    config: VerifyConfig,
    result: Verdict,
    left: float,
    began: float,
) -> None:
    """The needed steps of actions `steps`, and the verification status, into `result`."""
    result.everything = steps
    if not steps:  # solved by its done alone: the check passed at the start (a task reject)
        result.status = "minimal"
        return
    if await replayer.passes(steps[-1:]):
        result.status, result.needed = "minimal", set(steps[-1:])
        return
    if len(steps) == 1 or not await replayer.passes(steps):
        why = "; ".join(replayer.divergences[-1:]) or "its check did not pass again"
        result.note = f"a replay of all its actions on a fresh context did not reproduce: {why}"
        return
    result.status, result.needed = "full", set(steps)

    def stop() -> str | None:
        if replayer.replays >= config.max_replays:
            return f"annotation.verify.max_replays ({config.max_replays}) replays made"
        spent = time.perf_counter() - began
        if left - spent < 2 * replayer.longest:  # keep time to observe the path it finds
            return "the time left (run.episode_timeout_s) would not hold another replay"
        return None

    kept, stopped = await minimal(replayer, steps, stop)
    result.needed = set(kept)
    result.status = "full" if stopped is None else "reduced"  # full: minimal once observed
    result.note = stopped


async def _observe_path(replayer: Replayer, result: Verdict) -> None:
    """Replay the needed steps once more, observing (module docstring); a path that does not
    pass again keeps all the actions (their screens are the episode's own) or none."""
    if sorted(result.needed) == result.everything:  # nothing left out: the episode's screens
        result.status = "minimal" if result.status == "full" else result.status
        return
    path = await replayer.replay(tuple(sorted(result.needed)), observe=True)
    replayer.replays += 1
    if path is not None:
        result.path = path
        result.status = "minimal" if result.status == "full" else result.status
        return
    why = "; ".join(replayer.divergences[-1:]) or "its check did not pass"
    result.path = None
    result.cut(replayer, f"the minimal path did not reproduce when replayed observing: {why}")


def _write(out: EpisodeOutcome, result: Verdict, replayer: Replayer, began: float) -> None:
    """The verification's columns on the episode's rows (and its reject when not reproduced)."""
    episode = out.episode
    assert episode is not None
    status = "minimal" if result.status == "full" else result.status
    if status == "not_reproduced":
        detail = result.note or "a replay of its actions on a fresh context did not pass again"
        out.reject("verify", RejectReason.NOT_REPRODUCED, detail)
    path = result.path
    last = max(result.needed, default=-1)
    for i, step in enumerate(out.steps):
        flag = (
            None
            if status == "not_reproduced"
            else (i in result.needed or step.action_type == "done")
        )
        update: dict[str, object] = {"needed": flag}
        if flag and path is not None:
            shown = path.steps.get(i)
            if shown is None and step.action_type == "done" and i > last and path.final:
                shown = (path.final[0], step.action_description, path.final[1])
            if shown is not None:
                image = shown[0].model_copy(
                    update={"path": f"{out.ids['episode_id']}-{shown[0].path}"}
                )
                update |= {
                    "path_screenshot": image,
                    "path_action_description": shown[1],
                    "path_url": shown[2],
                }
        out.steps[i] = step.model_copy(update=update)
    out.episode = episode.model_copy(
        update={
            # the check passed (success stays true), but not for these steps: not solved
            "status": "not_reproduced" if status == "not_reproduced" else episode.status,
            "verification": status,
            "verified_steps": sum(1 for s in out.steps if s.needed),
            "verify_replays": replayer.replays,
            "verify_ms": round((time.perf_counter() - began) * 1000, 1),
            "verify_note": result.note,
            "verify_network": [f"{k} {n}" for k, n in sorted(replayer.network.items())],
            "verify_aborted": [f"{k} {n}" for k, n in sorted(replayer.aborted.items())],
        }
    )
