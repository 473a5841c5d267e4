"""The model's roles measured in a whole run's summary and report: a `vlm` run against the
stand-in scripted to answer, then judge; the judge's agreement with the task's own check is
printed and marked as stand-in output (it is no model's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from datagen.config import SimConfig
from datagen.engine.sim import SimServer
from tests.helpers import datagen, rows

pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(600)]

ANSWER = json.dumps({"thought": "", "note": "", "action": {"type": "answer", "content": "done"}})
SUCCESS = json.dumps({"verdict": "SUCCESS", "reason": "the page says so"})


def test_judge_agreement_is_in_the_summary_and_report(tmp_path: Path) -> None:
    spec = {
        "name": "roles-measured",
        "sources": [{"type": "sites"}],
        "policy": {"type": "vlm", "judge": {"temperature": 0, "max_tokens": 64}},
        "cluster": {"workers": 1, "sessions_per_worker": 1, "dashboard": "127.0.0.1:0"},
        "run": {"max_steps": 1, "limit": 2, "tasks_per_shard": 2},
        "output": {"uri": "unused"},
    }
    with SimServer(SimConfig(speed_factor=50, replies=[ANSWER, SUCCESS])) as sim:
        spec["engine"] = {"url": sim.url}
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump(spec))
        result = datagen("run", str(path), "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    episodes = rows(tmp_path / "out", "episodes")
    checked = [e for e in episodes if e["success"] is not None]
    agree = sum(e["success"] is True for e in checked)  # the judge always said SUCCESS
    line = (
        f"judge agrees with the task's check on {agree / len(checked):.0%} of {len(checked)} "
        "episodes (stand-in output, not a model's)"
    )
    assert line in result.stdout
    report = (tmp_path / "out" / "_report.html").read_text()
    assert "judge agrees with the task" in report and "engine health" in report
