"""A synthesised task's words reworded by the model (issue 43, item 4), the check never: a real
shard on real Chromium, the `relabel` role answered by the stand-in over HTTP.

A scripted episode checks "Buy milk" on a page of our own (tests/fixtures/synth_runwide/list);
synthesis keeps `Check "Buy milk"`. The stand-in rewords it as `Please check "Buy milk".`,
which keeps the name the check reads: those words become the task's, ours are kept beside
them. A reply that lost the name ("Tick the first item") does not say which item the check
reads: our words stay. Either way the check is the one synthesis proved.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.taskcheck import served
from datagen.config import SimConfig
from datagen.engine.sim import SimServer
from datagen.records import SuccessCheck, TaskSpec
from tests.helpers import Local, Row, make_config, read

pytestmark = pytest.mark.browser
SITES = Path(__file__).resolve().parents[1] / "fixtures" / "synth_runwide"
MILK = {"element": {"role": "checkbox", "name": "Buy milk", "state": "checked"}}


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with served(SITES) as url:
        yield url


def synthesise(local: Local, folder: Path, base: str, sim: SimServer) -> list[Row]:
    """One shard of the scripted "Buy milk" episode, synthesis and the relabel role on."""
    config = make_config(
        folder,
        browser={
            "viewport": {"width": 1280, "height": 800},
            "device_scale_factor": 1,
            "allow": [base.removeprefix("http://").rstrip("/")],
        },
        policy={"type": "scripted"},
        annotation={
            "grounding": False,
            "relabel": {"check": "none"},
            "verify": {"max_replays": 6},
            "tasks": {"per_episode": 4},
        },
        engine={"url": sim.url},
        run={"max_steps": 3, "seed": 0},
    )
    task = TaskSpec.model_validate(
        {
            "id": "list-milk",
            "start_url": base + "list/",
            "instruction": "Check Buy milk.",
            "check": MILK,
            "actions": [{"type": "click", "x": 200, "y": 120}],
        }
    )
    local.run(config, 0, [task], fresh_browser=True)  # its guard allows our server
    rows = [r for r in read(folder / "out", "tasks", 0) if r["kept"]]
    assert rows, "synthesis kept no task"
    return rows


def test_words_that_keep_the_checked_name_replace_ours(
    local: Local, base: str, tmp_path: Path
) -> None:
    with SimServer(SimConfig(speed_factor=50)) as sim:
        [task] = synthesise(local, tmp_path, base, sim)
        asked = httpx.get(sim.url + "/sim/stats").json()["completed"]
    assert json.loads(task["check_json"]) == MILK  # the proof's check, never the model's
    assert task["instruction"] == 'Please check "Buy milk".', task
    assert task["synth_instruction"] == 'Check "Buy milk"'
    assert task["reword_accepted"] is True and task["reword_standin"] is True
    assert json.loads(task["reword_output"])["instruction"] == task["instruction"]
    assert asked == 1  # the solved episode is not relabeled (skip_solved): one reword


def test_words_that_lost_the_checked_name_leave_ours(
    local: Local, base: str, tmp_path: Path
) -> None:
    lost = json.dumps({"instruction": "Tick the first item"})
    with SimServer(SimConfig(speed_factor=50, replies=[lost])) as sim:
        [task] = synthesise(local, tmp_path, base, sim)
    assert SuccessCheck.model_validate_json(task["check_json"]).model_dump(
        exclude_none=True
    ) == SuccessCheck.model_validate(MILK).model_dump(exclude_none=True)
    assert task["instruction"] == 'Check "Buy milk"' and task["synth_instruction"] is None
    assert task["reword_accepted"] is False and task["reword_output"] == lost
