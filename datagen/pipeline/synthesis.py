"""Task synthesis: a verified episode's effects, as tasks proven by sealed replays (issue 43).

    verify.py (a minimal episode: its needed steps, its Replayer, the recording still there,
      the observed path: the states before each needed step and after the last)
      ─► effects between the start state and the state after each of the first k steps
         (annotate/tasks.py) ─► candidates, each a check; those another episode of the shard
         from the same start proved already are left out (no replay when none is left)
      ─► no candidate with words: each dropped as `no_words`, no replay (none can be kept)
      ─► one more replay, its states scanned at each point; the first of the shard for its
         start observes the start twice, GAP_S apart; a message a live region showed that
         names a worded candidate is followed until it goes (replay.PERSIST_S at most)
         ─► kept: false on every start state (both replays', the later one), true after its
         demonstration on both replays, nothing in it that moved between the observations of
         the start or between the two replays' states after the same steps, and not a
         message of a live region gone a moment later (`transient`: a toast)
      ─► TaskRow per candidate (kept, or the proof step that dropped it) on EpisodeOutcome.tasks
    shard.py, once the shard's episodes ended: specific() ─► false on the final state of every
      other episode from the same start that did not act on the demonstration's last element;
      a `fail` check from a failure message those that did act on it without the effect showed
      (annotate/failure.py)

Each task also records the writes its demonstration sent (`TaskRow.writes`): the replay
repeats the episode's state-changing requests in order, so those between two of its states
(`Screens.writes`) are that step's.

A check is decided on a scanned state by the same pure rule live and offline
(records/state.py), so one scan per point decides every candidate. Replays are on fresh
contexts answered from the episode's own recording (replay.py), so the site is never touched
again. A task's demonstration is its first k needed steps, as the replay did them (a click
where its element is on the replay's page): what a `scripted` run of the exported task
replays.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from datagen.annotate.failure import fail_check
from datagen.annotate.reword import ROLE, reword
from datagen.annotate.tasks import Act, Effect, effects, instruction, mask, volatile
from datagen.config import TasksConfig
from datagen.pipeline.context import ShardContext, SynthMemo
from datagen.pipeline.replay import Replayer, Screens
from datagen.pipeline.rows import EpisodeOutcome, digest
from datagen.records import Action, Click, Key, PageState, TaskRow, TaskSpec, TypeText, action_repr
from datagen.url import path_of, strip_credentials

# Between two observations of a start page: a clock or a counter that ticks each second or
# faster shows in it (two replays' start states come at the same moment after the load, and
# a counter that counts from the load reads the same in both). Paid once per start and shard
# that has a candidate with words.
GAP_S = 1.5


@dataclass
class Candidate:
    """An effect of the demonstration's first `k` steps, and why its proof dropped it."""

    k: int
    effect: Effect
    dropped: str | None = None
    words: str | None = None  # its instruction (None: none decides it)


async def synthesise(
    out: EpisodeOutcome,
    task: TaskSpec,
    replayer: Replayer,
    path: Screens | None,
    steps: tuple[int, ...],
    config: TasksConfig,
) -> None:
    """Candidates from the needed `steps` of a minimal episode, proven (module docstring),
    onto `out.tasks`; the time it took on `out.synth_ms`."""
    began = time.perf_counter()
    memo: SynthMemo = replayer.ctx.synth
    start_url = strip_credentials(task.start_url)
    # effects this episode is proving: the shard's other episodes from the start leave them
    proven = memo.proven.setdefault(start_url, set())
    claimed: set[str] = set()
    kept: set[str] = set()
    try:
        if path is None or len(path.states) != len(steps) + 1:  # verify did not observe it
            path = await replayer.replay(steps, judge=False, states=True)
        if path is None or len(path.states) != len(steps) + 1:
            return
        out.path_states = list(path.states)  # the fail check must be false on them (specific)
        found = _candidates(path.states, config, proven)
        if not found:
            return
        claimed = {c.effect.key for c in found}
        proven |= claimed
        for c in found:  # before the replay: only a task with words is watched for a toast
            c.words = instruction(c.effect, _acts(replayer, steps[: c.k]))
        if not any(c.words for c in found):  # none can be kept: no replay to prove them
            out.tasks += _rows(out, task, replayer, found, steps, path, config, 0)
            return
        watch = frozenset(c.effect.subject for c in found if c.words and c.effect.subject)
        again = await _replay_again(
            replayer, steps, memo, start_url, watch, _brief(replayer, steps, found)
        )
        starts = _prove(found, path, again, memo.moved.get(start_url, set()))
        rows = _rows(out, task, replayer, found, steps, path, config, starts)
        kept = {r.effect for r in rows if r.kept}
        out.tasks += rows
    finally:
        # what this episode claimed and did not prove, another episode may (the shard's
        # episodes synthesise at once: a claim, not a proof, keeps two from one effect)
        proven -= claimed - kept
        out.synth_ms += (time.perf_counter() - began) * 1000


