"""Specificity across shards (issue 43, item 3): a synthesised task is false on the final page of
every episode of the run from its start that did not make its effect, whatever shard ran it.

The page of our own (tests/fixtures/synth_runwide/list) has two items and "Mark all complete".
Two scripted tasks from the same start, one per shard (`run.tasks_per_shard: 1`): one checks
"Buy milk", the other presses "Mark all complete", which checks "Buy milk" too. The first one's
synthesised task `Check "Buy milk"` holds where the second episode ended without ever touching
"Buy milk": it rewards not doing the task, and the run must not claim it. Its shard alone
cannot tell (the other episode is not there): the task list, its card and the run summary
decide it over the whole run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.browser
SITES = Path(__file__).resolve().parents[1] / "fixtures" / "synth_runwide"
ROOT = Path(__file__).resolve().parents[2]
MILK = {"element": {"role": "checkbox", "name": "Buy milk", "state": "checked"}}


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The two tasks run scripted, one per shard, synthesis on; the task list exported. The
    output folder and the run's stdout."""
    folder = tmp_path_factory.mktemp("runwide")
    (folder / "p.yaml").write_text(
        "name: runwide\n"
        f"sources: [{{type: sites, dir: {SITES}}}]\n"
        "browser: {viewport: {width: 1280, height: 800}, device_scale_factor: 1}\n"
        "policy: {type: scripted}\n"
        "annotation: {grounding: false, verify: {max_replays: 6}, tasks: {per_episode: 4}}\n"
        "cluster: {workers: 1, sessions_per_worker: 2}\n"
        "run: {seed: 0, max_steps: 3, tasks_per_shard: 1, repeats: 1}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, said = folder / "out", ""
    for args in (["run", "p.yaml", "-o", str(out)], ["export", str(out), "-f", "tasks"]):
        done = subprocess.run([sys.executable, "-m", "datagen", *args], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        said += done.stdout
    return out, said


def table(out: Path, name: str) -> list[dict[str, Any]]:
    return [r for f in sorted(out.glob(f"{name}/*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_a_task_another_shards_episode_disproves_is_not_claimed(output: tuple[Path, str]) -> None:
    out, said = output
    episodes = table(out, "episodes")
    assert len(list(out.glob("episodes/*.parquet"))) == 2  # one episode per shard
    tasks = table(out, "tasks")
    [mine] = [
        t for t in tasks if t["task_id"] == "list-milk" and json.loads(t["check_json"]) == MILK
    ]
    assert mine["demo_element"] == ["checkbox", "Buy milk"]
    assert mine["kept"], "its shard alone proved it (no other episode there)"
    listed = (out / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    exported = [json.loads(line) for line in listed]
    assert all(t["check"] != MILK for t in exported), exported  # the run disproves it
    card = (out / "exports" / "tasks" / "README.md").read_text()
    assert "| not_specific | 1 |" in card, card
    assert "not_specific 1" in said, said  # the run summary's line
    [pressed] = [e for e in episodes if e["task_id"] == "list-all"]
    final = json.loads(pressed["final_state_json"])  # what the decision read, recorded
    assert {"role": "checkbox", "name": "Buy milk", "checked": True}.items() <= {
        **next(e for e in final["elements"] if e["name"] == "Buy milk")
    }.items()
    assert json.loads(pressed["acted_json"]) == [["button", "Mark all complete"]]
