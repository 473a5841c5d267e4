"""Shards run in this process, without Dask: the local executor of tests, benches and scripts.

    LocalRunner(config, host?, storage?, engines?, hosts?, pool?)
        ─► start(): its own browser (none given), the config's engine roles (a model stage)
        ─► context: one ShardContext for every shard and episode it runs
        ─► run(shard, tasks) ─► run_shard ─► ShardRun (the stats, the parts read back)
        ─► close(): what it started, each step on its own

A Dask worker sets up the same things around a shard (runtime/plugin.py, runtime/tasks.py),
adding the run's host book on the scheduler, its episode pool and progress events; here each
is optional: what is not given is what a shard run alone gets (`ShardContext`'s defaults).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from datagen.browser.host import BrowserHost
from datagen.config import PipelineConfig
from datagen.engine.roles import Engines
from datagen.pipeline.context import Hosts, ShardContext
from datagen.pipeline.episode import run_episode
from datagen.pipeline.pool import EpisodePool
from datagen.pipeline.rows import EpisodeOutcome
from datagen.pipeline.shard import run_shard
from datagen.policy import roles_for
from datagen.records import ShardResult, TaskSpec
from datagen.sink.checked import read_part
from datagen.sink.storage import Storage, output_storage
from datagen.sink.writer import read_marker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShardRun:
    """A shard this runner ran: its stats and its committed parts, read back the checked way
    (through its marker: each part's size, sha256 and schema)."""

    shard: int
    result: ShardResult
    storage: Storage

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The shard's rows of one table (`episodes`, `steps`, `grounding`, `rejects`)."""
        marker = read_marker(self.storage, self.shard)
        parts = [read_part(self.storage, self.shard, f) for f in marker.files if f.table == table]
        return [row for part in parts for row in part.to_pylist()]


class LocalRunner:
    """Runs shards and episodes of `config` here, on the running event loop.

    - `host`: a started browser to use (its caller closes it); None: one of the runner's own,
      `BrowserHost(config.browser, allow)`, started by `start()` and closed by `close()`;
    - `storage`: where shards are written; None: the config's `output`;
    - `engines`: started engine roles to use; None: when the config calls a model
      (`uses_engine`), the runner starts its roles and closes them;
    - `hosts`, `pool`, `resolve_url`, `on_episode`: as `ShardContext` has them (None: a shard
      run alone gets a book of the run's host rules of its own, which the runner's later
      shards share, and episode slots of its own).
    """

    def __init__(
        self,
        config: PipelineConfig,
        *,
        run_id: str = "local",
        host: BrowserHost | None = None,
        storage: Storage | None = None,
        engines: Engines | None = None,
        hosts: Hosts | None = None,
        pool: EpisodePool | None = None,
        resolve_url: Callable[[str], str] | None = None,
        on_episode: Callable[[dict[str, Any]], None] | None = None,
        allow: Sequence[str] = (),
    ) -> None:
        self.config, self.run_id = config, run_id
        self.host, self.engines = host, engines
        self.storage = storage if storage is not None else output_storage(config.output)
        self._own_host = host is None
        self._own_engines = engines is None and config.uses_engine
        self.hosts, self.pool = hosts, pool
        self.resolve_url = resolve_url or (lambda url: url)
        self.on_episode = on_episode or (lambda event: None)
        self._allow = list(allow)
        self._context: ShardContext | None = None

    async def start(self) -> None:
        """Start what the runner owns: its browser, the config's engine roles. On a failure,
        what started is closed again and the error raised."""
        try:
            if self._own_host and self.host is None:
                host = BrowserHost(self.config.browser, allow=self._allow)
                self.host = host  # before start: close() stops a half-started browser too
                await host.start()
            if self._own_engines and self.engines is None:
                self.engines = Engines(self.config.engine, roles_for(self.config))
                await self.engines.start()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Close what the runner started (engines, then browser), each step guarded."""
        engines = self.engines
        if self._own_engines and engines is not None:
            self.engines = self._context = None
            try:
                await engines.close()
            except Exception:
                log.warning("closing the local runner's engine clients failed", exc_info=True)
        if self._own_host and self.host is not None:
            host, self.host, self._context = self.host, None, None
            await host.close()  # guards each of its own steps

    async def __aenter__(self) -> LocalRunner:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def context(self) -> ShardContext:
        """The one context of every shard and episode this runner runs (built at first use)."""
        if self.host is None or (self._own_engines and self.engines is None):
            raise RuntimeError(
                "the local runner is not started. fix: `async with LocalRunner(...)`, "
                "or await its start() first"
            )
        if self._context is None:
            self._context = ShardContext(
                config=self.config,
                run_id=self.run_id,
                host=self.host,
                storage=self.storage,
                resolve_url=self.resolve_url,
                on_episode=self.on_episode,
                engines=self.engines,
                hosts=self.hosts,
                pool=self.pool,
            )
        return self._context

    async def run(self, shard: int, tasks: Sequence[TaskSpec]) -> ShardRun:
        """One shard of `tasks`, written once (parts, then its marker)."""
        result = await run_shard(shard, list(tasks), self.context)
        return ShardRun(shard, result, self.storage)

    async def episode(self, task: TaskSpec, repeat: int = 0) -> EpisodeOutcome:
        """One episode of `task`, outside any shard: nothing is written."""
        return await run_episode(task, repeat, self.context)