async def _replay_again(
    replayer: Replayer,
    steps: tuple[int, ...],
    memo: SynthMemo,
    start_url: str,
    watch: frozenset[str],
    brief: frozenset[str] = frozenset(),
) -> Screens | None:
    """The proof's second replay, its states scanned, the live regions' messages naming a
    subject of `watch` followed until they go (replay.PERSIST_S at most). The shard's first
    for `start_url` observes the start twice, GAP_S apart, into `memo.moved`; the others (the
    shard's episodes synthesise at once) wait for that instead of waiting GAP_S each."""
    gauged = memo.gauged.get(start_url)
    if gauged is not None:
        again = await replayer.replay(steps, judge=False, states=True, watch=watch, brief=brief)
        await gauged.wait()
        return again
    memo.gauged[start_url] = done = asyncio.Event()
    try:
        again = await replayer.replay(
            steps, judge=False, states=True, gap=GAP_S, watch=watch, brief=brief
        )
        if again is not None and again.again is not None:
            memo.moved[start_url] = volatile(again.states[0], again.again)
        return again
    finally:
        done.set()  # a failed replay leaves no observation: what moved is then unknown


def _candidates(states: list[PageState], config: TasksConfig, proven: set[str]) -> list[Candidate]:
    """Each effect once, at the fewest steps that made it, of the configured kinds, but those
    in `proven`."""
    found: list[Candidate] = []
    seen = set(proven)
    for k in range(1, len(states)):
        for effect in effects(states[0], states[0], states[k]):
            if effect.kind in config.kinds and effect.key not in seen:
                seen.add(effect.key)
                found.append(Candidate(k, effect))
    return found[: 4 * config.per_episode]  # the most telling (tasks.KINDS order per k)


def _prove(found: list[Candidate], first: Screens, again: Screens | None, moved: set[str]) -> int:
    """Mark each candidate with the first proof step it fails (None: proven). `first`: the
    replay its effects were read from; `again`: a second replay, its states scanned at each
    point; `moved`: what moved on the start page between two observations a gap apart.
    Returns how many observations of the start state the kept ones are false on."""
    starts = [first.states[0]]
    if again is not None:
        starts += [s for s in [*again.states[:1], again.again] if s is not None]
        for mine, theirs in zip(first.states, again.states, strict=False):
            moved = moved | volatile(mine, theirs)  # not the same after the same steps
    for c in found:
        if mask(c.effect.subject) in moved:
            c.dropped = "volatile"
        elif any(c.effect.check.holds_on(s) is not False for s in starts):
            c.dropped = "holds_at_start"
        elif c.effect.check.holds_on(first.states[c.k]) is not True:
            c.dropped = "not_after_demo"
        elif (
            again is None
            or len(again.states) <= c.k
            or c.effect.check.holds_on(again.states[c.k]) is not True
        ):
            c.dropped = "not_again"
        elif _transient(c, again):
            c.dropped = "transient"
    return len(starts)


def _brief(replayer: Replayer, steps: tuple[int, ...], found: list[Candidate]) -> frozenset[str]:
    """The worded candidates a control's passing feedback may be: an element of the last
    clicked one's role that appeared with the last step ("Add to cart" ─► "Added ✓" for 1.2 s),
    followed a moment after the demonstration (replay.BRIEF_S) as a toast is; only those, as
    the wait is paid on every such replay."""
    hit = replayer.hits.get(steps[-1]) if steps else None
    if hit is None or not isinstance(replayer.actions.get(steps[-1]), Click):
        return frozenset()
    return frozenset(
        c.effect.subject
        for c in found
        if c.words and c.k == len(steps) and c.effect.kind == "appeared"
        and c.effect.role == hit.role and c.effect.subject
    )  # fmt: skip


def _transient(c: Candidate, again: Screens) -> bool:
    """Is the candidate a message in a live region (a toast: "Smart Watch added to cart"), or
    an effect of the demonstration's last step ("Added ✓" on the button for 1.2 s), that was
    gone a moment after the demonstration (Screens.later)? A reward true for seconds only."""
    if again.later is None or len(again.live) <= c.k:
        return False
    message = any(c.effect.subject in line for line in again.live[c.k])
    if not message and c.k != len(again.states) - 1:
        return False  # a later step of the demonstration may undo it: not for `later`
    return c.effect.check.holds_on(again.later) is not True


def _acts(replayer: Replayer, steps: tuple[int, ...]) -> list[Act]:
    """The demonstration's steps as words need them (the element each acted on)."""
    acts = []
    for index in steps:
        action, hit = replayer.actions[index], replayer.hits.get(index)
        role, name = (hit.role, hit.name) if hit is not None else ("", "")
        if isinstance(action, Click):
            told = (hit.label, hit.context, hit.equals) if hit is not None else ("", "", 1)
            shown = hit is None or hit.shown
            acts.append(Act("click", role, name, "", *told, shown=shown))
        elif isinstance(action, TypeText):
            acts.append(Act("type", role, name, action.text))
        elif isinstance(action, Key):
            acts.append(Act("key", text=action.combo))
        else:
            acts.append(Act("other"))
    return acts


