"""The Dask task that runs one shard on a worker's browser loop.

It runs only on workers that advertise the run's resource (their browser started), and there
in the worker's episode pool (`pipeline.pool`), beside the other shards in flight on it. A
shard whose marker exists when its task starts is not run again: its task returns the marker's
stats. That happens when Dask runs again a task whose first run committed: the worker holding
its result was lost before the driver read it.

Several shards in flight on a worker started with `--nthreads 1`: a task secedes from the
worker's thread pool once it hands its shard to the browser loop (it only waits from then on),
so the thread takes the next shard; the run's resource (`shards_in_flight` per worker, set by
the plugin) is what bounds the shards at once.
"""

from __future__ import annotations

import errno
import logging
import math
from dataclasses import dataclass
from typing import Any, cast

from distributed import get_worker, secede

from datagen.config import PipelineConfig
from datagen.pipeline import EpisodePool, ShardContext, run_shard, shards_in_flight
from datagen.records import ShardResult, TaskSpec
from datagen.runtime.hosts import SchedulerHosts
from datagen.runtime.plugin import BrowserPlugin, RunNames
from datagen.sink.storage import Storage, output_storage
from datagen.sink.writer import marker_key, read_marker

log = logging.getLogger(__name__)


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class OutputFull:
    """What a shard returns when its output's device is full (no retry can help)."""

    detail: str


def run_shard_task(
    shard: int, tasks: list[TaskSpec], config: PipelineConfig, run_id: str, names: RunNames
) -> ShardResult | OutputFull:
    """Runs in a worker thread; hands the shard to the browser loop and waits."""
    worker = get_worker()
    storage = output_storage(config.output)
    who = {"shard": shard, "name": str(worker.name), "address": str(worker.address)}
    committed = _committed(storage, shard)
    if committed is not None:
        log.info("shard %d is committed already: not run again", shard, extra={"shard": shard})
        worker.log_event(names.topic, {"kind": "shard", "reused": True, **who})
        return committed
    plugin = cast(BrowserPlugin | None, worker.plugins.get(names.plugin))
    if plugin is None or plugin.host is None or plugin.sites is None or plugin.pool is None:
        why = plugin.failure if plugin is not None and plugin.failure else "it is not set up"
        raise RuntimeError(f"datagen's browser is not running on worker {worker.name}: {why}")
    worker.log_event(names.topic, {"kind": "shard", "reused": False, **who})

    def on_episode(event: dict[str, Any]) -> None:
        # Called on the browser loop thread; the worker's own loop must send the event.
        worker.loop.add_callback(worker.log_event, names.topic, event)

    ctx = ShardContext(
        config=config,
        run_id=run_id,
        host=plugin.host,
        storage=storage,
        resolve_url=plugin.sites.resolve,
        on_episode=on_episode,
        engines=plugin.engines,
        meter=plugin.meter,
        pool=plugin.pool,
        hosts=SchedulerHosts(worker, names.tag),  # the run's book on the scheduler
    )
    pool = plugin.pool
    secede()  # from here the thread only waits: the worker may start its next shard
    try:
        return plugin.run(
            _pooled(pool, shard, tasks, ctx), timeout=shard_timeout_s(config, len(tasks))
        )
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            exc.__cause__ = exc.__context__ = None
            raise
        # Returned, not raised: Dask would retry the shard (its whole browser work) into the
        # same full disk; the driver stops the run at the first one.
        return OutputFull(f"{exc.strerror or exc} writing shard {shard}")
    except Exception as exc:
        # Dask pickles a failed task's exception with its whole chain (tblib); Playwright's
        # errors in that chain do not pickle (a RecursionError and a logged traceback per
        # shard). The message already says what the chain would.
        exc.__cause__ = exc.__context__ = None
        raise


async def _pooled(
    pool: EpisodePool, shard: int, tasks: list[TaskSpec], ctx: ShardContext
) -> ShardResult:
    """The shard in the worker's pool. Before it starts, a browser that died is restarted, and
    one due for recycling (browsers leak under long runs) once no other shard runs on it."""
    async with pool.shard(ctx.host, ctx.config.browser.recycle_after_episodes):
        return await run_shard(shard, tasks, ctx)


def shard_timeout_s(config: PipelineConfig, tasks: int) -> float:
    """A shard task's limit: every episode ahead of the shard's last one timing out in turn
    (the episodes of the other shards in flight on the worker come first, and a recycle waits
    for them), plus room for writing. Past it the Dask task fails (and is retried) instead of
    holding its worker forever."""
    per_shard = tasks * config.run.repeats
    sessions = config.cluster.sessions_per_worker
    ahead = shards_in_flight(sessions, per_shard) * per_shard
    waves = math.ceil(ahead / sessions) + 1
    return waves * config.run.episode_timeout_s + 300


def _committed(storage: Storage, shard: int) -> ShardResult | None:
    """The stats of the shard's marker, when it has a readable one."""
    key = marker_key(shard)
    if not storage.exists(key):
        return None
    try:
        return read_marker(storage, shard).stats
    except ValueError:  # unreadable: run the shard
        return None
