"""What every bench shares: arguments, the machine's conditions, the things a bench starts (the
sites, the stand-in, a `datagen run`, a shard's surroundings) and result tables.

Each bench measures a ratio against a baseline it measures itself, in the same run (bare
Playwright, bare pyarrow, the client alone, a static cap, a naive loop): a figure from another
run, or another machine, is not compared. Method and results: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
import pyarrow.dataset as ds
import yaml

from datagen.config import SimConfig
from datagen.engine.sim.server import free_port
from datagen.source.readers import BUNDLED_SITES, read_sites

REPO = Path(__file__).resolve().parents[1]
PAGES = REPO / "tests" / "fixtures" / "pages"
DEMO = REPO / "pipelines" / "demo.yaml"
Row = tuple[str, str, str, bool | None]  # what, measured, target, met (None: no target)


# ----------------------------------------------------------------------- arguments, results


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser described by the bench's docstring, with `--json OUT`."""
    p = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write results here")
    return p


def at_least_one(
    p: argparse.ArgumentParser, args: argparse.Namespace, names: tuple[str, ...]
) -> argparse.Namespace:
    """`args`, once each of the counts `names` is at least 1 (else the parser's error)."""
    for name in names:
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def write_json(path: Path | None, report: Any) -> None:
    """`report` as JSON at `path` (nothing when None), with the date and command."""
    if path is None:
        return
    if isinstance(report, dict):
        stamp = {"date": datetime.now(UTC).isoformat(timespec="seconds")}
        report = stamp | {"command": " ".join(["python", *sys.argv])} | report
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")


def print_table(rows: list[Row], title: str = "figure") -> None:
    """Figures against their targets, one a line: what, measured, target, met (yes / NO)."""
    width = max([len(title), *(len(r[0]) for r in rows)])
    print(f"\n{title:<{width}}  {'measured':<28} {'target':<7} met")
    for what, measured, goal, met in rows:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{what:<{width}}  {measured:<28} {goal:<7} {mark}")


def print_columns(columns: dict[str, dict[str, Any]]) -> None:
    """Figures side by side: a column per name (a side, a run), a line per key (floats to at
    most 3 places; a key a column lacks is blank)."""

    def cell(v: Any) -> str:
        return f"{v:.3f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)

    cells = {n: {k: cell(v) for k, v in c.items()} for n, c in columns.items()}
    keys = list(dict.fromkeys(k for c in cells.values() for k in c))
    width = {n: max(len(n), *map(len, c.values())) for n, c in cells.items()}
    first = max(map(len, keys))
    print(" " * first + "".join(f"  {n:>{width[n]}}" for n in cells))
    for k in keys:
        print(f"{k:<{first}}" + "".join(f"  {c.get(k, ''):>{width[n]}}" for n, c in cells.items()))


# ----------------------------------------------------------------------- the machine


def busy_seconds() -> float:
    """CPU seconds spent by everything on the machine (all cores). Steal counts: a hypervisor
    giving our cores to others is noise too (guest time is inside user already)."""
    t = psutil.cpu_times()
    fields = ("user", "nice", "system", "irq", "softirq", "steal")
    return float(sum(getattr(t, name, 0.0) for name in fields))


PROCESS_KINDS = {
    "--type=renderer": "chromium renderers",
    "--type=gpu-process": "chromium GPU process",
    "--type=utility": "chromium utility/zygote",
    "--type=zygote": "chromium utility/zygote",
}


def kind(cmdline: list[str]) -> str:
    """What a process is, from its command line (none: one that exited before it was seen)."""
    line = " ".join(cmdline)
    if not line:
        return "exited before seen"
    if "chrom" in line:
        return next(
            (name for flag, name in PROCESS_KINDS.items() if flag in line), "chromium browser"
        )
    if "node" in line:
        return "Playwright driver (node)"
    if "spawn_main" in line:
        return "Python: Dask workers"
    return "Python: driver, scheduler, bench"


