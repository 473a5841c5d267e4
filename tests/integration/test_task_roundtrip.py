"""Synthesised tasks out and back (issue 43): explore pages of our own with synthesis on, export
the task list, then

- check every task with the independent checker (bench/taskcheck.py: its own Playwright code,
  no datagen import): false at the start, true after its demonstration, false after other
  episodes' action sets from the same start that did not do what its words ask (its own
  reading of the words, bench/taskwords.py);
- run the list back as `sources: [{type: jsonl}]` with the `scripted` policy: the
  demonstrations solve every task;
- run it with `explore` and repeats: the run summary says each task's solve rate.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from bench.taskcheck import check_all, episodes, served
from datagen.observe.solves import LISTED

pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SITES = ROOT / "tests" / "fixtures" / "synth"
BROWSER = "browser: {viewport: {width: 1280, height: 800}, device_scale_factor: 1}\n"


def datagen(folder: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "datagen", *args], env=env, cwd=folder,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run with synthesis on over the fixture sites, and its exported task list."""
    folder = tmp_path_factory.mktemp("roundtrip")
    (folder / "p.yaml").write_text(
        "name: synth\n"
        f"sources: [{{type: sites, dir: {SITES}}}]\n" + BROWSER + "policy: {type: explore}\n"
        "annotation: {grounding: false, verify: {max_replays: 12}, tasks: {per_episode: 4}}\n"
        "cluster: {workers: 1, sessions_per_worker: 4}\n"
        "run: {seed: 0, max_steps: 6, tasks_per_shard: 4, repeats: 4}\n"
    )
    out = folder / "out"
    datagen(folder, "run", "p.yaml", "-o", str(out))
    datagen(folder, "export", str(out), "-f", "tasks")
    return out, out / "exports" / "tasks" / "tasks.jsonl"


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_independent_checker_confirms_every_task(
    synthesised: tuple[Path, Path], chromium: str
) -> None:
    out, listed = synthesised
    tasks = read(listed)
    assert tasks
    with served(SITES) as base:
        verdicts = asyncio.run(check_all(tasks, episodes(out), base, 3, chromium))
    for v in verdicts:
        assert not v.error, v.error
        assert v.at_start is False and v.after_demo is True, (v.task, v)
        # its own reading of the words agrees: not done at the start, done by the demonstration
        assert v.reading is not None, ("words the checker cannot read", v.task)
        assert v.words_start is False and v.words_demo is True, (v.task, v)
        assert not v.wrong, (v.task, [(o.episode.episode_id, o.clicked()) for o in v.wrong])
    # a site whose every episode pressed the one button has no other action set to read
    assert sum(len(v.after_others) for v in verdicts) >= len(verdicts), verdicts


def test_the_list_runs_back_solved_by_its_demonstrations_and_explored_with_rates(
    synthesised: tuple[Path, Path],
) -> None:
    out, listed = synthesised
    tasks = read(listed)
    folder = out.parent
    # `site://` resolves against the first `sites` source's folder (the bundled one when
    # there is none): the fixture sites' own tasks come along, and are left out below
    common = (
        f"sources: [{{type: jsonl, path: {listed}}}, {{type: sites, dir: {SITES}}}]\n"
        + BROWSER
        + "annotation: {grounding: false, verify: null}\n"
        + "cluster: {workers: 1, sessions_per_worker: 4}\n"
    )
    (folder / "scripted.yaml").write_text(
        "name: back\n" + common + "policy: {type: scripted}\nrun: {seed: 0}\n"
    )
    assert "ok" in datagen(folder, "validate", "scripted.yaml", "-o", str(folder / "v"))
    datagen(folder, "run", "scripted.yaml", "-o", str(folder / "scripted"))
    rows = ds.dataset(folder / "scripted" / "episodes").to_table().to_pylist()
    rows = [r for r in rows if r["task_id"].startswith("synth-")]
    assert sorted(r["task_id"] for r in rows) == sorted(t["id"] for t in tasks)
    assert all(r["success"] for r in rows), [r["task_id"] for r in rows if not r["success"]]

    (folder / "explore.yaml").write_text(
        "name: again\n" + common + "policy: {type: explore}\nrun: {seed: 0, repeats: 2}\n"
    )
    said = datagen(folder, "run", "explore.yaml", "-o", str(folder / "explore"))
    flat = " ".join(said.split())
    assert "solve rate per task: mean " in flat, flat[-2000:]
    if len(tasks) + 4 <= LISTED:  # each task's rate named in the summary
        assert all(t["id"] in flat for t in tasks)
    report = (folder / "explore" / "_report.html").read_text()
    assert "solve rate per task" in report
