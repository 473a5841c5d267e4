"""The fault-injection suite: hostile local pages, engine faults from the stand-in, a browser
killed mid-episode and a Dask worker killed mid-run, all in one pipeline run. Each kill is
checked (the process is gone) and so is what the run makes of it: the shard whose browser died
runs again, the killed worker is reported lost, and the run still ends complete, with every
task ended exactly once, as an episode or as a reject with the reason its fault calls for.

    bash scripts/test.sh -m faults -s      # -s shows the counts
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
import yaml

from datagen.config import SimConfig
from datagen.engine.sim import SimServer
from tests.helpers import FIXTURES, rows

# each test chains CLI runs bounded at 300 s apiece
pytestmark = [
    pytest.mark.browser,
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.faults,
    pytest.mark.timeout(900),
]
ENGINE = {"engine_unavailable", "engine_rejected", "model_parse_error", "model_off_screen"}
EXPECTED = {  # what may end each task: an episode, or these reasons
    "hostile-spin": {"timeout_step"} | ENGINE,
    "hostile-metadata": {"blocked_url"},
    "hostile-file": {"blocked_url"},
}
REPEATS = 2
KILL_WITHIN_S = 240  # both kills happen early in the run (after its first and second shard)
GONE_WITHIN_S = 30  # a SIGKILLed process is reaped by its parent well within this


def write_pipeline(folder: Path, engine_url: str) -> Path:
    spec = {
        "name": "faults",
        "sources": [{"type": "sites", "dir": str(FIXTURES / "pages"), "sites": ["hostile"]}],
        "policy": {"type": "vlm"},
        "engine": {"url": engine_url, "retries": 4, "max_in_flight": 32},
        "cluster": {
            "workers": 2,
            "sessions_per_worker": 4,
            "dashboard": "127.0.0.1:0",
            "retries": 3,
        },
        "run": {  # an episode limit well inside the test's wait: a hang shows up as a reject
            "max_steps": 4,
            "tasks_per_shard": 2,
            "repeats": REPEATS,
            # 30 s: hostile-huge (20,000 buttons) must end as an episode, and its look took
            # over 8 s in CI's slow step with eight sessions on two cores (3-5 s for one
            # session at load 22); hostile-spin's page never yields, so it still meets it
            "step_timeout_s": 30,
            "episode_timeout_s": 90,
        },
        "output": {"uri": "unused"},
    }
    path = folder / "faults.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@dataclass
class Kill:
    """One process the test killed: what it was, its pid, the ports it listened on (a Dask
    worker's address is among them), and the run log's length when it was killed."""

    what: str
    pid: int
    ports: set[int]
    log_at: int


class Run:
    """The `datagen run` under test as a subprocess, its output in a file (a full pipe would
    block it), and the processes under it."""

    def __init__(self, pipeline: Path, out: Path, log: Path) -> None:
        self.out, self.log_path = out, log
        self._log = log.open("w")
        command = [sys.executable, "-m", "datagen", "run", str(pipeline), "--output", str(out)]
        env = {**os.environ, "COLUMNS": "400"}  # log lines unwrapped: the test reads them
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def log(self) -> str:
        return self.log_path.read_text()

    def markers(self) -> int:
        folder = self.out / "_markers"
        return len(list(folder.glob("*.json"))) if folder.exists() else 0

    def descendants(self) -> list[psutil.Process]:
        try:
            return _descendants(psutil.Process(self.proc.pid))
        except psutil.Error:  # the run has ended
            return []

    def browsers(self) -> list[psutil.Process]:
        """Chromium's browser processes (not its zygotes, GPU or renderer children) with a page
        open: a renderer under them."""
        return [
            p
            for p in self.descendants()
            if _flag(p, "--datagen-browser=")
            and "chrom" not in _name(_parent(p))
            and any(_flag(c, "--type=renderer") for c in _descendants(p))
        ]

    def workers(self) -> list[psutil.Process]:
        """The Dask worker processes (spawned by their nannies) that run a browser."""
        return [
            p
            for p in self.descendants()
            if "spawn_main" in " ".join(_cmdline(p))
            and any(_flag(c, "--datagen-browser=") for c in _descendants(p))
        ]

    def kill(self, what: str, process: psutil.Process) -> Kill:
        """SIGKILL the process and wait until it is gone."""
        ports = _listening(process)
        at = len(self.log())
        process.kill()
        assert _gone(process), f"the {what} (pid {process.pid}) survived SIGKILL"
        return Kill(what, process.pid, ports, at)

    def wait_for(self, what: str, condition: Callable[[], bool], deadline: float) -> None:
        while not condition():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"never happened: {what}; the run's log ends:\n{self.log()[-4000:]}")
            time.sleep(0.1)

    def finish(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for process in [*self.descendants(), self.proc]:  # workers and browsers too
                with contextlib.suppress(psutil.Error, ProcessLookupError):
                    process.kill()
            pytest.fail("the run hung; its log ends:\n" + self.log()[-4000:])
        finally:
            self._log.close()


def test_every_task_ends_once_through_all_the_faults(tmp_path: Path) -> None:
    faults = SimConfig(
        speed_factor=20, error_rate=0.10, drop_rate=0.05, slow_rate=0.05, slow_seconds=1.0, seed=5
    )
    out = tmp_path / "out"
    with SimServer(faults) as sim:
        run = Run(write_pipeline(tmp_path, sim.url), out, tmp_path / "run.log")
        deadline = time.monotonic() + KILL_WITHIN_S
        # Chromium dies under running episodes: their shard fails and runs again.
        run.wait_for(
            "a committed shard, then a browser with a page open",
            lambda: run.markers() >= 1 and bool(run.browsers()),
            deadline,
        )
        browser = run.kill("browser", run.browsers()[0])
        run.wait_for(
            "a shard running again after its browser died",
            lambda: "runs again (attempt" in run.log()[browser.log_at :],
            deadline,
        )
        # A whole Dask worker dies, its browser with it: the run reports it lost.
        run.wait_for(
            "a second committed shard, and a worker with a browser",
            lambda: run.markers() >= 2 and bool(run.workers()),
            deadline,
        )
        worker = run.kill("worker", run.workers()[-1])
        code = run.finish(timeout=300)
    log = run.log()
    # The first run absorbs both kills (cluster.retries; the nanny restarts the worker).
    assert code == 0, log[-4000:]
    assert re.search(r"wrote .* in [\d.]+s: complete", log), log[-4000:]
    lost = re.findall(r"workers lost while the run ran: (.*)", log)
    assert lost and worker.ports, (lost, worker)
    assert any(f":{port}" in lost[0] for port in worker.ports), (lost, worker)
    assert "shards run again: " in log, log[-4000:]
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
        "killed": {k.what: k.pid for k in (browser, worker)},
        "episodes": len(episodes),
        "rejects": dict(Counter(reason for _, reason in reasons.elements())),
        "blocked_requests": sum(len(e["blocked_requests"]) for e in episodes),
        "dialogs": sum(e["dialogs"] for e in episodes),
        "popups": sum(e["popups"] for e in episodes),
    }
    print("fault suite:", json.dumps(summary))


def _gone(process: psutil.Process) -> bool:
    """Whether the process has exited (gone, or a zombie its parent has yet to reap) within
    GONE_WITHIN_S."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _listening(process: psutil.Process) -> set[int]:
    try:
        connections = process.net_connections(kind="tcp")
    except psutil.Error:
        return set()
    return {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN}


def _descendants(process: psutil.Process) -> list[psutil.Process]:
    try:
        children: list[psutil.Process] = process.children(recursive=True)
    except psutil.Error:
        return []
    return children


def _parent(process: psutil.Process) -> psutil.Process | None:
    try:
        return process.parent()
    except psutil.Error:
        return None


def _name(process: psutil.Process | None) -> str:
    try:
        return process.name() if process is not None else ""
    except psutil.Error:
        return ""


def _flag(process: psutil.Process, prefix: str) -> bool:
    return any(a.startswith(prefix) for a in _cmdline(process))


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        line: list[str] = process.cmdline()
    except psutil.Error:
        return []
    return line
