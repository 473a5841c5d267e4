"""A run's outcome as the driver hands it to the CLI: `RunSummary` (the manifest, the shards
skipped, failed, redone, the limits that held, the workers' fate in `WorkerReport`).

    runtime.execute() ─► RunSummary ─► observe.summary.show_summary() ─► the terminal

Plain data, no Dask: it lives here, below `runtime` (which fills it) and beside `summary`
(which shows it), so that showing a run's end imports nothing of the runtime and the two
packages import each other in one direction only (tests/unit/test_architecture.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from datagen.records import Resumed, ShardResult
from datagen.sink.models import Manifest


@dataclass
class WorkerReport:
    """What happened to the run's workers (for the summary)."""

    failed: dict[str, str] = field(default_factory=dict)  # worker → why, with the fix
    lost: list[str] = field(default_factory=list)  # workers lost while the run ran
    rerun: dict[int, int] = field(default_factory=dict)  # shard → times its task started
    reused: list[int] = field(default_factory=list)  # shards found committed when run again


@dataclass
class RunSummary:
    """The outcome of `execute`."""

    manifest: Manifest | None = None  # set when the run ends (`finalize`)
    results: list[ShardResult] = field(default_factory=list)
    skipped_shards: list[int] = field(default_factory=list)
    resumed: Resumed = field(default_factory=Resumed)  # what those shards hold
    failed_shards: dict[int, str] = field(default_factory=dict)
    # committed shards that failed the integrity check: marker removed, run again; shard → why
    redone_shards: dict[int, str] = field(default_factory=dict)
    # shards another live run of the pipeline held when this one started; of them, those it
    # committed (the rest this run took over when that run stopped)
    leased_elsewhere: list[int] = field(default_factory=list)
    other_run_shards: list[int] = field(default_factory=list)
    seconds: float = 0.0
    dashboard: str = ""
    report: str = ""  # the run report's location, when one was written
    # the model's roles measured from the committed output (`roles.run_measures`), read once
    # for the report and the summary; None: not read yet
    measures: list[str] | None = None
    # worker-seconds each limit held sessions in flight (engine, cpu, memory, sessions, tasks)
    bound_s: dict[str, float] = field(default_factory=dict)
    workers: WorkerReport = field(default_factory=WorkerReport)  # failed, lost; shards rerun
