"""A real multi-process Dask cluster for tests: a `dask scheduler` process and `dask worker`
processes (`--nthreads 1`, no nanny), each started in a folder of its own, as on machines
that share nothing but the scheduler's address.

    with ProcessCluster(tmp_path) as cluster:
        cluster.add_worker("w1")
        ... cluster.address ...
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

DASK = str(Path(sys.executable).parent / "dask")
START_S = 90.0  # a cold start of a worker process on a loaded 2-core machine


class ProcessCluster:
    """The scheduler starts on `__enter__`; workers are added (and killed) by the test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.address = ""
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def __enter__(self) -> ProcessCluster:
        folder = self.folder("scheduler")
        file = folder / "scheduler.json"
        self._start(
            "scheduler",
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
             "127.0.0.1:0", "--scheduler-file", str(file)],
            folder,
        )  # fmt: skip
        self._wait(lambda: _address(file), "the scheduler's address file")
        self.address = _address(file)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for name in reversed(list(self.procs)):
            self.kill(name)

    def folder(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def add_worker(
        self, name: str, folder: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """A `dask worker` process started in `folder` (its own, by default); returns at once:
        `wait_for_workers` waits until it has joined."""
        folder = folder or self.folder(name)
        return self._start(
            name,
            [DASK, "worker", self.address, "--name", name, "--nthreads", "1", "--no-nanny",
             "--no-dashboard", "--local-directory", str(folder / "dask")],
            folder,
            env,
        )  # fmt: skip

    def wait_for_workers(self, n: int) -> dict[str, Any]:
        """Block until `n` workers have joined; their scheduler_info entries by address."""
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n, timeout=START_S)
            return dict(client.scheduler_info(n_workers=-1)["workers"])

    def worker_pid(self, name: str) -> int:
        return self.procs[name].pid

    def log(self, name: str) -> str:
        return (self.folder(name) / "process.log").read_text(errors="replace")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Kill the process and everything it started (its browsers too)."""
        proc = self.procs.get(name)
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)

    def browsers(self, name: str) -> list[psutil.Process]:
        """The Chromium processes the worker runs now."""
        try:
            children = psutil.Process(self.procs[name].pid).children(recursive=True)
        except psutil.Error:
            return []
        return [p for p in children if _is_chromium(p)]

    def _start(
        self, name: str, command: list[str], folder: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        with (folder / "process.log").open("ab") as log:
            proc = subprocess.Popen(
                command,
                cwd=folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env if env is not None else os.environ.copy(),
                start_new_session=True,  # its own process group: killed with its browsers
            )
        self.procs[name] = proc
        return proc

    def _wait(self, condition: Any, what: str) -> None:
        deadline = time.monotonic() + START_S
        while not condition():
            assert time.monotonic() < deadline, f"never happened: {what}"
            time.sleep(0.1)


def _is_chromium(process: psutil.Process) -> bool:
    try:
        return "chrom" in process.name().lower()
    except psutil.Error:
        return False


def _address(file: Path) -> str:
    try:
        return str(json.loads(file.read_text())["address"])
    except (OSError, ValueError, KeyError):  # not there yet, or half written
        return ""
