"""How replays narrow a solved episode down to the steps its task needs (verify.py): the
shortest passing suffix, then ddmin inside it, then each kept step left out once; and what the
episode itself already showed, which no replay need ask again.

Each function asks `replayer.passes(steps)` (a replay, or the answer `seen` already holds) and
`stop()` before each replay it makes: a reason to stop (the replay budget, the time), or None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from datagen.pipeline.replay import Replayer


async def minimal(
    replayer: Replayer,
    steps: list[int],
    stop: Callable[[], str | None],
    fixed: Sequence[int] = (),
) -> tuple[list[int], str | None]:
    """The steps left after ddmin (complements only; `fixed` steps are in every replay), and
    why it stopped early (None: it finished). `fixed` + `steps` must pass. `stop` is asked
    before each replay: a reason to stop, or None."""
    current, n = list(steps), 2
    while len(current) >= 2:
        size = -(-len(current) // n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        for chunk in chunks:
            rest = [s for s in current if s not in chunk]
            why = stop()
            if why is not None:
                return current, why
            # a complement mostly fails (the suffix's steps are mostly needed): observed only
            # when short, where a failure wastes a screen or two and a pass saves the path a
            # replay of its own
            likely = len(fixed) + len(rest) <= 2
            if await replayer.passes([*fixed, *rest], likely=likely):
                current, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    return current, None


def shown_by_episode(steps: Sequence[int], taken: int) -> dict[tuple[int, ...], bool]:
    """What the episode itself showed of its actions `steps` (of the `taken` steps it acted
    in, done aside): its check was asked before each step and was false until the last action
    had been done, so each prefix of its actions (steps 0..i, every one went through, i before
    the last) fails, as the empty set does. None after a step that did not go through (an
    error, a page left and gone back from): its effects are not known.

    The whole set passed in the episode. A single action that is all the episode did (none
    failed) passes without a replay: the replay would be the episode again. A longer set is
    replayed where the search asks for it: that replay says whether replays reproduce the site
    at all, which every step called needed for a failing replay leans on."""
    shown: dict[tuple[int, ...], bool] = {}
    if len(steps) == 1 and taken == 1:
        shown[tuple(steps)] = True
    done = set(steps)
    for i in range(max(steps, default=0)):
        if i not in done:
            break
        shown[tuple(range(i + 1))] = False
    return shown


async def suffix(
    replayer: Replayer, steps: list[int], stop: Callable[[], str | None]
) -> tuple[int | None, str | None]:
    """Where the shortest passing suffix starts (None when not even all the actions passed),
    and why it stopped early. The last 2, 3, 6, 12, … actions, then all of them, until one
    passes; then a binary search between the last that failed and it. Explore's successes are
    mostly its last few steps: a few short replays, where a replay of the whole episode and
    ddmin over it take many long ones. Why 3 before doubling: entering text is three steps
    (the field clicked, the text typed, Enter or a button), found in 3 replays, not 4.

    A suffix is observed as it is replayed only where its pass would end the search (the one
    after it failed) and it is not the whole episode (whose path has the episode's screens)."""
    failed, size = 1, 2  # the last action alone failed
    while True:
        size = min(size, len(steps))
        why = stop()
        if why is not None:
            return None, why
        likely = size == failed + 1 and size < len(steps)
        if await replayer.passes(steps[-size:], likely=likely):
            break
        if size == len(steps):
            return None, None
        failed, size = size, 3 if size == 2 else size * 2
    while size - failed > 1:  # steps[-size:] passes, steps[-failed:] does not
        middle = (size + failed) // 2
        why = stop()
        if why is not None:
            return len(steps) - size, why
        if await replayer.passes(steps[-middle:], likely=middle == failed + 1):
            size = middle
        else:
            failed = middle
    return len(steps) - size, None


async def prove(
    replayer: Replayer, kept: list[int], stop: Callable[[], str | None]
) -> tuple[list[int], str | None]:
    """`kept` with every step proven: each left out once from the final set (a replay the
    search has not made yet is made now; one that passes drops its step)."""
    changed = True
    while changed and len(kept) > 1:
        changed = False
        for step in kept:
            rest = [s for s in kept if s != step]
            if tuple(rest) in replayer.seen:
                if replayer.seen[tuple(rest)]:
                    kept, changed = rest, True
                    break
                continue
            why = stop()
            if why is not None:
                return kept, why
            if await replayer.passes(rest, likely=False):  # a proof: it should fail
                kept, changed = rest, True
                break
    return kept, None
