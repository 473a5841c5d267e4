"""Running a plan on Dask: start or join a cluster, put a browser on every worker, submit one
task per pending shard, follow progress, finish with the manifest.

    Plan ─► execute() ─► (shards on workers) ─► manifest ─► RunSummary

Completed shards (marker present) are skipped, so rerunning a killed run completes it.
`retries` re-runs a shard whose worker died; `allowed-failures` bounds how many worker deaths
one shard may cause, so one poisonous task cannot take the whole run down.

A run on a shared scheduler is isolated: its plugin, event topic, resource and task keys are
named per invocation (`RunNames`), its shards go only to workers whose browser for it started,
and its plugin is removed when it ends, also when it fails or is interrupted. Each result is
released once read, so a lost worker never makes Dask recompute a committed shard.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import dask
from distributed import Client, LocalCluster, as_completed
from distributed.utils import format_dashboard_link

from datagen.config import ClusterConfig, PipelineConfig
from datagen.errors import WorkersUnavailable
from datagen.observe.outcome import RunSummary
from datagen.observe.roles import run_measures
from datagen.records import Resumed, ShardResult
from datagen.runplan import Plan
from datagen.runtime.dashboard import add_page
from datagen.runtime.endpoint import engine_endpoint
from datagen.runtime.hosts import run_hosts, unblocked
from datagen.runtime.plugin import BrowserPlugin, RunNames
from datagen.runtime.probe import check_output_reach
from datagen.runtime.report import LATENCIES, Timeline, step_latencies, write_report
from datagen.runtime.tasks import OutputFull, run_shard_task
from datagen.runtime.workers import WorkerWatch
from datagen.sink.lease import ShardLeases
from datagen.sink.manifest import finalize
from datagen.sink.models import EngineInfo, Manifest
from datagen.sink.read import read_committed
from datagen.sink.storage import Storage, output_storage
from datagen.sink.verify import distrust, verify_output
from datagen.sink.writer import claim_output, completed_shards, read_markers
from datagen.versions import __version__

log = logging.getLogger(__name__)


class RunProgress(Protocol):
    """What the driver reports while it runs (the CLI draws it; tests may record it)."""

    def started(self, dashboard: str, episodes: int, resumed: Resumed) -> None: ...
    def episode(self, event: dict[str, Any]) -> None: ...
    def shard(self, result: ShardResult) -> None: ...


# Our own LocalCluster's periodic upkeep, slowed. With Dask's defaults an idle cluster of two
# workers spent ~90 ms of CPU each second (scheduler, nannies and workers: each server's event
# loop woken every 20 ms to time itself, a system monitor reading /proc every 500 ms in every
# process, each nanny and worker reading its worker's memory every 100 ms), ~20 ms with these;
# a demo run spends 0.6-1 s of wall time per recorded step, so that was 40-70 ms of CPU a step
# (docs/benchmarks.md, "Verification"). What they feed keeps working, coarser: the "event loop
# unresponsive" warning (3 s), the dashboard's system page, the nanny's memory limit (a worker
# process's own memory, which grows over seconds; Chromium's is bounded by datagen itself).
QUIET_CLUSTER = {
    "distributed.admin.tick.interval": "200ms",
    "distributed.admin.system-monitor.interval": "1s",
    "distributed.worker.memory.monitor-interval": "500ms",
}


@contextlib.contextmanager
def connect(config: ClusterConfig) -> Iterator[Client]:
    """A client to the configured scheduler, or to a new LocalCluster of worker processes."""
    settings: dict[str, object] = {
        "distributed.scheduler.allowed-failures": config.allowed_failures,
        # The statistical profiler samples task threads every 10 ms (~4% of a worker's CPU
        # here); a shard task's thread only waits for the browser loop, so its profile says
        # nothing. Our own LocalCluster's workers go without; a running scheduler's keep theirs.
        "distributed.worker.profile.enabled": bool(config.address),
    }
    if not config.address:
        settings |= QUIET_CLUSTER
    with dask.config.set(settings):
        if config.address:
            with Client(config.address) as client:
                yield client
            return
        cluster = _spawn_deaf_to_ctrl_c(
            lambda: LocalCluster(
                n_workers=config.workers,
                # One thread is enough: each shard task secedes once its shard is on the
                # browser loop, and the run's resource bounds the shards in flight per worker.
                threads_per_worker=1,
                processes=True,
                dashboard_address=config.dashboard,
                silence_logs=logging.ERROR,
            )
        )
        with cluster, Client(cluster) as client:
            yield client


def _spawn_deaf_to_ctrl_c(make: Callable[[], LocalCluster]) -> LocalCluster:
    """Start the LocalCluster with SIGINT ignored here, so in the workers it spawns.

    Ctrl-C goes to the terminal's whole process group: each worker would get it mid-import or
    mid-episode (a traceback per worker, browsers closed under running shards). An ignored
    signal stays ignored across exec, and Python then installs no handler of its own, so the
    workers never see it; this process gets it back once the cluster is up and closes the
    cluster in order. The cost: a Ctrl-C during the few seconds of the start is lost (press it
    again). Workers a nanny respawns later ignore it from the plugin's setup.
    """
    if threading.current_thread() is not threading.main_thread():
        return make()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return make()
    finally:
        signal.signal(signal.SIGINT, before)


def _worker_count(client: Client, config: ClusterConfig) -> int:
    """Workers sharing the engine budget: the LocalCluster's, or those a scheduler has now."""
    if not config.address:
        return config.workers
    return max(1, len(client.scheduler_info().get("workers", {})))


