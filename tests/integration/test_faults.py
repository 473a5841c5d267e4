"""The fault-injection suite: hostile local pages, engine faults from the stand-in, a browser
killed mid-episode and a Dask worker killed mid-run, all in one pipeline run. Every task must
end exactly once, as an episode or as a reject with the reason its fault calls for.

    bash scripts/test.sh -m faults -s      # -s shows the counts
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
import yaml

from datagen.engine.sim import SimConfig, SimServer
from tests.conftest import FIXTURES
from tests.integration.test_run_cli import datagen, rows

pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.slow, pytest.mark.faults]
ENGINE = {"engine_unavailable", "engine_rejected", "model_parse_error", "model_off_screen"}
EXPECTED = {  # what may end each task: an episode, or these reasons
    "hostile-spin": {"timeout_step"} | ENGINE,
    "hostile-metadata": {"blocked_url"},
    "hostile-file": {"blocked_url"},
}
REPEATS = 2


def write_pipeline(folder: Path, engine_url: str) -> Path:
    spec = {
        "name": "faults",
        "sources": [{"type": "sites", "dir": str(FIXTURES / "pages"), "sites": ["hostile"]}],
        "policy": {"type": "vlm"},
        "engine": {"url": engine_url, "retries": 4, "max_in_flight": 32},
        "cluster": {"workers": 2, "sessions_per_worker": 4, "dashboard": ":0", "retries": 3},
        "run": {  # an episode limit well inside the test's wait: a hang shows up as a reject
            "max_steps": 4,
            "tasks_per_shard": 2,
            "repeats": REPEATS,
            "step_timeout_s": 8,
            "episode_timeout_s": 90,
        },
        "output": {"uri": "unused"},
    }
    path = folder / "faults.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def markers(out: Path) -> int:
    return len(list((out / "_markers").glob("*.json"))) if (out / "_markers").exists() else 0


def test_every_task_ends_once_through_all_the_faults(tmp_path: Path) -> None:
    faults = SimConfig(
        speed_factor=20, error_rate=0.10, drop_rate=0.05, slow_rate=0.05, slow_seconds=1.0, seed=5
    )
    out = tmp_path / "out"
    with SimServer(faults) as sim:
        pipeline = write_pipeline(tmp_path, sim.url)
        log = (tmp_path / "run.log").open(
            "w"
        )  # a file, not a pipe: a full pipe would block the run
        command = [sys.executable, "-m", "datagen", "run", str(pipeline), "--output", str(out)]
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        killed = {"browser": False, "worker": False}
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline and not all(killed.values()):
            procs = descendants(proc.pid)
            browsers = [
                p
                for p in procs
                if any(a.startswith("--datagen-browser=") for a in _cmdline(p))
                and p.parent()
                and "chrom" not in p.parent().name()
            ]
            workers = [p for p in procs if "spawn_main" in " ".join(_cmdline(p))]
            if not killed["browser"] and markers(out) >= 1 and browsers:
                browsers[0].kill()  # Chromium dies under running episodes
                killed["browser"] = True
            elif killed["browser"] and not killed["worker"] and markers(out) >= 2 and workers:
                workers[-1].kill()  # a whole Dask worker dies
                killed["worker"] = True
            time.sleep(0.1)
        try:
            proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            for process in [*descendants(proc.pid), proc]:  # workers and browsers too
                with contextlib.suppress(psutil.Error, ProcessLookupError):
                    process.kill()
            pytest.fail(
                "the run hung; its log ends:\n" + (tmp_path / "run.log").read_text()[-4000:]
            )
        finally:
            log.close()
        if proc.returncode != 0:  # a shard may exhaust its retries; the rerun finishes the run
            rerun = datagen("run", str(pipeline), "--output", str(out))
            assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert any(killed.values()), "the run ended before any process could be killed"
    episodes, rejects = rows(out, "episodes"), rows(out, "rejects")
    ended = Counter(e["episode_id"] for e in episodes) + Counter(
        r["episode_id"] for r in rejects if r["stage"] in ("task", "episode")
    )
    tasks = [
        json.loads(line)["id"]
        for line in (FIXTURES / "pages" / "hostile" / "tasks.jsonl").read_text().splitlines()
    ]
    assert len(ended) == len(tasks) * REPEATS and set(ended.values()) == {1}  # each once
    ended_rejects = [r for r in rejects if r["stage"] in ("task", "episode")]
    reasons = Counter((r["task_id"], r["reason"]) for r in ended_rejects)
    for r in ended_rejects:
        assert r["reason"] in EXPECTED.get(r["task_id"], ENGINE), (
            r["task_id"],
            r["reason"],
            r["detail"],
        )
    for task_id in ("hostile-metadata", "hostile-file"):
        assert reasons[(task_id, next(iter(EXPECTED[task_id])))] == REPEATS
    summary = {
        "killed": killed,
        "episodes": len(episodes),
        "rejects": dict(Counter(reason for _, reason in reasons.elements())),
        "blocked_requests": sum(len(e["blocked_requests"]) for e in episodes),
        "dialogs": sum(e["dialogs"] for e in episodes),
        "popups": sum(e["popups"] for e in episodes),
    }
    print("fault suite:", json.dumps(summary))


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []
