"""CPU seconds by kind of process (Chromium's browser, renderers, GPU; Playwright's driver;
Python) under one root process, sampled while something runs.

A thread reads every descendant's CPU time every `interval_s` and keeps each process's last
reading, so a process that exits between two readings loses at most one interval of its time
(renderers of short episodes do: the figures are a floor, within a few per cent of the machine's
own count on these runs). Used by bench/e2e.py to say where a step's CPU goes.
"""

from __future__ import annotations

import threading

import psutil

KINDS = {
    "--type=renderer": "chromium renderers",
    "--type=gpu-process": "chromium GPU process",
    "--type=utility": "chromium utility/zygote",
    "--type=zygote": "chromium utility/zygote",
}


def kind(cmdline: list[str]) -> str:
    """What a process is, from its command line."""
    line = " ".join(cmdline)
    if "chrom" in line:
        return next((name for flag, name in KINDS.items() if flag in line), "chromium browser")
    if "node" in line:
        return "Playwright driver (node)"
    if "spawn_main" in line:
        return "Python: Dask workers"
    return "Python: driver, scheduler, bench"


class ProcessCpu:
    """`with ProcessCpu(root) as cpu: ...`; then `cpu.by_kind` (CPU seconds during the block)."""

    def __init__(self, root: psutil.Process | None = None, interval_s: float = 0.25) -> None:
        self.root = root or psutil.Process()
        self.interval_s = interval_s
        self.by_kind: dict[str, float] = {}
        self._start: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def __enter__(self) -> ProcessCpu:
        self.restart()
        self._thread.start()
        return self

    def restart(self) -> None:
        """Count from now on (the time of processes already running so far is left out)."""
        self._start = {pid: cpu for pid, (_, cpu) in self._read().items()}

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._last.update(self._read())
        for pid, (name, cpu) in self._last.items():
            self.by_kind[name] = self.by_kind.get(name, 0.0) + cpu - self._start.get(pid, 0.0)

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._last.update(self._read())

    def _read(self) -> dict[int, tuple[str, float]]:
        readings: dict[int, tuple[str, float]] = {}
        try:
            processes = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return readings
        for process in processes:
            try:
                with process.oneshot():  # the kind each time: a forked renderer first shows
                    times = process.cpu_times()  # its zygote's command line
                    name = kind(process.cmdline())
                readings[process.pid] = (name, float(times.user + times.system))
            except psutil.Error:
                continue
        return readings

    @property
    def total(self) -> float:
        return float(sum(self.by_kind.values()))