def dashboard_link(client: Client) -> str:
    """The dashboard's URL at the address it listens on. Dask's own link names the scheduler's
    host (127.0.0.1 for a LocalCluster) wherever the dashboard bound: with `0.0.0.0:8787` it
    said 127.0.0.1 while every interface was open. For a running scheduler (`address`), Dask's
    link: only that machine knows where its dashboard listens."""
    scheduler = getattr(client.cluster, "scheduler", None)
    server = getattr(scheduler, "services", {}).get("dashboard")
    if server is None:
        return str(client.dashboard_link or "")
    host = str(server.address)
    return str(format_dashboard_link(f"[{host}]" if ":" in host else host, server.port))


def execute(plan: Plan, progress: RunProgress, verify: bool = False) -> RunSummary:
    """Run every pending shard of the plan and write the manifest.

    Committed shards are checked first, by size (and sha256 with `verify`): one that fails
    loses its marker and is redone. Shards that another live run of the same pipeline holds
    are left to it; this run waits for them and takes over those whose holder stops."""
    storage = output_storage(plan.config.output)
    claim_output(storage, plan.run_id, plan.config.model_dump(mode="json"))
    with ShardLeases(storage, plan.run_id) as leases:
        return _execute(plan, progress, storage, leases, verify)


def _execute(
    plan: Plan, progress: RunProgress, storage: Storage, leases: ShardLeases, verify: bool
) -> RunSummary:
    started = time.perf_counter()
    config = plan.config
    swept = leases.sweep()
    if swept:
        log.info("removed %d leftovers of killed runs: %s", len(swept), ", ".join(swept[:5]))
    summary = RunSummary(redone_shards=_check_committed(storage, verify, unblocked(storage, plan)))
    done = completed_shards(storage)
    pending = [i for i in plan.shard_ids if i not in done]
    summary.skipped_shards = sorted(done & set(plan.shard_ids))
    mine = leases.take(pending)
    elsewhere = [i for i in pending if i not in mine]
    if elsewhere:
        log.warning(
            "%d shards are being run by another run of this pipeline (%s): this run waits for "
            "them and takes over any whose run stops",
            len(elsewhere),
            ", ".join(str(h) for h in leases.others()) or "ending",
        )
        if not mine:  # nothing to do here until that run commits them or stops
            mine = leases.wait(elsewhere)
    engine: EngineInfo | None = None
    timeline: Timeline | None = None
    summary.resumed = resumed = _resumed(storage, plan, summary.skipped_shards)
    submitted: set[int] = set()
    if mine:
        with engine_endpoint(config) as (config, engine), connect(config.cluster) as client:
            summary.dashboard = dashboard_link(client)
            timeline = Timeline(client).start()
            run = _ClusterRun(client, plan, config, progress, leases, summary, submitted)
            try:
                with run_hosts(client, run.names.tag, config, storage):  # cluster-wide limits
                    run.run(mine, elsewhere)
            finally:
                timeline.stop()  # also when the run fails: no thread left polling
    else:
        progress.started("", plan.episodes, resumed)
    summary.leased_elsewhere = elsewhere
    summary.other_run_shards = sorted(set(elsewhere) - submitted)
    summary.manifest = manifest = finalize(storage, plan.shard_ids, engine, busy=leases.busy())
    summary.seconds = time.perf_counter() - started
    if timeline is not None:
        summary.bound_s = timeline.bound_seconds()
        summary.measures = run_measures(manifest)  # read once, for the report and the summary
        summary.report = _report(storage, timeline, manifest, summary, config.output)
    return summary


