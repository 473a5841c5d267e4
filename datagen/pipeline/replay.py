"""One replay of some of a solved episode's steps, sealed (replay verification, verify.py).

Replayer.passes(steps) ─► a context as new as a fresh one whose only way out is a
    SealedProxy (sandbox.py, seal.py), its requests answered by a ReplayRouter (router.py)
    ─► the start URL, the steps, each on the episode's element (role, name, position among
    equals) ─► the fail and success checks ─► passed or not; what it asked of the network
    counted (`requests`)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from datagen.annotate.describe import describe, element_under
from datagen.browser.consent import answer_consent
from datagen.browser.failures import BROWSER_FAILURES, BrowserDied
from datagen.browser.session import Session
from datagen.browser.triage import run_check
from datagen.pipeline.context import ShardContext
from datagen.pipeline.recording import Recording
from datagen.pipeline.router import ReplayRouter
from datagen.pipeline.rows import EpisodeOutcome, Hit
from datagen.pipeline.sandbox import ReplayContext, Requests
from datagen.pipeline.straggler import StragglerWatch
from datagen.records import (
    Action,
    Click,
    Decision,
    Element,
    ImageData,
    Observation,
    PageState,
    TaskSpec,
)

log = logging.getLogger(__name__)
OBSERVED_UP_TO = 2  # steps: a replay this short takes its screens as it goes
# A message in a live region still shown this long after the last step's state is no toast:
# the bundled sites' toasts go after 1.2 to 3 s from when they appear, before the scan
PERSIST_S = 3.0
# A watched subject on no live region (a button's "Added ✓" for 1.2 s) still shown this long
# after the last step is no passing message either
BRIEF_S = 1.5


@dataclass
class Screens:
    """The minimal path, observed: by step index, its screen, the action in words there and
    the page's URL; `final`: the screen and URL after its last action (the done step's)."""

    steps: dict[int, tuple[ImageData, str, str]] = field(default_factory=dict)
    final: tuple[ImageData, str] | None = None
    # observed: the page's state before each step, then after the last (task synthesis)
    states: list[PageState] = field(default_factory=list)
    # with a gap: the start state once more, that many seconds later (what moves by itself)
    again: PageState | None = None
    acted: dict[int, Action] = field(default_factory=dict)  # by step: the action as done here
    # at each of `states`: how many of the episode's writes the replay had repeated (the
    # writes of step i: the recording's writes[writes[i]:writes[i + 1]])
    writes: list[int] = field(default_factory=list)
    # watching messages (task synthesis): the lines the page's live regions showed at each of
    # `states`, and the state once those that named a watched subject went, or PERSIST_S
    # after the last step; with no such line, once the watched subjects left the page's text,
    # or BRIEF_S after it (None: nothing watched)
    live: list[set[str]] = field(default_factory=list)
    later: PageState | None = None


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
        self.hits = out.hits  # step index -> the element its click landed on (typing's field)
        # the episode's consent dialog, answered (None: it met none, and a replay asks nothing)
        self.consent = out.episode.consent_action if out.episode is not None else None
        self.recording = Recording.load(out.recording) if out.recording else Recording()
        config = ctx.config.annotation.verify
        self.live = frozenset(config.live if config is not None else ())
        self.replays = 0
        recorded = [url for _, url in self.recording.safe] + [e.url for e in self.recording.writes]
        agent = ctx.config.run.hosts.user_agent
        self.sandbox = ReplayContext(ctx.host, self.live, [start_url, *recorded], agent)
        self.divergences: list[str] = []
        self.passed: list[tuple[int, ...]] = []  # step sets that passed, in the order found
        self.longest = 0.0  # the slowest replay so far (s): what the observed path may need
        self.seen: dict[tuple[int, ...], bool] = {}
        self.screens: dict[tuple[int, ...], Screens] = {}  # of passing replays observed
        self.watch: StragglerWatch | None = None
        self.states = False  # the replay in progress records its states (`replay`)
        self.gap = 0.0  # and the start state a second time, this many seconds later
        self.watch_text: frozenset[str] = frozenset()  # and the live regions' (Screens.live)
        self.brief_text: frozenset[str] = frozenset()  # a control's own text, followed briefly

    @property
    def requests(self) -> Requests:
        """(fate, kind, method, host) -> requests, over every replay (router.py, seal.py); whole
        once `close` has run."""
        return self.sandbox.requests

    async def close(self) -> None:
        """Close the replays' context (what fires as it closes is refused and counted)."""
        await self.sandbox.close()

    async def passes(self, steps: Sequence[int], likely: bool = True) -> bool:
        """Does the check pass after replaying `steps` (step indices, in order)? A replay of
        at most OBSERVED_UP_TO steps is observed as it goes (`screens`): most minimal paths are
        one or two steps, and their screens then cost no replay of their own. Not one the
        search expects to fail (`likely` False: a proof that a step is needed), whose
        screens would be thrown away."""
        key = tuple(sorted(steps))
        if key not in self.seen:
            self.replays += 1
            began = time.perf_counter()
            observe = likely and len(key) <= OBSERVED_UP_TO
            path = await self.replay(key, observe=observe)
            self.seen[key] = path is not None
            self.longest = max(self.longest, time.perf_counter() - began)
            if path is not None:
                self.passed.append(key)
                if observe:
                    self.screens[key] = path
        return self.seen[key]

    async def replay(
        self,
        steps: tuple[int, ...],
        observe: bool = False,
        judge: bool = True,
        states: bool = False,
        gap: float = 0.0,
        watch: frozenset[str] = frozenset(),
        brief: frozenset[str] = frozenset(),
    ) -> Screens | None:
        """Replay `steps`; the path (its screens and states when `observe`, its states alone
        when `states`, the start state again `gap` seconds after the first when `gap`, the
        live regions' lines at each state and the state once those naming any of `watch` went
        when `watch`, or once `brief`'s left the page's text) if it stayed the episode's
        trajectory and the check passed (not asked unless `judge`), else None."""
        ctx = self.ctx
        router = ReplayRouter(self.recording, self.live)
        try:
            session = await self.sandbox.start(router)
            await session.goto(self.start_url)
            # the consent dialog answered as the episode had it answered: a banner left up
            # covers the page's foot, and clicks there would land on it
            if self.consent is not None:
                await answer_consent(session, ctx.config.browser.consent)
            self.states, self.gap, self.watch_text = states, gap, watch
            self.brief_text = brief
            return await self._run(session, steps, router, observe, judge)
        except (*BROWSER_FAILURES, TimeoutError) as exc:
            await self.sandbox.drop()  # a context a failure went through is not reused
            if not ctx.host.connected:
                raise BrowserDied(f"browser closed while replaying task {self.task.id}") from None
            log.info("replay failed: %s", exc, extra={"task_id": self.task.id})
            return None

    async def _run(
        self,
        session: Session,
        steps: tuple[int, ...],
        router: ReplayRouter,
        observe: bool,
        judge: bool,
    ) -> Screens | None:
        path = await self._steps(session, steps, router, observe)
        if path is None:
            return None
        await session.settle()
        if observe:
            obs = await session.observe()
            image = ImageData(bytes=obs.screenshot, path=f"path-final.{obs.image_format}")
            path.final = (image, obs.url)
            path.states.append(await _state(session, obs))
        elif self.states:
            path.states.append(await session.state())
            await self._messages(session, path, last=True)
        path.writes.append(router.state)
        if await self._failed(session, "after the last step"):
            return None
        if not judge:
            return None if self._diverged(router) else path
        if await run_check(session, self.task.check, self.task.id) is not True:
            if router.refused_gets:  # what it may have needed, for the note
                self.divergences.append(
                    "its check did not pass; GETs the episode never made were refused: "
                    + ", ".join(router.refused_gets)
                )
            return None
        return None if self._diverged(router) else path

    async def _steps(
        self,
        session: Session,
        steps: tuple[int, ...],
        router: ReplayRouter,
        observe: bool,
    ) -> Screens | None:
        path = Screens()
        for index in steps:
            if self.watch is not None:
                self.watch.step_began(index)
            await session.settle()
            if await self._failed(session, f"before step {index}"):
                return None
            action = self.actions[index]
            path.writes.append(router.state)
            elements: Sequence[Element] | None = None
            if observe:  # its scan is the page the click is aimed on: no second one
                elements = await self._observe(session, index, path, action)
            elif self.states:  # what checks read, without a screenshot (task synthesis)
                path.states.append(await session.state())
                await self._messages(session, path)
                if self.gap and len(path.states) == 1:
                    await asyncio.sleep(self.gap)
                    path.again = await session.state()
            if isinstance(action, Click) and index in self.hits:
                if elements is None:
                    elements, _, _ = await session.elements()
                scale = session.config.device_scale_factor
                moved = self._target(elements, index, action, scale)
                if moved is None:
                    return None
                action = moved
            await session.act(action)
            path.acted[index] = action
            if self.watch is not None:
                self.watch.step_ended()
            if self._diverged(router):
                return None
        return path

    def _target(
        self, elements: Sequence[Element], index: int, action: Click, scale: float
    ) -> Click | None:
        """The click of step `index` on the episode's element as this page has it: where it
        was when the element is still there, else its centre now; None (a divergence) when the
        element is not on the page or something else covers it."""
        was = self.hits[index]
        element = find(elements, was)
        if element is None:
            self.divergences.append(
                f"step {index}'s element ({was.role} {was.name!r}, #{was.nth + 1} of its kind) "
                "is not on the replay's page"
            )
            return None
        if element_under(elements, action.x / scale, action.y / scale) is element:
            return action
        x, y = element.box.x + element.box.width / 2, element.box.y + element.box.height / 2
        landed = element_under(elements, x, y)
        if landed is not element:
            now = ("nothing", "") if landed is None else (landed.role, landed.name)
            self.divergences.append(
                f"step {index}'s click would land on {now[0]} {now[1]!r}, not on {was.role} "
                f"{was.name!r} as in the episode"
            )
            return None
        return Click(x=x * scale, y=y * scale)

    async def _observe(
        self, session: Session, index: int, path: Screens, action: Action
    ) -> Sequence[Element]:
        """The screen before step `index` into `path`; its elements."""
        obs = await session.observe()
        image = ImageData(bytes=obs.screenshot, path=f"path-{index:03d}.{obs.image_format}")
        # the episode's target (typing's field, a key's) as found on this screen
        was = self.hits.get(index)
        element = find(obs.elements, was) if was is not None else None
        target = element
        if isinstance(action, Click):
            target = None  # where the click lands on this screen (describe finds it)
            if element is not None:
                scale = obs.device_scale_factor
                if element_under(obs.elements, action.x / scale, action.y / scale) is not element:
                    # the click goes to the element's centre here (_target): say so
                    box = element.box
                    action = Click(
                        x=(box.x + box.width / 2) * scale, y=(box.y + box.height / 2) * scale
                    )
        words = describe(obs, Decision(action=action, target=target))
        path.steps[index] = (image, words, obs.url)
        path.states.append(await _state(session, obs))
        return obs.elements

    async def _messages(self, session: Session, path: Screens, last: bool = False) -> None:
        """With subjects to watch: the live regions' lines into `path.live`; after the last
        step, the state again once the lines that appeared since the start naming a watched
        subject went, or PERSIST_S later (a toast's message is no effect to reward); with no
        such line, once no `brief` subject is in the page's text, or BRIEF_S later (a
        control's own text that lasts a moment, "Added ✓", is none either)."""
        if not self.watch_text:
            return
        path.live.append(await session.live_lines())
        if not last:
            return
        shown = {line for lines in path.live[1:] for line in lines} - path.live[0]
        named = {line for line in shown if any(s in line for s in self.watch_text)}
        if named:
            await session.until_gone(named, PERSIST_S)
        elif self.brief_text:
            await session.until_gone(self.brief_text, BRIEF_S)
        path.later = await session.state()

    async def _failed(self, session: Session, when: str) -> bool:
        """Did the task's `fail` check pass (as in the episode: solved by nothing after it)?"""
        failed = await run_check(session, self.task.fail, self.task.id) is True
        if failed:
            self.divergences.append(f"the task's fail check passed {when}")
        return failed

    def _diverged(self, router: ReplayRouter) -> bool:
        if router.diverged is None:
            return False
        why = f"a replay sent {router.diverged} (refused, never sent)"
        if why not in self.divergences:
            self.divergences.append(why)
        return True


async def _state(session: Session, obs: Observation) -> PageState:
    """The page's state as checks read it, from an observation and the body's text now."""
    text = await session.page.evaluate("() => document.body ? document.body.innerText : ''")
    return PageState.of(obs.url, str(text), obs.elements)


def find(elements: Sequence[Element], hit: Hit) -> Element | None:
    """The element `hit` names on a page: its role and name, at its position among equals."""
    equals = [e for e in elements if (e.role, e.name) == (hit.role, hit.name)]
    return equals[hit.nth] if hit.nth < len(equals) else None