class ProcessCpu:
    """`with ProcessCpu(root) as cpu: ...`; then `cpu.by_kind`: CPU seconds during the block by
    kind of process (Chromium's browser, renderers, GPU; Playwright's driver; Python) under
    `root`. A thread reads every descendant's CPU time every `interval_s` and keeps each one's
    last reading, so a process that exits between two readings loses at most one interval of
    its time (renderers of short episodes do: the figures are a floor, within a few per cent of
    the machine's own count on these runs)."""

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
                    line = process.cmdline()
                # a process exiting (not yet a zombie) shows no command line: the kind it had
                # (a closed page's renderer was counted as the driver's Python)
                seen = self._last.get(process.pid)
                name = seen[0] if not line and seen is not None else kind(line)
                readings[process.pid] = (name, float(times.user + times.system))
            except psutil.Error:
                continue
        return readings

    @property
    def total(self) -> float:
        return float(sum(self.by_kind.values()))


class Conditions:
    """Load average before and after, and the machine's busy cores over the span."""

    def __init__(self) -> None:
        self.load_before = os.getloadavg()
        self.busy0, self.t0 = busy_seconds(), time.monotonic()

    def end(self) -> dict[str, Any]:
        span = time.monotonic() - self.t0
        return {
            "load_before": [round(x, 2) for x in self.load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "busy_cores": round((busy_seconds() - self.busy0) / span, 2) if span else 0.0,
            "cpus": os.cpu_count(),
        }


def conditions_line(c: dict[str, Any]) -> str:
    def load(v: list[float]) -> str:
        return "/".join(f"{x:.2f}" for x in v)

    return (
        f"load average {load(c['load_before'])} before, {load(c['load_after'])} after; "
        f"{c['busy_cores']:.2f} of {c['cpus']} cores busy"
    )


# ----------------------------------------------------------------------- a shard, a datagen run


def write_pipeline(folder: Path, name: str, spec: dict[str, Any]) -> Path:
    """A pipeline file from `spec` (the bench's settings), named `name`.yaml in `folder`."""
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def write_tasks(folder: Path, n: int) -> Path:
    """`n` tasks: the bundled sites' tasks in turn, each copy with its own id."""
    base = read_sites(BUNDLED_SITES)
    path = folder / "tasks.jsonl"
    with path.open("w") as fh:
        for i in range(n):
            t = base[i % len(base)]
            task: dict[str, Any] = {"id": f"{t.id}-{i}", "start_url": t.start_url}
            task["instruction"] = t.instruction
            if t.check is not None:
                task["check"] = t.check.model_dump(exclude_none=True)
            fh.write(json.dumps(task) + "\n")
    return path


@dataclass
class Run:
    """One `datagen run`: its exit code, the shard phase (browsers up → last marker) and what it
    committed."""

    code: int
    wall_s: float
    startup_s: float
    phase_s: float
    steps: int
    ended: int  # tasks × repeats ended (episode rows + task/episode rejects)
    episodes: int
    shards: int
    shard_seconds: float
    busy_cores: float
    held_by: str = ""  # the run summary's "what held sessions in flight" line (which limit binds)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU-s by kind of process, shard phase
    peak_sessions: list[int] = field(default_factory=list)  # each shard's
    rejects: dict[str, int] = field(default_factory=dict)  # the manifest's reasons


def run_datagen(pipeline: Path, out: Path, timeout_s: float = 1200) -> Run:
    """`datagen run` as a subprocess; its "Dask dashboard" line marks the browsers up."""
    began = time.time()
    cmd = [sys.executable, "-m", "datagen", "run", str(pipeline), "--output", str(out)]
    # compiled modules kept, as a user's Python keeps them (scripts/test.sh says why): with
    # PYTHONDONTWRITEBYTECODE set, each process compiled what changed since the last write
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**env, "COLUMNS": "250", "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    started: float | None = None
    busy0, held_by, tail = 0.0, "", list[str]()
    assert proc.stdout is not None
    with ProcessCpu(psutil.Process(proc.pid)) as cpu:
        for line in proc.stdout:
            tail = [*tail, line][-20:]
            if "what held sessions" in line:
                held_by = " ".join(line.split())
            if started is None and "Dask dashboard" in line:
                started, busy0 = time.time(), busy_seconds()
                cpu.restart()
        code = proc.wait(timeout_s)
    ended_at = time.time()
    markers = [json.loads(p.read_text()) for p in (out / "_markers").glob("*.json")]
    if code != 0 or not markers:
        print("".join(tail), file=sys.stderr)
    last = max((m["written_at"] for m in markers), default=ended_at)
    if started is None:  # no dashboard line: the first shard's start instead
        started = min((m["written_at"] - m["stats"]["seconds"] for m in markers), default=began)
    stats = [m["stats"] for m in markers]
    rejects = table(out, "rejects", ["stage"])
    manifest = out / "_manifest.json"
    reasons = (
        json.loads(manifest.read_text()).get("reject_reasons", {}) if manifest.exists() else {}
    )
    return Run(
        code=code, wall_s=round(ended_at - began, 2), startup_s=round(started - began, 2),
        phase_s=round(max(1e-6, last - started), 2), steps=sum(s["steps"] for s in stats),
        ended=sum(s["episodes"] for s in stats) + sum(r["stage"] in ("task", "episode") for r in rejects),
        episodes=sum(s["episodes"] for s in stats), shards=len(stats),
        shard_seconds=round(sum(s["seconds"] for s in stats), 2),
        busy_cores=round((busy_seconds() - busy0) / (ended_at - started), 2) if busy0 else 0.0,
        held_by=held_by, cpu={k: round(v, 2) for k, v in cpu.by_kind.items()},
        peak_sessions=[s.get("peak_sessions", 0) for s in stats], rejects=reasons,
    )  # fmt: skip


def table(out: Path, name: str, columns: list[str]) -> list[dict[str, Any]]:
    """Committed rows of one output table (the columns asked for)."""
    folder = out / name
    if not folder.exists() or not any(folder.glob("*.parquet")):
        return []
    rows: list[dict[str, Any]] = (
        ds.dataset(folder, format="parquet").to_table(columns=columns).to_pylist()
    )
    return rows


# ----------------------------------------------------------------------- the stand-in

# Calibrations this bench applies itself (POST /sim/config), for a stand-in without named ones.
# "linear": every engine step takes t_fixed whatever it holds (no per-sequence, per-prefill-token
# or per-tile cost, and a token budget no prompt reaches), so throughput grows in proportion to
# the requests running up to max_num_seqs, as published for Holotron-12B (linear to 100 agents);
# t_fixed is the step time of the stand-in's `holotron-12b/all-tokens` fit. "standin": the
# stand-in's own defaults (prefill-bound, flat beyond ~16 in flight); "" as given on the
# command line. Any other name is the stand-in's own (`datagen engine sim --calibration NAME`).
BUILTIN: dict[str, dict[str, float | int]] = {
    "linear": {
        "t_fixed_ms": 635.4,
        "per_seq_ms": 0.0,
        "per_prefill_token_ms": 0.0,
        "per_tile_ms": 0.0,
        "max_num_batched_tokens": 1_000_000,
    },
    "standin": {},
    "": {},
}


class StandIn:
    """`datagen engine sim` in its own process (its CPU is not the bench's), calibrated."""

    def __init__(
        self, capacity: int, speed: float, calibration: str = "", extra: list[str] | None = None
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.calibration = calibration
        cmd = [sys.executable, "-m", "datagen", "engine", "sim", "--port", str(self.port)]
        cmd += ["--max-num-seqs", str(capacity), "--speed-factor", str(speed), *(extra or [])]
        if calibration not in BUILTIN:
            cmd += ["--calibration", calibration]
        # a file, not a pipe: a full pipe would stall the stand-in; closed in close()
        self.log = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log)

    def __enter__(self) -> StandIn:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(self.url + "/health", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.log.seek(0)
                    said = self.log.read().decode(errors="replace")[-500:]
                    self.close()
                    raise RuntimeError(f"the stand-in did not come up in 30 s: {said}") from None
                time.sleep(0.2)
        changes = BUILTIN.get(self.calibration)
        if changes:
            httpx.post(self.url + "/sim/config", json=changes, timeout=5).raise_for_status()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()

    def stats(self) -> dict[str, Any]:
        reply: dict[str, Any] = httpx.get(self.url + "/sim/stats", timeout=5).json()
        return reply

    def config(self) -> SimConfig:
        """The stand-in's settings now, for its engine model (`virtual_rate`)."""
        return SimConfig(**self.stats()["config"])
