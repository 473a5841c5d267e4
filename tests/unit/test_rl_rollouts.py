"""Which episodes a synthesised task's `rl` group takes as 0.0 rollouts (export/synth.py
`failed_on`): those its check was false on, then those that showed its fail message, then
those that acted as its demonstration did and ended with its check false, each once, never its
own, only those the output holds, ROLLOUTS at most."""

from __future__ import annotations

from datagen.export.synth import ROLLOUTS, failed_on


def test_false_on_then_fail_then_acted_each_once_never_its_own_only_those_held() -> None:
    task = {
        "episode_id": "own",
        "false_on_episodes": ["a", "b", "own", "gone"],
        "fail_episodes": ["c", "a"],
        "false_after_acting": ["d", "c", "own"],
    }
    assert failed_on(task, {"own", "a", "b", "c", "d"}) == ["a", "b", "c", "d"]
    assert failed_on({"episode_id": "own"}, {"own", "a"}) == []


def test_at_most_rollouts_in_their_order() -> None:
    many = [f"e{i:03d}" for i in range(3 * ROLLOUTS)]
    task = {"episode_id": "own", "false_on_episodes": many, "fail_episodes": None}
    assert failed_on(task, set(many)) == many[:ROLLOUTS]
    assert failed_on(task, set(many[ROLLOUTS:])) == many[ROLLOUTS : 2 * ROLLOUTS]
