"""Two runs of the same pipeline on one output at the same time (`datagen run` twice, real
LocalClusters and Chromium): the second computes none of the shards the first holds; it waits,
and when the first is SIGKILLed it takes over what the first had not committed. Each shard is
computed once, each task ends once, and the output verifies clean."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import datagen, each_task_once, sites_pipeline

# each test chains CLI runs bounded at 300 s apiece
pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(900)]
TASKS = 6


def count(folder: Path, pattern: str) -> int:
    return len(list(folder.glob(pattern))) if folder.is_dir() else 0


def wait_for(condition: Callable[[], object], what: str, limit_s: float = 180) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


def test_a_second_run_waits_and_takes_over_from_a_killed_first(tmp_path: Path) -> None:
    pipeline, out = sites_pipeline(tmp_path, limit=TASKS), tmp_path / "out"
    command = [sys.executable, "-m", "datagen", "run", str(pipeline), "--output", str(out)]
    env = {**os.environ, "COLUMNS": "200"}
    logs = {name: (tmp_path / f"{name}.log").open("wb") for name in ("first", "second")}
    first = subprocess.Popen(
        command, stdout=logs["first"], stderr=subprocess.STDOUT, start_new_session=True, env=env
    )
    second = None
    try:
        wait_for(lambda: count(out / "_claims", "shard-*.json") == TASKS, "first run's leases")
        second = subprocess.Popen(
            command,
            stdout=logs["second"],
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        second_log = tmp_path / "second.log"
        wait_for(lambda: b"another run of this pipeline" in second_log.read_bytes(), "waiting")
        wait_for(lambda: count(out / "_markers", "*.json") >= 1, "first run's first commit")
        os.killpg(first.pid, signal.SIGKILL)  # the whole run: CLI, Dask workers, browsers
        first.wait(timeout=30)
        committed_by_first = count(out / "_markers", "*.json")
        assert second.wait(timeout=300) == 0, second_log.read_text()[-4000:]
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        for sink in logs.values():
            sink.close()
    text = second_log.read_text()
    assert committed_by_first < TASKS, "the first run finished before it was killed"
    skipped = re.search(r"already committed and skipped: (\d+) shard", text)
    held = re.search(
        r"another run of this pipeline held (\d+) shards? when this one started: (\d+) committed "
        r"by it, (\d+) taken over here when it stopped; this run ran (\d+)",
        text,
    )
    assert held, text[-3000:]
    before = int(skipped.group(1)) if skipped else 0
    n_held, theirs, taken, ran = (int(g) for g in held.groups())
    assert before + n_held == TASKS and before + theirs == committed_by_first
    assert ran == taken == TASKS - committed_by_first  # no shard computed twice
    assert "complete" in text
    each_task_once(out, TASKS)
    assert datagen("verify", str(out)).returncode == 0
    # the second run's leases are gone; the killed run's stay (taken over, or committed)
    left = list((out / "_claims").glob("*"))
    assert all(p.name.endswith(".g0000.json") for p in left if p.name.startswith("shard-"))
    assert all(
        json.loads(p.read_text())["pid"] == first.pid for p in left if p.name.startswith("run-")
    )
    print(
        f"concurrent runs: first committed {committed_by_first} of {TASKS} before SIGKILL; "
        f"the second waited for {n_held}, took over {taken}, ran {ran}"
    )


def test_a_second_run_computes_nothing_the_first_is_computing(tmp_path: Path) -> None:
    pipeline, out = sites_pipeline(tmp_path, limit=TASKS), tmp_path / "out"
    command = [sys.executable, "-m", "datagen", "run", str(pipeline), "--output", str(out)]
    env = {**os.environ, "COLUMNS": "200"}
    with (tmp_path / "first.log").open("wb") as sink:
        first = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(lambda: count(out / "_claims", "shard-*.json") == TASKS, "first's leases")
            second = datagen("run", str(pipeline), "--output", str(out))
            assert first.wait(timeout=300) == 0, (tmp_path / "first.log").read_text()[-3000:]
        finally:
            if first.poll() is None:
                first.kill()
                first.wait(timeout=30)
    assert second.returncode == 0, second.stdout + second.stderr
    held = re.search(r"another run of this pipeline held (\d+) shards? when this one started: "
                     r"(\d+) committed by it, 0 taken over here when it stopped; this run ran 0",
                     second.stdout)  # fmt: skip
    assert held and held.group(1) == held.group(2), second.stdout
    assert "Dask dashboard" not in second.stdout  # it started no cluster: nothing to compute
    assert "complete" in second.stdout
    each_task_once(out, TASKS)
