"""Specificity across shards (issue 43, item 3), the pure rule: sink/synthesised.run_wide on
committed `tasks` rows and the final pages other episodes left."""

from __future__ import annotations

from typing import Any

from datagen.records import ElementState, PageState, SuccessCheck
from datagen.sink.synthesised import Final, run_wide

CHECK = SuccessCheck.model_validate(
    {"element": {"role": "checkbox", "name": "Buy milk", "state": "checked"}}
)


def row(**over: Any) -> dict[str, Any]:
    base = {
        "episode_id": "mine",
        "start_url": "site://list/",
        "check_json": CHECK.model_dump_json(exclude_none=True),
        "demo_element": ["checkbox", "Buy milk"],
        "kept": True,
        "dropped_at": None,
        "false_on_episodes": ["same-shard"],
        "fail_episodes": [],
    }
    return base | over


def final(episode: str, checked: bool, acted: tuple[tuple[str, str], ...] = ()) -> Final:
    milk = ElementState(role="checkbox", name="Buy milk", checked=checked)
    state = PageState(url="http://x/list/", elements=(milk,))
    return Final(episode, "site://list/", state, frozenset(acted))


def test_a_check_that_holds_where_another_episode_never_acted_is_dropped() -> None:
    [out] = run_wide([row()], [final("other", checked=True, acted=(("button", "Mark all"),))])
    assert (out["kept"], out["dropped_at"], out["disproved_by"]) == (False, "not_specific", "other")


def test_an_episode_that_acted_on_the_last_element_is_no_evidence() -> None:
    [out] = run_wide([row()], [final("other", True, (("checkbox", "Buy milk"),))])
    assert out["kept"] and out["false_on_episodes"] == ["same-shard"]
    assert out["false_after_acting"] == []  # the check holds there: no 0.0 rollout


def test_one_that_acted_and_ended_with_the_check_false_is_a_rollout_not_evidence() -> None:
    """The shop's cart task ("Cart 1") and an episode that clicked "Add to cart" three times:
    no evidence on specificity, but its final page fails the check (an rl group's 0.0)."""
    acted = (("checkbox", "Buy milk"),)
    [out] = run_wide([row()], [final("twice", False, acted), final("mine", False, acted)])
    assert out["kept"] and out["false_on_episodes"] == ["same-shard"]
    assert out["false_after_acting"] == ["twice"]  # never its own


def test_episodes_it_is_false_on_are_added_once_and_its_own_is_skipped() -> None:
    ended = [final("mine", True), final("same-shard", False), final("other", False)]
    [out] = run_wide([row()], ended)
    assert out["kept"] and out["false_on_episodes"] == ["same-shard", "other"]


def test_other_starts_and_dropped_rows_are_left_alone() -> None:
    elsewhere = Final("far", "site://other/", final("x", True).state, frozenset())
    dropped = row(kept=False, dropped_at="no_words")
    assert run_wide([row(), dropped], [elsewhere]) == [row(false_after_acting=[]), dropped]
    assert run_wide([dropped], [final("other", True)]) == [dropped]