class _ClusterRun:
    """One run's time on the cluster: its plugin on the workers, its shards submitted to the
    workers that started it, their results read (and released) as they come."""

    def __init__(
        self,
        client: Client,
        plan: Plan,
        config: PipelineConfig,
        progress: RunProgress,
        leases: ShardLeases,
        summary: RunSummary,
        submitted: set[int],
    ) -> None:
        self.client, self.plan, self.config, self.progress = client, plan, config, progress
        self.leases, self.summary, self.submitted = leases, summary, submitted
        self.names = RunNames.new(plan.run_id, leases.token)
        where = config.cluster.address or "the local cluster"
        expected = 0 if config.cluster.address else config.cluster.workers
        wait_s = config.cluster.wait_for_workers_s
        self.watch = WorkerWatch(client, self.names, where, wait_s, expected)
        self.futures: dict[Any, int] = {}  # submitted, result not read yet → shard
        self.registered = False

    def run(self, mine: list[int], elsewhere: list[int]) -> None:
        """Every shard of `mine`, then those of `elsewhere` that their run leaves."""
        client, names = self.client, self.names
        self.watch.start()
        client.subscribe_topic(names.topic, self._event)
        try:
            self.watch.wait_joined()  # bounded: a scheduler without workers is an error
            check_output_reach(client, self.config.output)  # every worker writes this output
            if add_page(client) and self.summary.dashboard:  # every live figure, readable
                page = self.summary.dashboard.rsplit("/", 1)[0] + "/datagen"
                log.info("datagen's live figures per worker: %s", page)
            plugin = BrowserPlugin(
                self.config,
                workers=_worker_count(client, self.config.cluster),
                local=not self.config.cluster.address,
                names=names,
                shards=len(mine) + len(elsewhere),
            )
            self.registered = True  # also when it fails half-way: some workers may hold it
            _register(client, plugin)
            self.watch.catch_up()
            self.progress.started(self.summary.dashboard, self.plan.episodes, self.summary.resumed)
            self.watch.wait_ready()
            queue = as_completed(self._submit(mine))
            for future in _completed(queue, self.watch):
                self._collect(future)
                rest = [i for i in elsewhere if i not in self.submitted]
                if queue.is_empty() and rest:  # idle: wait for the other run's shards
                    queue.update(self._submit(self.leases.wait(rest)))
        finally:
            self._leave()

    def _event(self, event: tuple[float, Any]) -> None:
        if not self.watch.on_event(event[1]):
            self.progress.episode(event[1])

    def _submit(self, indices: Iterable[int]) -> list[Any]:
        """The shards as one batch: the scheduler places a batch in one pass, spreading it by
        each worker's queue. Submitted one by one, a shard that already started and seceded
        no longer counts on its worker, which then looks as free as an empty one and may be
        handed every shard its resource could ever hold (they wait there, one after another,
        while another worker idles)."""
        indices = list(indices)
        if not indices:
            return []
        n = len(indices)
        futures: list[Any] = self.client.map(
            run_shard_task,
            indices,
            [self.plan.shards[i] for i in indices],
            [self.config] * n,
            [self.plan.run_id] * n,
            [self.names] * n,
            key=[self.names.key(i) for i in indices],
            resources={self.names.resource: 1},  # only workers whose browser started
            retries=self.config.cluster.retries,
            pure=False,
        )
        for future, index in zip(futures, indices, strict=True):
            self.futures[future] = index
            self.submitted.add(index)
        return futures

    def _collect(self, future: Any) -> None:
        index = self.futures.pop(future)
        self.leases.release(index)  # committed, or failed for good (another run may try)
        try:
            result = future.result()
        except Exception as exc:  # a shard that failed for good: the run goes on
            log.error("shard %d failed: %s", index, exc, extra={"shard": index})
            self.summary.failed_shards[index] = f"{type(exc).__name__}: {exc}"
            return
        finally:
            # Read: nothing needs it on a worker any more. A result Dask still held would be
            # computed again if its worker were lost (the shard run twice).
            future.release()
        if isinstance(result, OutputFull):  # every shard would fail the same
            raise OSError(errno.ENOSPC, result.detail)
        self.summary.results.append(result)
        self.progress.shard(result)

    def _leave(self) -> None:
        """Cancel what still runs, stop listening, remove the plugin (its browsers close on
        every worker); each step guarded on its own, for a run that failed or was stopped."""
        client, names = self.client, self.names
        steps: list[tuple[str, Callable[[], Any]]] = []
        if self.futures:
            steps.append(
                ("cancel the shards still running", lambda: client.cancel(list(self.futures)))
            )
        steps.append(("unsubscribe", lambda: client.unsubscribe_topic(names.topic)))
        steps.append(("stop watching the workers", self.watch.stop))
        if self.registered:
            remove = lambda: client.unregister_worker_plugin(names.plugin)  # noqa: E731
            steps.append(("remove the worker plugin", remove))
        for what, step in steps:
            try:
                step()
            except Exception:
                log.warning("could not %s", what, exc_info=True)
        self.summary.workers = self.watch.report


