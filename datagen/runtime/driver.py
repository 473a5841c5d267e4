"""Running a plan on Dask: start or join a cluster, put a browser on every worker, submit one
task per pending shard, follow progress, finish with the manifest.

    Plan ─► execute() ─► (shards on workers) ─► manifest ─► RunSummary

Completed shards (marker present) are skipped, so rerunning a killed run completes it.
`retries` re-runs a shard whose worker died; `allowed-failures` bounds how many worker deaths
one shard may cause, so one poisonous task cannot take the whole run down.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import dask
from distributed import Client, LocalCluster, as_completed

from datagen.config import ClusterConfig
from datagen.observe.report import Timeline, step_latencies, write_report
from datagen.plan import Plan
from datagen.records import Resumed, ShardResult
from datagen.runtime.endpoint import engine_endpoint
from datagen.runtime.plugin import BrowserPlugin
from datagen.runtime.tasks import PROGRESS_TOPIC, run_shard_task
from datagen.sink.manifest import finalize
from datagen.sink.read import read_committed
from datagen.sink.storage import Storage, output_storage
from datagen.sink.writer import claim_output, completed_shards, read_markers

log = logging.getLogger(__name__)


class RunProgress(Protocol):
    """What the driver reports while it runs (the CLI draws it; tests may record it)."""

    def started(self, dashboard: str, episodes: int, resumed: Resumed) -> None: ...
    def episode(self, event: dict[str, Any]) -> None: ...
    def shard(self, result: ShardResult) -> None: ...


@dataclass
class RunSummary:
    """The outcome of `execute`."""

    manifest: dict[str, Any]
    results: list[ShardResult] = field(default_factory=list)
    skipped_shards: list[int] = field(default_factory=list)
    resumed: Resumed = field(default_factory=Resumed)  # what those shards hold
    failed_shards: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0
    dashboard: str = ""
    report: str = ""  # the run report's location, when one was written


@contextlib.contextmanager
def connect(config: ClusterConfig) -> Iterator[Client]:
    """A client to the configured scheduler, or to a new LocalCluster of worker processes."""
    with dask.config.set({"distributed.scheduler.allowed-failures": config.allowed_failures}):
        if config.address:
            with Client(config.address) as client:
                yield client
            return
        with (
            LocalCluster(
                n_workers=config.workers,
                threads_per_worker=1,  # one shard at a time per worker; concurrency is inside it
                processes=True,
                dashboard_address=config.dashboard,
                silence_logs=logging.ERROR,
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client


def _worker_count(client: Client, config: ClusterConfig) -> int:
    """Workers sharing the engine budget: the LocalCluster's, or those a scheduler has now."""
    if not config.address:
        return config.workers
    return max(1, len(client.scheduler_info().get("workers", {})))


def execute(plan: Plan, progress: RunProgress) -> RunSummary:
    """Run every pending shard of the plan and write the manifest."""
    started = time.perf_counter()
    config = plan.config
    storage = output_storage(config.output)
    claim_output(storage, plan.run_id, config.model_dump(mode="json"))
    done = completed_shards(storage)
    pending = [i for i in plan.shard_ids if i not in done]
    summary = RunSummary(manifest={}, skipped_shards=sorted(done & set(plan.shard_ids)))
    engine: dict[str, Any] = {}
    timeline: Timeline | None = None
    summary.resumed = resumed = _resumed(storage, plan, summary.skipped_shards)
    if pending:
        with engine_endpoint(config) as (config, engine), connect(config.cluster) as client:
            summary.dashboard = client.dashboard_link
            workers = _worker_count(client, config.cluster)
            client.register_plugin(BrowserPlugin(config, workers=workers))
            timeline = Timeline(client).start()
            try:
                client.subscribe_topic(PROGRESS_TOPIC, lambda event: progress.episode(event[1]))
                progress.started(summary.dashboard, plan.episodes, resumed)
                futures = {
                    client.submit(
                        run_shard_task,
                        index,
                        plan.shards[index],
                        config,
                        plan.run_id,
                        key=f"shard-{index:05d}-{plan.run_id}",
                        retries=config.cluster.retries,
                        pure=False,
                    ): index
                    for index in pending
                }
                for future in as_completed(futures):
                    index = futures[future]
                    try:
                        result = future.result()
                    except Exception as exc:  # a shard that failed for good: the run goes on
                        log.error("shard %d failed: %s", index, exc, extra={"shard": index})
                        summary.failed_shards[index] = f"{type(exc).__name__}: {exc}"
                        continue
                    summary.results.append(result)
                    progress.shard(result)
                client.unsubscribe_topic(PROGRESS_TOPIC)
            finally:
                timeline.stop()  # also when the run fails: no thread left polling
    else:
        progress.started("", plan.episodes, resumed)
    summary.manifest = finalize(storage, plan.shard_ids, {"engine": engine} if engine else {})
    summary.seconds = time.perf_counter() - started
    if timeline is not None:
        summary.report = _report(storage, timeline, summary, config.output)
    return summary


def _resumed(storage: Storage, plan: Plan, skipped: list[int]) -> Resumed:
    """What the committed shards this run skips hold: every task × repeat of them ended, and
    their markers say how many as episodes (the rest are rejects)."""
    if not skipped:
        return Resumed()
    wanted = set(skipped)
    markers = [m for m in read_markers(storage) if m["shard"] in wanted]
    episodes = sum(int(m.get("stats", {}).get("episodes", 0)) for m in markers)
    ended = sum(len(plan.shards[i]) for i in skipped) * plan.config.run.repeats
    return Resumed(shards=len(skipped), ended=ended, episodes=episodes)


def _report(storage: Storage, timeline: Timeline, summary: RunSummary, output: Any) -> str:
    """The HTML run report in the output; a failure to write it is logged, never fatal."""
    try:
        dataset = read_committed(output.uri, "steps", output.endpoint_url)
        key = write_report(
            storage, timeline, summary.manifest, step_latencies(dataset), summary.seconds
        )
    except Exception:
        log.warning("run report not written", exc_info=True)
        return ""
    return f"{storage.uri.rstrip('/')}/{key}"
