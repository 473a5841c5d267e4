"""Specificity across shards (issue 43, item 3): a synthesised task is false on the final page of
every episode of the run from its start that did not make its effect, whatever shard ran it.

The page of our own (tests/fixtures/synth_runwide/list) has two items and "Mark all complete".
Two scripted tasks from the same start, one per shard (`run.tasks_per_shard: 1`): one checks
"Buy milk", the other presses "Mark all complete", which checks "Buy milk" too. The first one's
synthesised task `Check "Buy milk"` holds where the second episode ended without ever touching
"Buy milk": it rewards not doing the task, and the run must not claim it. Its shard alone
cannot tell (the other episode is not there): the task list, its card and the run summary
decide it over the whole run.

"Mark all complete" also says "All items complete": the second one's task `Press "Mark all
complete"` is specific, and the first episode, in the other shard, ended where its check is
false: a 0.0 rollout of its `rl` group (the export took the shard's own episodes only).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.helpers import datagen_calls, exported_tasks, synthesised

pytestmark = pytest.mark.browser
MILK = {"element": {"role": "checkbox", "name": "Buy milk", "state": "checked"}}


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The two tasks run scripted, one per shard, synthesis on, in the run of pages of our own
    that test_synth_transient and test_synth_count read too (tests/helpers.py `synthesised`);
    the task list exported. The output folder and what the run and the export printed."""
    out = synthesised(tmp_path_factory)
    return out, (out.parent / "said.txt").read_text()


def table(out: Path, name: str) -> list[dict[str, Any]]:
    return [r for f in sorted(out.glob(f"{name}/*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_a_task_another_shards_episode_disproves_is_not_claimed(output: tuple[Path, str]) -> None:
    out, said = output
    episodes = table(out, "episodes")
    shards = [[e["task_id"] for e in pq.read_table(f).to_pylist()] for f in out.glob("episodes/*")]
    assert sorted(s for s in shards if "list-milk" in s or "list-all" in s) == [
        ["list-all"],
        ["list-milk"],
    ]  # one episode per shard
    tasks = table(out, "tasks")
    [mine] = [
        t for t in tasks if t["task_id"] == "list-milk" and json.loads(t["check_json"]) == MILK
    ]
    assert mine["demo_element"] == ["checkbox", "Buy milk"]
    assert mine["kept"], "its shard alone proved it (no other episode there)"
    exported = exported_tasks(out, "list")
    assert all(t["check"] != MILK for t in exported), exported  # the run disproves it
    card = (out / "exports" / "tasks" / "README.md").read_text()
    assert "| not_specific | 1 |" in card, card  # the other pages' tasks have none
    assert "not_specific 1" in said, said  # the run summary's line
    [pressed] = [e for e in episodes if e["task_id"] == "list-all"]
    final = json.loads(pressed["final_state_json"])  # what the decision read, recorded
    assert {"role": "checkbox", "name": "Buy milk", "checked": True}.items() <= {
        **next(e for e in final["elements"] if e["name"] == "Buy milk")
    }.items()
    assert json.loads(pressed["acted_json"]) == [["button", "Mark all complete"]]


def test_an_rl_groups_failed_rollouts_come_from_every_shard(
    output: tuple[Path, str], tmp_path: Path
) -> None:
    out, _ = output
    [done] = datagen_calls([["export", str(out), "-f", "rl", "--to", str(tmp_path)]])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shard_of = {
        e["episode_id"]: f.name
        for f in out.glob("episodes/*.parquet")
        for e in pq.read_table(f).to_pylist()
    }
    episodes = {e["episode_id"]: e for e in table(out, "episodes")}
    rl = {f.name: pq.read_table(f).to_pylist() for f in tmp_path.glob("data/*.parquet")}
    [group] = [
        sorted(
            (r for r in rows if r["instruction"] == 'Press "Mark all complete"'),
            key=lambda r: r["sample_index"],
        )
        for rows in rl.values()
        if any(r["instruction"] == 'Press "Mark all complete"' for r in rows)
    ]  # one part: the group is written whole, on one side of the split
    demo, failed = group
    assert (demo["reward"], failed["reward"]) == (1.0, 0.0)
    assert json.loads(demo["check"]) == {"text_present": "All items complete"}
    assert episodes[demo["episode_id"]]["task_id"] == "list-all"
    rollout = episodes[failed["episode_id"]]  # the other shard's episode, as it ran
    assert rollout["task_id"] == "list-milk"
    assert shard_of[failed["episode_id"]] != shard_of[demo["episode_id"]]
    assert "All items complete" not in rollout["final_state_json"]
    assert len(failed["images"]) == len(failed["steps"]) == rollout["n_steps"]
    assert [s["action_type"] for s in failed["steps"]] == ["click", "done"]  # its own steps
    assert failed["group_size"] == demo["group_size"] == 2
    # the rollout's columns speak of this task, not of the episode's own
    assert (failed["status"], failed["failure_category"]) == ("failed", "other_task")
    assert failed["verification"] is None  # its own task's replays say nothing of this one
    card = (tmp_path / "README.md").read_text()
    assert "1 of them from other shards than the task's" in card, card
    # the card's figures are the rows', a rollout of another shard counted too (and once)
    rows = [r for part in rl.values() for r in part]
    rewarded = sum(r["reward"] is not None for r in rows)
    assert f"from {len({r['episode_id'] for r in rows})} episodes" in card, card
    assert f"check verdict as reward): {rewarded} of {len(rows)} " in card, card
    nulls = sum(r["verification"] is None for r in rows)
    assert re.search(rf"samples by their episode's verification: .*null {nulls}\b", card), card
