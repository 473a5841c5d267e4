"""Hindsight relabeling through a real shard: explore episodes on real Chromium, the relabel
role and the judge's check answered by the stand-in over HTTP, the columns read back from the
written Parquet. The stand-in derives its answers from the action lines in the prompt, so the
outcome is known: a trajectory that did something is relabeled and accepted, one that only
scrolled is relabeled "Scroll through the page" and rejected."""

from __future__ import annotations

import json

import httpx
import pytest

from datagen.config import SimConfig
from datagen.engine.sim import SimServer
from datagen.records import SuccessCheck, TaskSpec
from datagen.source.serve import SiteServer
from tests.helpers import Local, Row, make_config, read

pytestmark = pytest.mark.browser
TASK = "Delete your account"  # what both tasks ask; explore does something else


@pytest.fixture(scope="module")
def run(
    local: Local, pages: SiteServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, list[Row]], dict[str, object]]:
    """One shard of three explore episodes (at most 3 steps each; one solved after a step),
    relabeled with the judge's check; its tables, and the stand-in's stats."""
    folder = tmp_path_factory.mktemp("relabel")
    with SimServer(SimConfig(speed_factor=50)) as sim:
        config = make_config(
            folder,
            policy={"type": "explore"},
            annotation={"relabel": {"check": "judge", "images": 3}, "verify": None},
            engine={"url": sim.url},
            run={"max_steps": 3, "seed": 5},
        )
        tasks = [
            TaskSpec(id=name, start_url=pages.base_url + page, instruction=TASK)
            for name, page in (("prefs", "real/checkboxes.html"), ("plain", "plain.html"))
        ]
        # passes at its second look, after the first step (one passing before any action is a
        # check_passes_at_start reject); no replay would pass it, so verification is off here
        solved = SuccessCheck(js="(window.__looks = (window.__looks || 0) + 1) > 1")
        tasks.append(tasks[1].model_copy(update={"id": "solved", "check": solved}))
        result = local.run(config, 0, tasks).result
        stats = httpx.get(sim.url + "/sim/stats").json()
    assert result.episodes == 3
    tables = {t: read(folder / "out", t, 0) for t in ("episodes", "steps", "rejects")}
    return tables, stats


def test_a_trajectory_that_did_something_gets_its_own_instruction(
    run: tuple[dict[str, list[Row]], dict[str, object]],
) -> None:
    tables, stats = run
    episode = next(e for e in tables["episodes"] if e["task_id"] == "prefs")
    steps = sorted(
        (s for s in tables["steps"] if s["task_id"] == "prefs"), key=lambda s: s["step_index"]
    )
    assert episode["instruction"] == TASK  # the task's, unchanged
    assert episode["instruction_source"] == "relabel" and episode["relabel_accepted"] is True
    relabeled = episode["relabeled_instruction"]
    assert relabeled and relabeled != TASK
    # derived from this trajectory's own action descriptions (the stand-in names the last ones)
    acted = [s for s in steps if not s["action_error"] and s["action_type"] != "scroll"]
    assert acted and acted[-1]["action_description"][1:] in relabeled
    assert json.loads(episode["relabel_output"])["instruction"] == relabeled
    assert json.loads(episode["relabel_check_output"])["fulfilled"] is True
    # never presented as a model's output
    assert episode["relabel_standin"] is True and episode["relabel_model"] == "datagen-sim"
    assert episode["relabel_prompt_version"] == "hindsight/1"
    assert stats["completed"] == 4  # a relabel and a check per episode, nothing else asked


def test_a_trajectory_that_only_scrolled_keeps_the_task_instruction(
    run: tuple[dict[str, list[Row]], dict[str, object]],
) -> None:
    tables, _ = run
    episode = next(e for e in tables["episodes"] if e["task_id"] == "plain")
    steps = [s for s in tables["steps"] if s["task_id"] == "plain"]
    assert steps and all(s["action_type"] == "scroll" for s in steps)
    assert episode["relabeled_instruction"] == "Scroll through the page"  # kept, for analysis...
    assert episode["relabel_accepted"] is False and episode["instruction_source"] == "task"
    assert json.loads(episode["relabel_check_output"])["fulfilled"] is False
    # ...and the rejection is in the rejects table, the episode row kept
    (reject,) = [r for r in tables["rejects"] if r["stage"] == "relabel"]
    assert reject["task_id"] == "plain" and reject["reason"] == "relabel_rejected"
    assert reject["episode_id"] == episode["episode_id"]


def test_a_solved_episode_keeps_its_task_instruction_unasked(
    run: tuple[dict[str, list[Row]], dict[str, object]],
) -> None:
    tables, stats = run
    episode = next(e for e in tables["episodes"] if e["task_id"] == "solved")
    assert episode["success"] is True and episode["instruction_source"] == "task"
    relabel_columns = [k for k in episode if k.startswith("relabel")]
    assert len(relabel_columns) == 7 and all(episode[k] is None for k in relabel_columns)
    assert stats["completed"] == 4  # the two unsolved episodes' relabels and checks only
