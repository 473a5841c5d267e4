"""Runs on a shared, real multi-process Dask cluster: a `dask scheduler` process and `dask
worker` processes (`--nthreads 1`, each in a folder of its own), `datagen run` as a
subprocess with `cluster.address`, real Chromium.

- two runs with different viewports at once on one scheduler each get exactly their own rows,
  and leave no plugin and no browser on the workers;
- a worker SIGKILLed after a shard committed: no committed shard runs again, progress counts
  each episode once, the run names the lost worker;
- a scheduler with no worker, and a worker that cannot start a browser (joining mid-run, or
  the only one): no shard goes to it, the driver names it with the fix.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.daskcluster import ProcessCluster
from tests.helpers import CLI_FROM_A_TERMINAL, each_task_once, rows

# each test chains CLI runs bounded at 300 s apiece
pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(900)]
RUN_S = 300  # the longest a run may take here before the test gives up on it


def pipeline_file(
    folder: Path, address: str, limit: int, wait_s: float = 5, steps: int = 2, **browser: Any
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "name": folder.name,
        "sources": [{"type": "sites"}],
        "browser": browser,
        "cluster": {"address": address, "sessions_per_worker": 2, "wait_for_workers_s": wait_s},
        "run": {"max_steps": steps, "tasks_per_shard": 1, "limit": limit, "seed": 3},
        "output": {"uri": str(folder / "out")},
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def start_run(pipeline: Path) -> subprocess.Popen[bytes]:
    with (pipeline.parent / "run.log").open("wb") as log:
        return subprocess.Popen(
            [*CLI_FROM_A_TERMINAL, "run", str(pipeline)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "COLUMNS": "1000"},
        )


def finish(proc: subprocess.Popen[bytes], pipeline: Path) -> str:
    """Wait for a run; its output (stdout and stderr)."""
    try:
        proc.wait(timeout=RUN_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return log_of(pipeline)


def log_of(pipeline: Path) -> str:
    return (pipeline.parent / "run.log").read_text(errors="replace")


def markers(pipeline: Path) -> dict[str, float]:
    """Committed shards: marker name → when it was written."""
    folder = pipeline.parent / "out" / "_markers"
    found = {}
    for path in folder.glob("*.json") if folder.is_dir() else []:
        try:
            found[path.name] = json.loads(path.read_text())["written_at"]
        except (OSError, ValueError):  # being written
            continue
    return found


def ended(log: str) -> tuple[int, int]:
    """The progress bar's last `ended N/M`."""
    found = re.findall(r"ended\b.*?(\d+)/(\d+)", log)
    assert found, log[-3000:]
    return int(found[-1][0]), int(found[-1][1])


def wait_for(condition: Any, what: str, limit_s: float = RUN_S) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


def worker_state(address: str, skip: str = "") -> dict[str, dict[str, Any]]:
    """Per worker name (but `skip`): its datagen plugins and how many tasks it ran."""
    from distributed import Client

    def look(dask_worker: Any) -> dict[str, Any]:
        return {
            "plugins": sorted(p for p in dask_worker.plugins if p.startswith("datagen")),
            "executed": dask_worker.state.executed_count,
            "resources": dict(dask_worker.state.total_resources),
        }

    with Client(address, timeout=30) as client:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        names = {a: w["name"] for a, w in workers.items() if w["name"] != skip}
        return {names[a]: state for a, state in client.run(look, workers=list(names)).items()}


def scheduler_plugins(address: str) -> list[str]:
    """The datagen worker plugins the scheduler would give a worker joining now."""
    from distributed import Client

    def look(dask_scheduler: Any) -> list[str]:
        return sorted(p for p in dask_scheduler.worker_plugins if p.startswith("datagen"))

    with Client(address, timeout=30) as client:
        return list(client.run_on_scheduler(look))