def _register(client: Client, plugin: BrowserPlugin) -> None:
    """Register the run's plugin on every worker (and those that join later). A worker whose
    browser cannot start says so on the run's topic; what fails here is loading the plugin."""
    try:
        client.register_plugin(plugin, name=plugin.name)
    except Exception as exc:
        said = (str(exc).strip().splitlines() or [""])[0]
        raise WorkersUnavailable(
            f"the workers could not load datagen's worker plugin ({type(exc).__name__}: {said})",
            fix=f"install datagen {__version__} in every worker's Python environment (the "
            "workers' logs say more)",
        ) from None


def _completed(queue: as_completed, watch: WorkerWatch) -> Iterator[Any]:
    """The queue's futures as they finish. Meanwhile, WorkersUnavailable once no worker could
    take the run's shards for too long: Dask would leave them unassigned for ever."""
    while True:
        while not queue.has_ready():
            if queue.is_empty():
                return
            watch.check()
            time.sleep(0.1)
        yield next(queue)


def _check_committed(storage: Storage, full: bool, also: dict[int, str]) -> dict[int, str]:
    """Committed shards whose parts are not what their markers record (missing, other size;
    other sha256 when `full`) lose their marker, so this run redoes them (and `also`). Shard → why."""
    redone = distrust(storage, verify_output(storage, full=full)) | also
    for shard, reason in redone.items():
        log.warning("shard %d is redone: %s", shard, reason, extra={"shard": shard})
    return redone


def _resumed(storage: Storage, plan: Plan, skipped: list[int]) -> Resumed:
    """What the committed shards this run skips hold: every task × repeat of them ended, and
    their markers say how many as episodes (the rest are rejects)."""
    if not skipped:
        return Resumed()
    wanted = set(skipped)
    episodes = sum(m.stats.episodes for m in read_markers(storage) if m.shard in wanted)
    ended = sum(len(plan.shards[i]) for i in skipped) * plan.config.run.repeats
    return Resumed(shards=len(skipped), ended=ended, episodes=episodes)


def _report(
    storage: Storage, timeline: Timeline, manifest: Manifest, summary: RunSummary, output: Any
) -> str:
    """The HTML run report in the output; a failure to write it is logged, never fatal."""
    try:
        dataset = read_committed(output.uri, "steps", output.endpoint_url, list(LATENCIES))
        figures = (step_latencies(dataset), summary.seconds, summary.measures)
        key = write_report(storage, timeline, manifest, *figures)
    except Exception:
        log.warning("run report not written", exc_info=True)
        return ""
    return f"{storage.uri.rstrip('/')}/{key}"
