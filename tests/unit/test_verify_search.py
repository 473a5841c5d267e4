"""Replay verification's search, on step sets whose replays a rule decides (the replays
themselves run on real Chromium in tests/integration/test_verify*.py): what it keeps, what
it proves, what it leaves undecided, and how many replays that takes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from datagen.config import VerifyConfig
from datagen.pipeline.narrow import shown_by_episode
from datagen.pipeline.replay import OBSERVED_UP_TO, Replayer, Screens
from datagen.pipeline.verify import Verdict, _flag, _search


class Rule:
    """A stand-in for the Replayer's bookkeeping: `passes` asks `solves` instead of a browser,
    and keeps what Replayer keeps (seen, passed, replays)."""

    def __init__(self, solves: Callable[[set[int]], bool]) -> None:
        self.solves = solves
        self.replays, self.longest = 0, 0.0
        self.seen: dict[tuple[int, ...], bool] = {}
        self.passed: list[tuple[int, ...]] = []
        self.screens: dict[tuple[int, ...], Screens] = {}
        self.divergences: list[str] = []
        self.asked: list[tuple[int, ...]] = []
        self.likely: dict[tuple[int, ...], bool] = {}  # what Replayer would observe (short)

    async def passes(self, steps: Sequence[int], likely: bool = True) -> bool:
        key = tuple(sorted(steps))
        if key not in self.seen:
            self.replays += 1
            self.asked.append(key)
            self.likely[key] = likely
            self.seen[key] = self.solves(set(key))
            if self.seen[key]:
                self.passed.append(key)
        return self.seen[key]


def search(
    solves: Callable[[set[int]], bool], n: int, budget: int = 12, shown: bool = False
) -> tuple[Verdict, Rule]:
    """`shown`: the episode's n steps all went through, and what it showed is known (its
    prefixes failed) as `_verify` tells the search."""
    rule = Rule(solves)
    result = Verdict()
    config = VerifyConfig(max_replays=budget)
    replayer = cast(Replayer, rule)
    steps = list(range(n))
    if shown:
        rule.seen.update(shown_by_episode(steps, n))
    asyncio.run(_search(replayer, steps, config, result, 1e9, time.perf_counter()))
    return result, rule


def flags(result: Verdict, n: int) -> list[Any]:
    status = "minimal" if result.status == "full" else result.status
    return [_flag(status, result, i, False) for i in range(n)]


def test_an_episode_of_one_action_is_its_own_proof() -> None:
    # its check failed on the start page and passed after the action: no replay could say more
    result, rule = search(lambda s: 0 in s, 1, shown=True)
    assert (result.status, result.kept, result.proven, rule.replays) == ("full", {0}, {0}, 0)
    assert flags(result, 1) == [True]
    # a step that failed came with it: the action alone is replayed (and may not reproduce)
    result, rule = search(lambda s: False, 1)
    assert (result.status, rule.replays) == ("not_reproduced", 1)


def test_what_the_episode_showed_is_not_replayed_again() -> None:
    # steps 0, 1 then 2 went through, the check false before each: each prefix fails
    assert shown_by_episode([0, 1, 2], 3) == {(0,): False, (0, 1): False}
    assert shown_by_episode([0, 1, 3, 4], 5) == {(0,): False, (0, 1): False}  # step 2 failed
    assert shown_by_episode([1, 2], 3) == {}
    # one action, all the episode did: it passed; with a failed step beside it, not known
    assert shown_by_episode([0], 1) == {(0,): True}
    assert shown_by_episode([0], 2) == {} and shown_by_episode([1], 2) == {}
    # entering text (field, text, Enter) was the whole episode: the last 1, 2, 3 steps, then
    # each step left out once, but for the last (0 and 1 alone is what the episode showed)
    result, rule = search(lambda s: {0, 1, 2} <= s, 3, shown=True)
    assert result.status == "full" and result.kept == result.proven == {0, 1, 2}
    assert rule.asked == [(2,), (1, 2), (0, 1, 2), (0, 2)]
    _, before = search(lambda s: {0, 1, 2} <= s, 3)
    assert before.asked == [*rule.asked, (0, 1)]


def test_the_last_step_alone_is_one_replay() -> None:
    result, rule = search(lambda s: 9 in s, 10)
    assert (result.status, result.kept, rule.replays) == ("full", {9}, 1)
    assert flags(result, 10) == [False] * 9 + [True]


def test_the_last_steps_are_found_by_doubling_before_the_whole_episode() -> None:
    result, rule = search(lambda s: {7, 9} <= s, 12)
    assert result.status == "full" and result.kept == {7, 9}
    assert result.proven == {7, 9}
    assert (11,) in rule.asked and tuple(range(12)) not in rule.asked  # never all 12
    assert rule.replays < 12  # inside the default max_replays (ddmin over all 12 needed 14)


def test_an_early_step_is_found_with_the_whole_episode() -> None:
    result, _rule = search(lambda s: {0, 11} <= s, 12)
    assert result.status == "full" and result.kept == {0, 11} == result.proven
    assert flags(result, 12) == [True] + [False] * 10 + [True]


def test_a_search_cut_short_decides_only_what_it_replayed() -> None:
    # the last 3 pass on the third replay (1, 2, then 3 steps): the budget ends there, before
    # any replay left out 2 or 3; 1 is proven (the last 2 failed), 0 is not needed (the last
    # 3 passed without it)
    result, _rule = search(lambda s: {1, 3} <= s, 4, budget=3)
    assert result.status == "reduced" and result.kept == {1, 2, 3}
    assert result.proven == {1}
    assert flags(result, 4) == [False, True, None, None]
    assert "max_replays" in (result.note or "")
    # all 4 pass on the fourth (1, 2, 3, then 4 steps): nothing left out but what failed
    result, _rule = search(lambda s: {0, 3} <= s, 4, budget=4)
    assert result.status == "reduced" and result.kept == {0, 1, 2, 3}
    assert result.proven == {0}
    assert flags(result, 4) == [True, None, None, None]


def test_nothing_reproduces_nothing_is_kept() -> None:
    result, rule = search(lambda s: False, 5)
    assert result.status == "not_reproduced" and result.kept == set()
    assert flags(result, 5) == [None] * 5
    assert rule.asked[-1] == tuple(range(5))  # the whole episode was the last word


def test_entering_text_is_found_in_three_suffix_replays_observed_as_the_path() -> None:
    # click the field, type, submit: the last 1, 2, then 3 steps (not 4, then 3)
    result, rule = search(lambda s: {7, 8, 9} <= s, 10)
    assert result.status == "full" and result.kept == result.proven == {7, 8, 9}
    assert rule.asked[:3] == [(9,), (8, 9), (7, 8, 9)]
    assert rule.replays == 5  # and (7, 9), (7, 8): each of 8 and 9 left out once
    # its pass ended the search: observed as it went, the path costs no replay of its own
    assert rule.likely[(7, 8, 9)] is True


def test_replays_whose_screens_no_sample_shows_are_not_observed() -> None:
    # a needed step at the start: the whole episode passes, the binary search and ddmin narrow
    result, rule = search(lambda s: {0, 9} <= s, 10)
    assert result.status == "full" and result.kept == result.proven == {0, 9}
    observed = [k for k in rule.asked if rule.likely[k] and len(k) <= OBSERVED_UP_TO]
    # the last 1, 2, 3 (each would have ended the search), and the path itself, found by
    # ddmin: not the whole episode (it has the episode's own screens), not the 6 steps whose
    # pass the binary search would narrow, not the proof that 0 is needed (it should fail)
    assert observed == [(9,), (8, 9), (7, 8, 9), (0, 9)]
    assert rule.asked.index((0,)) > rule.asked.index((0, 9))
    assert tuple(range(10)) in rule.asked and tuple(range(4, 10)) in rule.asked