def test_two_runs_on_one_scheduler_each_get_their_own_rows(tmp_path: Path) -> None:
    viewports = {"wide": (800, 600), "narrow": (640, 480)}
    with ProcessCluster(tmp_path / "machines") as cluster:
        for name in ("w1", "w2"):
            cluster.add_worker(name)
        cluster.wait_for_workers(2)
        pipelines = {
            run: pipeline_file(tmp_path / run, cluster.address, limit=3, steps=1,
                               viewport={"width": w, "height": h})
            for run, (w, h) in viewports.items()
        }  # fmt: skip
        procs = {run: start_run(path) for run, path in pipelines.items()}
        both_registered = False  # seen: both runs past registering, neither ended

        def watch() -> bool:
            nonlocal both_registered
            alive = all(p.poll() is None for p in procs.values())
            going = all("Dask dashboard" in log_of(path) for path in pipelines.values())
            both_registered = both_registered or (alive and going)
            return all(p.poll() is not None for p in procs.values())

        wait_for(watch, "both runs ended")
        logs = {run: finish(procs[run], path) for run, path in pipelines.items()}
        for run, log in logs.items():
            assert procs[run].returncode == 0, log[-4000:]
        assert both_registered, "the runs did not overlap: nothing was shared"
        wait_for(lambda: not cluster.browsers("w1") + cluster.browsers("w2"), "browsers closed")
        left = worker_state(cluster.address)
        assert not scheduler_plugins(cluster.address)  # a worker joining later starts nothing
        # Ctrl-C once a third run's browsers are up: its plugin and browsers go too
        # enough work to be still running when the signal comes (3 tasks ended in a second)
        third = pipeline_file(tmp_path / "stopped", cluster.address, limit=24, steps=4)
        proc = start_run(third)
        wait_for(lambda: proc.poll() is not None or "Dask dashboard" in log_of(third), "started")
        proc.send_signal(signal.SIGINT)
        stopped = finish(proc, third)
        assert proc.returncode == 130, stopped[-3000:]
        wait_for(lambda: not cluster.browsers("w1") + cluster.browsers("w2"), "browsers closed")
        after_stop = worker_state(cluster.address)
        assert not scheduler_plugins(cluster.address)
    for run, (width, height) in viewports.items():
        out = pipelines[run].parent / "out"
        each_task_once(out, 3)
        sizes = {(s["image_width"], s["image_height"]) for s in rows(out, "steps")}
        assert sizes == {(width, height)}, (run, sizes)  # no shard ran under the other's browser
        assert ended(logs[run]) == (3, 3)  # counted only its own episodes
    assert all(not state["plugins"] for state in left.values()), left  # both plugins removed
    assert all(not state["plugins"] for state in after_stop.values()), after_stop
    print(
        f"two runs at once on 2 workers: {viewports} → each its own 3 episodes and sizes; "
        f"left on the workers: {left}"
    )


def test_a_killed_worker_reruns_no_committed_shard(tmp_path: Path) -> None:
    """SIGKILL the worker that has just finished a shard (committed, its result maybe not read
    yet by the driver): that shard is never written again, the run completes, the progress
    counts each episode once and the run names the lost worker."""
    from distributed import Client

    def executed(dask_worker: Any) -> int:
        return int(dask_worker.state.executed_count)

    tasks = 6
    with ProcessCluster(tmp_path / "machines") as cluster:
        for name in ("w1", "w2"):
            cluster.add_worker(name)
        workers = cluster.wait_for_workers(2)
        pipeline = pipeline_file(tmp_path / "run", cluster.address, limit=tasks)
        proc = start_run(pipeline)
        with Client(cluster.address, timeout=30) as client:
            done: dict[str, int] = {}

            def finished_one() -> bool:
                done.update(client.run(executed))
                return proc.poll() is not None or any(done.values())

            wait_for(finished_one, "a worker that finished a shard")
            victim = next(str(workers[a]["name"]) for a, n in done.items() if n)
            os.kill(cluster.worker_pid(victim), signal.SIGKILL)  # as the OOM killer would
        committed = markers(pipeline)
        log = finish(proc, pipeline)
    assert proc.returncode == 0, log[-4000:]
    assert 0 < len(committed) < tasks, "the kill came after the run's end"
    after = markers(pipeline)
    rewritten = [name for name, at in committed.items() if after[name] != at]
    assert not rewritten, f"committed shards written again: {rewritten}"
    each_task_once(pipeline.parent / "out", tasks)
    assert ended(log) == (tasks, tasks)  # each episode once, also those of a rerun shard
    lost = re.search(rf"worker {victim} \(tcp://[\d.:]+\) lost[^\n]*", log)
    assert lost, log[-4000:]
    assert f"workers lost while the run ran: {victim}" in log
    again = re.search(r"shards run again: ([^;]*);", log)
    rerun = {int(n) for n in re.findall(r"(\d+) \(\d+ attempts\)", again[1] if again else "")}
    assert not rerun & {int(name[6:11]) for name in committed}, (rerun, committed)
    print(
        f"killed {victim} after it finished a shard: {len(committed)} of {tasks} shards "
        f"committed at the kill, none written again; shards run again: {sorted(rerun)}; "
        f"the run said: {lost.group(0).strip()!r}"
    )


