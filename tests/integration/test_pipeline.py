"""run_shard on real Chromium without Dask: rows, rejects, parts and marker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datagen.records import Click, SuccessCheck, TaskSpec
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import completed_shards
from datagen.source.serve import SiteServer
from tests.helpers import Local, closed_port, make_config, read

pytestmark = pytest.mark.browser


def tasks(base: str) -> list[TaskSpec]:
    page = base + "occluded.html"
    clicked = "document.body.dataset.clicked === 'front'"
    return [
        TaskSpec(
            id="ok",
            start_url=page,
            instruction="Click Front",
            actions=(Click(x=80, y=40),),
            check=SuccessCheck(js=clicked),
        ),
        TaskSpec(
            id="nocheck",
            start_url=page,
            instruction="Click the cover",
            actions=(Click(x=80, y=120),),
        ),
        TaskSpec(id="unreachable", start_url=f"http://127.0.0.1:{closed_port()}/", instruction="x"),
        TaskSpec(
            id="badcheck",
            start_url=page,
            instruction="x",
            check=SuccessCheck(js="no_such_variable"),
        ),
    ]


def test_scripted_shard_rows_and_rejects(local: Local, pages: SiteServer, tmp_path: Path) -> None:
    config = make_config(tmp_path, policy={"type": "scripted"})
    out = tmp_path / "out"
    result = local.run(config, 3, tasks(pages.base_url), run_id="run1").result

    assert (result.episodes, result.solved) == (2, 1)
    assert result.reject_reasons["blocked_url"] == 1 and result.reject_reasons["check_error"] == 1
    assert completed_shards(LocalStorage(out)) == {3}
    marker = json.loads((out / "_markers" / "shard-00003.json").read_text())
    assert {f["table"]: f["rows"] for f in marker["files"]} == {
        "episodes": 2,
        "steps": result.steps,
        "grounding": result.grounding,
        "rejects": result.rejects,
    }

    episodes = {e["task_id"]: e for e in read(out, "episodes")}
    assert episodes["ok"]["success"] is True and episodes["ok"]["status"] == "solved"
    assert episodes["nocheck"]["success"] is None and episodes["nocheck"]["status"] == "done"
    steps = sorted(read(out, "steps"), key=lambda s: (s["task_id"], s["step_index"]))
    assert [(s["task_id"], s["action_repr"]) for s in steps] == [
        ("nocheck", "click(80, 120)"),
        ("nocheck", 'done("")'),
        ("ok", "click(80, 40)"),
        ("ok", 'done("")'),
    ]
    assert all(s["image_width"] == 1280 and s["device_scale_factor"] == 1 for s in steps)
    assert all(
        s["run_id"] == "run1" and s["browser_version"].startswith("chromium/") for s in steps
    )

    grounding = read(out, "grounding")
    assert {g["selector"] for g in grounding} == {"#front", "#email"}
    front = next(g for g in grounding if g["selector"] == "#front")
    assert front["bbox_px"] == [20, 20, 140, 60]
    assert front["referring_expression"] == 'the "Front" button'
    rejects = read(out, "rejects")
    occluded = [r for r in rejects if r["reason"] == "occluded"]
    assert len(occluded) == len(steps) and all("#under" in r["detail"] for r in occluded)
    assert {r["task_id"] for r in rejects if r["stage"] == "task"} == {"unreachable"}


def test_async_and_non_boolean_checks(local: Local, pages: SiteServer, tmp_path: Path) -> None:
    """Success labels come from true or false only: promises are awaited (a resolved false is
    not success), anything else is a broken check (check_error), never truthiness."""
    page = pages.base_url + "occluded.html"
    click = (Click(x=80, y=40),)  # clicks "Front": document.body.dataset.clicked === 'front'
    checks = {
        "resolved-false": "Promise.resolve(false)",
        "resolved-true-later": "new Promise(r => setTimeout(() => r(document.body.dataset.clicked === 'front'), 30))",
        "plain-true": "document.body.dataset.clicked === 'front'",
        "number": "document.querySelectorAll('button').length",
        "string-false": "'false'",
        "rejected": "Promise.reject(new Error('nope'))",
    }
    specs = [
        TaskSpec(id=name, start_url=page, instruction="x", actions=click, check=SuccessCheck(js=js))
        for name, js in checks.items()
    ]
    config = make_config(tmp_path, policy={"type": "scripted"})
    out = tmp_path / "out"
    local.run(config, 3, specs)

    success = {e["task_id"]: e["success"] for e in read(out, "episodes")}
    broken = {
        r["task_id"]: r["detail"] for r in read(out, "rejects") if r["reason"] == "check_error"
    }
    assert success == {"resolved-false": False, "resolved-true-later": True, "plain-true": True}
    assert set(broken) == {"number", "string-false", "rejected"}
    assert "not true or false" in broken["number"] and "not true or false" in broken["string-false"]
