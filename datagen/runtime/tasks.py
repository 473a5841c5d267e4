"""The Dask task that runs one shard on a worker's browser loop."""

from __future__ import annotations

import errno
import math
from dataclasses import dataclass
from typing import Any, cast

from distributed import get_worker

from datagen.config import PipelineConfig
from datagen.pipeline import ShardContext, run_shard
from datagen.records import ShardResult, TaskSpec
from datagen.runtime.plugin import PLUGIN_NAME, BrowserPlugin
from datagen.sink.storage import output_storage

PROGRESS_TOPIC = "datagen-progress"


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


@dataclass(frozen=True)
class OutputFull:
    """What a shard returns when its output's device is full (no retry can help)."""

    detail: str


def run_shard_task(
    shard: int, tasks: list[TaskSpec], config: PipelineConfig, run_id: str
) -> ShardResult | OutputFull:
    """Runs in a worker thread; hands the shard to the browser loop and waits."""
    worker = get_worker()
    plugin = cast(BrowserPlugin, worker.plugins[PLUGIN_NAME])
    if plugin.host is None or plugin.sites is None:
        raise RuntimeError("datagen browser plugin did not start on this worker")
    host = plugin.host
    if not host.connected or host.episodes >= config.browser.recycle_after_episodes:
        # dead after a crash, or due for recycling (browsers leak under long runs): start afresh
        plugin.run(host.restart(), timeout=120)

    def on_episode(event: dict[str, Any]) -> None:
        # Called on the browser loop thread; the worker's own loop must send the event.
        worker.loop.add_callback(worker.log_event, PROGRESS_TOPIC, event)

    ctx = ShardContext(
        config=config,
        run_id=run_id,
        host=plugin.host,
        storage=output_storage(config.output),
        resolve_url=plugin.sites.resolve,
        on_episode=on_episode,
        engines=plugin.engines,
        meter=plugin.meter,
    )
    # Per-shard limit: every episode timing out in turn, plus room for writing. Past it the Dask
    # task fails (and is retried) instead of holding its worker forever.
    waves = math.ceil(len(tasks) * config.run.repeats / config.cluster.sessions_per_worker)
    try:
        return plugin.run(
            run_shard(shard, tasks, ctx), timeout=waves * config.run.episode_timeout_s + 300
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