def test_workers_that_cannot_work_take_no_shard(tmp_path: Path, chromium: str) -> None:
    """The pipeline names `browser.executable: bin/chromium`: the good worker's machine has it
    in its working folder, the other worker's machine has no Chromium there."""
    with ProcessCluster(tmp_path / "machines") as cluster:
        # no worker at all: a bounded wait (what this run waits on: 1 s), then one line
        cluster.wait_up()
        empty = pipeline_file(tmp_path / "empty", cluster.address, limit=2, wait_s=1)
        log = finish(start_run(empty), empty)
        assert "waiting for workers" in log and "Traceback" not in log
        assert re.search(
            r"error: no Dask worker has joined tcp://[\d.:]+ for 1s\. fix: start workers", log
        ), log[-3000:]

        good = cluster.folder("good")
        (good / "bin").mkdir()
        (good / "bin" / "chromium").symlink_to(chromium)
        cluster.add_worker("good", folder=good)
        cluster.wait_for_workers(1)
        tasks = 4
        pipeline = pipeline_file(tmp_path / "run", cluster.address, limit=tasks,
                                 executable="bin/chromium")  # fmt: skip
        proc = start_run(pipeline)
        wait_for(lambda: proc.poll() is not None or markers(pipeline), "a committed shard")
        # Freeze the good worker (its shards wait), so that the run is surely still going
        # when the other worker joins, with shards no worker is taking.
        os.kill(cluster.worker_pid("good"), signal.SIGSTOP)
        try:
            cluster.add_worker("no-chromium")  # joins mid-run; its folder has no bin/chromium
            wait_for(lambda: proc.poll() is not None or "no-chromium" in log_of(pipeline),
                     "the driver hears of the worker without Chromium")  # fmt: skip
            frozen = worker_state(cluster.address, skip="good")
        finally:
            os.kill(cluster.worker_pid("good"), signal.SIGCONT)
        log = finish(proc, pipeline)
        assert proc.returncode == 0, log[-4000:]
        assert len(markers(pipeline)) == tasks
        state = worker_state(cluster.address)
        # the only one left: the good worker is gone, the bad one fails its setup again
        cluster.kill("good")
        alone = pipeline_file(tmp_path / "alone", cluster.address, limit=2,
                              executable="bin/chromium")  # fmt: skip
        alone_log = finish(start_run(alone), alone)
        after_error = worker_state(cluster.address)  # the failed run removed its plugin too
    each_task_once(pipeline.parent / "out", tasks)
    said = re.search(r"worker no-chromium \(tcp://[\d.:]+\) cannot run[^\n]*", log)
    assert said, log[-4000:]
    assert "'bin/chromium' does not exist. fix: on that worker's machine, install" in said[0]
    assert frozen["no-chromium"]["executed"] == 0, frozen  # idle, with shards waiting
    assert state["no-chromium"]["executed"] == 0, state  # it took no shard
    assert state["good"]["executed"] >= tasks, state
    assert "Traceback" not in log + alone_log, _around("Traceback", log + alone_log)
    error = re.search(r"error: no worker of tcp://[\d.:]+ can run[^\n]*", alone_log)
    assert error and "worker no-chromium (tcp://" in error[0], alone_log[-3000:]
    assert "does not exist. fix: on that worker's machine, install" in error[0]
    assert after_error["no-chromium"]["plugins"] == [], after_error
    print(f"no workers: {re.search(r'error: .*', log_of(empty))[0]!r}")
    print(f"a worker without Chromium joining mid-run: {said[0]!r}; tasks run: {state}")
    print(f"only that worker: {error[0]!r}")


def _around(needle: str, text: str, width: int = 3000) -> str:
    """The text from a little before `needle` on (what an assertion about it shows)."""
    text = "\n".join(line.strip() for line in text.splitlines() if line.strip())
    at = text.find(needle)
    return text[max(at - 500, 0) : at + width] if at >= 0 else text[-width:]
