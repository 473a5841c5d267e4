"""Replay verification of a solved episode: which of its steps does the task need?

    EpisodeOutcome (check passed, its traffic recorded) ─► replays on fresh contexts, answered
        from that recording (recording.py) ─► `needed` on its StepRows, `verification` on its
        EpisodeRow ─► the needed steps replayed once more, observed: `path_*` on those steps

An explore episode that passes its check did much besides the task; a sample pairing the
task's instruction with such a click teaches the wrong thing, so exports give the instruction
only to the steps shown needed here (annotation.verify).

How: the episode's actions that went through (no action error: a step not taken, or one that
led off the scope and was undone, is left out from the start) are replayed from the start URL
on a browser context of the same worker as new as a fresh one (sandbox.py: one context for all
of an episode's replays, wiped between them; its consent dialog answered as the episode's was),
each after the page settles, and the check is asked at the end. An episode of one action, none
failed, needs no replay: the episode itself proved it (its check failed on the start page and
passed after the action; a replay of it would be the episode again, and its path the episode's
own screens). Else first the last action alone (most explore successes are one click); else the
shortest passing suffix: the last 2, 3, 6, 12, … actions, the whole episode last (does the
success reproduce at all?), then a binary search ("the last steps did it" costs a few replays,
not a search over the whole episode); then delta debugging (Zeller's ddmin, on complements)
drops steps of that suffix while the check still passes (narrow.py). A replay is observed as it
goes (its screens: the path's samples) only where a pass would likely end the search (a short
one), never a proof, which should fail: a screen no sample shows is not taken. A replay acts on
elements, not pixels: a click finds the episode's element (role, name, its position among
equals) on the replay's own page and clicks it where it is now; not found is a divergence. A
replay passes only if it stays the episode's trajectory: the site is asked nothing the episode
did not ask, in its order (router.py), and the task's `fail` check never passes; it stops at
the first divergence.

Only what a replay proved is said: a step is needed when a replay without it failed (or the
episode itself showed that: its check was false after the steps before it, every one of which
went through), not needed when one without it passed, and unknown (`needed = null`) when the
search stopped before asking (`max_replays`, time). An episode whose every kept step is proven
is `minimal`: only its needed steps carry the task's instruction. One cut short is `reduced`
(its steps give step-level samples only), or `not_reproduced` when no replay passed.

A replay is an experiment on our side only, sealed: its requests are answered from the
episode's own recorded traffic or refused (router.py), and its context's only connection out
is a proxy of its own (browser/seal.py) that refuses every host but those in
`annotation.verify.live`, until the context is gone. Every request a replay made is counted on
the episode by fate, kind, method and host (`verify_requests`; `verify_network`: what went out,
`verify_aborted`: what was refused). One time budget: the episode and all its replays stay
inside `run.episode_timeout_s`, under the straggler watch; `max_replays` bounds them too. Then
the needed steps of a minimal episode are replayed once more, observing: task-labelled samples
show these screens (`path_screenshot`), whose history and screen agree; a path that does not
pass again leaves the episode `not_reproduced`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

from pydantic import TypeAdapter

from datagen.config import VerifyConfig
from datagen.pipeline.context import ShardContext
from datagen.pipeline.narrow import minimal, prove, shown_by_episode, suffix
from datagen.pipeline.recording import discard_recording
from datagen.pipeline.replay import Replayer, Screens
from datagen.pipeline.rows import EpisodeOutcome
from datagen.pipeline.straggler import StepClock, StragglerWatch, Straggling
from datagen.pipeline.synthesis import synthesise
from datagen.records import Action, RejectReason, TaskSpec

ACTION: TypeAdapter[Action] = TypeAdapter(Action)


@dataclass
class Verdict:
    """Where the verification stands: status, the smallest step set that passed (`kept`), those
    of it proven needed, why it stopped, and the observed path."""

    status: str = "not_reproduced"
    kept: set[int] = field(default_factory=set)
    proven: set[int] = field(default_factory=set)
    note: str | None = None
    path: Screens | None = None
    everything: list[int] = field(default_factory=list)  # the episode's actions replayed

    def settle(self, replayer: Replayer, why: str | None) -> None:
        """`kept` is final: the steps a replay without which failed are proven; all of them,
        and the search finished (`why` None): `full` (minimal once its path is observed)."""
        # the empty set fails: the check failed at the start
        self.proven = {
            s
            for s in self.kept
            if replayer.seen.get(tuple(sorted(self.kept - {s})), len(self.kept) > 1) is False
        }
        self.status = "full" if why is None and self.proven == self.kept else "reduced"
        self.note = why

    def cut(self, replayer: Replayer, why: str) -> None:
        """Stopped before the end: the smallest set shown to pass, with only what replays
        proved about its steps (`reduced`), else nothing (`not_reproduced`)."""
        if self.status == "minimal":
            return  # the observed path finished before the cut
        if replayer.passed:
            self.kept = set(min((len(p), p) for p in replayer.passed)[1])
            self.settle(replayer, f"verification cut short: {why}")
            self.status = "reduced"
        else:
            self.status, self.kept, self.proven = "not_reproduced", set(), set()
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
    taken = sum(1 for s in out.steps if s.action_type != "done")
    replayer.seen.update(shown_by_episode(sorted(actions), taken))
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
            if result.status == "full":
                await _observe_path(replayer, result)
            tasks = ctx.config.annotation.tasks
            if tasks is not None and result.status == "minimal" and result.kept:
                steps = tuple(sorted(result.kept))
                # every step needed: the path is the search's own replay of them when it was
                # observed as it went (no replay of synthesis's own)
                path = result.path or replayer.screens.get(steps)
                await synthesise(out, task, replayer, path, steps, tasks)
    except TimeoutError:
        result.cut(
            replayer,
            f"its time ran out: run.episode_timeout_s ({run.episode_timeout_s:g}s) holds the episode and all its replays",
        )
    except Straggling as exc:
        result.cut(replayer, f"the straggler watch ended it: {exc}")
    finally:
        await replayer.close()  # before its requests are written: what fires at close counts
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
    # the empty set fails: the last one is needed (one action all the episode did passes
    # without a replay: `seen` holds what the episode showed)
    if await replayer.passes(steps[-1:]):
        result.kept = result.proven = set(steps[-1:])
        result.status = "full"
        return
    if len(steps) == 1:
        result.note = _not_reproduced(replayer, "its action")
        return

    def stop() -> str | None:
        if replayer.replays >= config.max_replays:
            return f"annotation.verify.max_replays ({config.max_replays}) replays made"
        spent = time.perf_counter() - began
        if left - spent < 2 * replayer.longest:  # keep time to observe the path it finds
            return "the time left (run.episode_timeout_s) would not hold another replay"
        return None

    start, stopped = await suffix(replayer, steps, stop)
    if start is None:  # not even all of them passed: nothing to say of its steps
        if stopped is None:
            result.note = _not_reproduced(replayer, "all its actions")
        else:
            result.cut(replayer, stopped)
        return
    kept = steps[start:]
    if stopped is None:  # its first step is needed (the suffix after it failed): ddmin the rest
        rest, stopped = await minimal(replayer, kept[1:], stop, fixed=kept[:1])
        kept = kept[:1] + rest
    if stopped is None:
        kept, stopped = await prove(replayer, kept, stop)
    result.kept = set(kept)
    result.settle(replayer, stopped)


def _not_reproduced(replayer: Replayer, what: str) -> str:
    """The note of an episode no replay reproduced: the last divergence, if there was one."""
    why = "; ".join(replayer.divergences[-1:]) or "its check did not pass again"
    return f"a replay of {what} on a fresh context did not reproduce: {why}"


async def _observe_path(replayer: Replayer, result: Verdict) -> None:
    """Replay the needed steps once more, observing (module docstring); a path that does not
    pass again leaves the episode not reproduced."""
    if sorted(result.kept) == result.everything:  # nothing left out: the episode's screens
        result.status = "minimal"
        return
    key = tuple(sorted(result.kept))
    path = replayer.screens.get(key)
    if path is None:
        path = await replayer.replay(key, observe=True)
        replayer.replays += 1
    if path is not None:
        result.path, result.status = path, "minimal"
        return
    why = "; ".join(replayer.divergences[-1:]) or "its check did not pass"
    result.status, result.kept, result.proven = "not_reproduced", set(), set()
    result.note = f"the minimal path did not reproduce when replayed observing: {why}"


def _flag(status: str, result: Verdict, index: int, done: bool) -> bool | None:
    """A step's `needed`: true only when a replay proved it, false when one passed without it,
    null when nothing decided it (not reproduced; a reduced search that never left it out)."""
    if status == "not_reproduced":
        return None
    if done:  # the done of a solved episode: needed once its path is proven
        return True if status == "minimal" else None
    if index in result.proven:
        return True
    return None if index in result.kept else False


def _write(out: EpisodeOutcome, result: Verdict, replayer: Replayer, began: float) -> None:
    """The verification's columns on the episode's rows (and its reject when not reproduced)."""
    episode = out.episode
    assert episode is not None
    status = "minimal" if result.status == "full" else result.status
    if status == "not_reproduced":
        detail = result.note or "a replay of its actions on a fresh context did not pass again"
        out.reject("verify", RejectReason.NOT_REPRODUCED, detail)
    path = result.path
    last = max(result.kept, default=-1)
    for i, step in enumerate(out.steps):
        flag = _flag(status, result, i, step.action_type == "done")
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
            # task synthesis's replays are counted apart (ShardResult.synth_s)
            "verify_ms": round((time.perf_counter() - began) * 1000 - out.synth_ms, 1),
            "verify_note": result.note,
            **request_columns(replayer),
        }
    )


def request_columns(replayer: Replayer) -> dict[str, list[str]]:
    """What the replays asked of the network: every request by fate, kind, method and host
    (`verify_requests`), what went out (`verify_network`) and what was refused
    (`verify_aborted`), by method and host."""
    lines, network, aborted = [], Counter[str](), Counter[str]()
    for (fate, kind, method, host), n in sorted(replayer.requests.items()):
        lines.append(f"{fate} {kind} {method} {host} {n}")
        if fate == "live":
            network[f"{method} {host}"] += n
        elif fate == "refused":
            aborted[f"{method} {host}"] += n
    return {
        "verify_requests": lines,
        "verify_network": [f"{k} {n}" for k, n in sorted(network.items())],
        "verify_aborted": [f"{k} {n}" for k, n in sorted(aborted.items())],
    }