def _rows(
    out: EpisodeOutcome,
    task: TaskSpec,
    replayer: Replayer,
    found: list[Candidate],
    steps: tuple[int, ...],
    first: Screens,
    config: TasksConfig,
    starts: int,
) -> list[TaskRow]:
    start_url = strip_credentials(task.start_url)
    done = first.acted
    rows, kept = [], 0
    for c in found:
        demo = steps[: c.k]
        words = c.words
        if c.dropped is None and words is None:
            c.dropped = "no_words"
        if c.dropped is None and kept >= config.per_episode:
            c.dropped = "over_limit"
        kept += c.dropped is None
        actions: list[Action] = [done.get(i, replayer.actions[i]) for i in demo]
        writes = _writes(replayer, first, demo)
        last = replayer.hits.get(demo[-1])
        rows.append(
            TaskRow(
                **out.ids,
                synth_id=digest(start_url, c.effect.key)[:16],
                site=task.site,
                start_url=start_url,
                effect_kind=c.effect.kind,
                effect=c.effect.key,
                instruction=words or "",
                check_json=c.effect.check.model_dump_json(exclude_none=True),
                actions_json=json.dumps([a.model_dump() for a in actions]),
                demo_steps=list(demo),
                demo_descriptions=[action_repr(a) for a in actions],
                kept=c.dropped is None,
                dropped_at=c.dropped,
                proof_replays=2 if c.dropped is None else 0,
                false_on_start=starts if c.dropped is None else 0,
                writes=writes,
                demo_element=[last.role, last.name] if last is not None else [],
            )
        )
    return rows


def _writes(replayer: Replayer, path: Screens, demo: tuple[int, ...]) -> list[str]:
    """The writes each demonstration step sent on the replay (`<step> <METHOD> <path>`), from
    the episode's recording: the replay repeats them in the episode's order (router.py)."""
    recorded, said = replayer.recording.writes, []
    for i, step in enumerate(demo):
        if i + 1 < len(path.writes):
            for entry in recorded[path.writes[i] : path.writes[i + 1]]:
                said.append(f"{step} {entry.method} {path_of(entry.url) or '/'}")
    return said


def specific(outcomes: list[EpisodeOutcome]) -> None:
    """Drop kept tasks whose check holds on the final state of another episode from the same
    start that did not act on the demonstration's last element (it would reward not doing the
    task); record the episodes each was false on."""
    for o in outcomes:
        for i, row in enumerate(o.tasks):
            if not row.kept:
                continue
            last = o.hits.get(row.demo_steps[-1])
            check = TaskSpec.model_validate(
                {
                    "id": "x",
                    "start_url": "x",
                    "instruction": "x",
                    "check": json.loads(row.check_json),
                }
            ).check
            assert check is not None
            false_on, dropped = [], None
            failed: list[tuple[str, PageState]] = []  # same flow, no effect (fail messages)
            solved: list[PageState] = []
            for p in outcomes:
                if p is o or p.final_state is None or p.episode is None:
                    continue
                if p.episode.start_url != row.start_url:
                    continue
                if last is not None and any(
                    (h.role, h.name) == (last.role, last.name) for h in p.hits.values()
                ):
                    # it acted as the demonstration did: it may well have made the effect
                    made = check.holds_on(p.final_state)
                    if made is False:
                        failed.append((p.ids["episode_id"], p.final_state))
                    elif made:
                        solved.append(p.final_state)
                    continue
                if check.holds_on(p.final_state):
                    dropped = "not_specific"
                    break
                false_on.append(p.ids["episode_id"])
            update: dict[str, object] = {"false_on_episodes": false_on}
            if dropped:
                update |= {"kept": False, "dropped_at": dropped}
            else:
                update |= _fail(o, row, outcomes, failed, solved)
            o.tasks[i] = row.model_copy(update=update)


def _fail(
    o: EpisodeOutcome,
    row: TaskRow,
    outcomes: list[EpisodeOutcome],
    failed: list[tuple[str, PageState]],
    solved: list[PageState],
) -> dict[str, object]:
    """The kept task's fail check (annotate/failure.py), as TaskRow columns ({} when none):
    never true on a start state of the shard's replays from its start or on its own
    demonstration's states."""
    starts = [
        p.path_states[0]
        for p in outcomes
        if p.path_states and p.episode is not None and p.episode.start_url == row.start_url
    ]
    demo = o.path_states[: len(row.demo_steps) + 1]
    found = fail_check(starts, demo, failed, solved) if failed and starts else None
    if found is None:
        return {}
    check, shown = found
    return {"fail_json": check.model_dump_json(exclude_none=True), "fail_episodes": shown}


async def reworded(outcomes: list[EpisodeOutcome], ctx: ShardContext) -> None:
    """With a relabel role (annotation.relabel): each kept task's words as the model rewords
    them where they keep the names its check decides (annotate/reword.py); the check is
    never the model's. After specific(): only tasks the shard keeps are asked."""
    engines = ctx.engines
    if ctx.config.annotation.relabel is None or engines is None or not engines.has(ROLE):
        return

    async def one(o: EpisodeOutcome, i: int) -> None:
        o.tasks[i] = await reword(o.tasks[i], engines)

    await asyncio.gather(*(one(o, i) for o in outcomes for i, r in enumerate(o.tasks) if r.kept))
