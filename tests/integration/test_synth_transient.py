"""A toast is no task (issue 43): a synthesised task's check must still hold a moment after its
demonstration, where the page says it in a message that goes by itself.

The page of our own (tests/fixtures/synth_toast/draft) answers "Save draft" twice: a line that
stays ("Your draft is saved") and a toast in a live region (role=status) that goes 1.5 s later
("Draft saved ✓"). Both hold after the demonstration on two sealed replays and both have words
(`Press "Save draft"`): without a look a moment later, the toast's check was kept (and, first
by its effect's name, was the one exported for those words). It is dropped as `transient`; the
line is the task.
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
SITES = Path(__file__).resolve().parents[1] / "fixtures" / "synth_toast"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's task run scripted, synthesis on; the task list exported."""
    folder = tmp_path_factory.mktemp("toast")
    (folder / "p.yaml").write_text(
        "name: toast\n"
        f"sources: [{{type: sites, dir: {SITES}}}]\n"
        "browser: {viewport: {width: 1280, height: 800}, device_scale_factor: 1}\n"
        "policy: {type: scripted}\n"
        "annotation: {grounding: false, verify: {max_replays: 6}, tasks: {per_episode: 4}}\n"
        "cluster: {workers: 1, sessions_per_worker: 1}\n"
        "run: {seed: 0, max_steps: 3, repeats: 1}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = folder / "out"
    for args in (["run", "p.yaml", "-o", str(out)], ["export", str(out), "-f", "tasks"]):
        done = subprocess.run([sys.executable, "-m", "datagen", *args], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def tasks(out: Path) -> dict[str, dict[str, Any]]:
    rows = [r for f in sorted(out.glob("tasks/*.parquet")) for r in pq.read_table(f).to_pylist()]
    return {r["effect"]: r for r in rows}


def test_the_toast_is_dropped_as_transient_and_the_line_that_stays_is_the_task(
    output: Path,
) -> None:
    found = tasks(output)
    toast, line = found["text:Draft saved ✓"], found["text:Your draft is saved"]
    assert (toast["kept"], toast["dropped_at"]) == (False, "transient"), toast
    assert line["kept"] and line["instruction"] == 'Press "Save draft"', line
    listed = (output / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    assert [json.loads(t)["check"] for t in listed] == [{"text_present": "Your draft is saved"}]
    card = (output / "exports" / "tasks" / "README.md").read_text()
    assert "| transient | 1 |" in card, card
