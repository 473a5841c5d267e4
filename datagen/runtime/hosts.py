"""The run's hosts on a cluster: one `HostBook` on the scheduler for every worker of the run,
so a host's session and request limits hold over the whole cluster, not per worker.

    driver: run_hosts(client, …) ─► HostsExtension (a SchedulerPlugin) opens the run's book,
            restoring the blocks of `_hosts.json` ─► … ─► at the end: figures ─► _hosts.json
    worker: SchedulerHosts (the pipeline's `Hosts`) ─► RPC `datagen_hosts` ─► the book
    /datagen page (dashboard.py) ─► the books' figures, per host

Why the scheduler and not a `distributed.Semaphore` per host: one object holds all of a host's
rules (sessions, the request pace, back-off, the blocklist, robots.txt) and its figures, and it
frees the sessions of a worker that is lost (`remove_worker`). The books are named per run, so
runs sharing a scheduler keep their own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from distributed import Client
from distributed.diagnostics.plugin import SchedulerPlugin

from datagen.config import PipelineConfig
from datagen.config.hosts import HostsConfig
from datagen.pipeline.hostbook import HostBook
from datagen.pipeline.hosts import host_key
from datagen.records import RejectReason
from datagen.runplan import Plan
from datagen.sink.hosts import blocks_in_force, write_hosts
from datagen.sink.storage import Storage
from datagen.sink.writer import marker_key, read_markers

log = logging.getLogger(__name__)
PLUGIN = "datagen-hosts"
HANDLER = "datagen_hosts"
ACQUIRE_WAIT_S = 10.0  # one RPC waits this long for a session, then the worker asks again


class HostsExtension(SchedulerPlugin):
    """The runs' host books on the scheduler, behind one RPC handler."""

    name = PLUGIN

    def __init__(self) -> None:
        self.books: dict[str, HostBook] = {}
        self._tasks: set[asyncio.Future[int]] = set()

    async def start(self, scheduler: Any) -> None:
        scheduler.handlers[HANDLER] = self.handle

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        """A lost worker's sessions end with it (its episodes are retried elsewhere)."""
        for book in self.books.values():
            task = asyncio.ensure_future(book.drop_owner(worker))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def handle(self, run: str, what: str, key: str = "", **kw: Any) -> Any:
        """One call of a worker (or the driver) on run `run`'s book."""
        if what == "open":
            book = self.books.setdefault(run, HostBook(HostsConfig(**kw["config"])))
            book.restore(kw.get("blocks") or {})
            return True
        book = self.books[run]
        if what == "acquire":
            return list(await book.acquire(key, kw["lease"], kw.get("owner", ""), ACQUIRE_WAIT_S))
        if what == "release":
            return await book.release(key, kw["lease"])
        if what == "pace":
            return book.pace(key, kw.get("max_wait_s", 0))
        if what == "paused":
            return book.paused(key)
        if what == "blocked":
            return book.refused(key)
        if what == "report":
            return await book.report(key, kw["event"], kw.get("detail", ""), kw.get("after", 0))
        if what == "robots":
            return await book.robots(key, kw.get("text"))
        if what == "robots_turn":
            return list(await book.robots_turn(key, ACQUIRE_WAIT_S))
        if what == "figures":
            return book.figures()
        if what == "close":
            return self.books.pop(run).figures()
        raise ValueError(f"unknown hosts operation {what!r}")


class SchedulerHosts:
    """The pipeline's `Hosts` on a worker: each call goes to the scheduler's book of the run.
    Called on the worker's browser loop; the RPC runs on the worker's own loop."""

    def __init__(self, worker: Any, run: str) -> None:
        self.worker, self.run = worker, run

    async def _call(self, what: str, key: str, **kw: Any) -> Any:
        async def rpc() -> Any:
            return await self.worker.scheduler.datagen_hosts(run=self.run, what=what, key=key, **kw)

        loop = self.worker.loop.asyncio_loop
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(rpc(), loop))

    async def acquire(self, key: str, lease: str) -> str | None:
        while True:
            state, cause = await self._call("acquire", key, lease=lease, owner=self.owner)
            if state == "granted":
                return None
            if state == "blocked":
                return str(cause)

    @property
    def owner(self) -> str:
        return str(self.worker.address)

    async def release(self, key: str, lease: str) -> None:
        await self._call("release", key, lease=lease)

    async def pace(self, key: str, max_wait_s: float = 0) -> float:
        return float(await self._call("pace", key, max_wait_s=max_wait_s))

    async def paused(self, key: str) -> float:
        return float(await self._call("paused", key))

    async def report(
        self, key: str, event: str, detail: str = "", retry_after_s: float = 0
    ) -> None:
        await self._call("report", key, event=event, detail=detail, after=retry_after_s)

    async def robots(self, key: str, text: str | None = None) -> str | None:
        found = await self._call("robots", key, text=text)
        return None if found is None else str(found)

    async def blocked(self, key: str) -> str | None:
        found = await self._call("blocked", key)
        return None if found is None else str(found)

    async def robots_turn(self, key: str) -> str | None:
        while True:
            state, text = await self._call("robots_turn", key)
            if state == "rules":
                return str(text)
            if state == "fetch":
                return None


def _plugins(dask_scheduler: Any) -> list[str]:
    return list(dask_scheduler.plugins)


def _open(dask_scheduler: Any, run: str, config: dict[str, Any], blocks: dict[str, Any]) -> bool:
    plugin = dask_scheduler.plugins.get(PLUGIN)
    if plugin is None:
        return False
    book = plugin.books.setdefault(run, HostBook(HostsConfig(**config)))
    book.restore(blocks)
    return True


def _close(dask_scheduler: Any, run: str) -> dict[str, Any]:
    plugin = dask_scheduler.plugins.get(PLUGIN)
    book = plugin.books.pop(run, None) if plugin is not None else None
    return book.figures() if book is not None else {}


@contextmanager
def run_hosts(client: Client, run: str, config: PipelineConfig, storage: Storage) -> Iterator[None]:
    """The run's book on the scheduler while the run lasts; `_hosts.json` written at its end
    (also when it failed: the blocks it found are worth keeping)."""
    if PLUGIN not in client.run_on_scheduler(_plugins):  # another run's book stays
        client.register_plugin(HostsExtension(), name=PLUGIN)
    hosts = config.run.hosts.model_dump(mode="json")
    client.run_on_scheduler(_open, run=run, config=hosts, blocks=blocks_in_force(storage))
    try:
        yield
    finally:
        try:
            figures = client.run_on_scheduler(_close, run=run)
            if figures:
                write_hosts(storage, figures)
        except Exception:
            log.warning("could not record the run's hosts in _hosts.json", exc_info=True)


def unblocked(storage: Storage, plan: Plan) -> dict[int, str]:
    """Committed shards with host_blocked tasks whose hosts are no longer blocked (the TTL
    in `_hosts.json` ended): their markers go, so this run runs them again. Shard → why."""
    blocks = blocks_in_force(storage)
    redo: dict[int, str] = {}
    for marker in read_markers(storage):
        if RejectReason.HOST_BLOCKED.value not in marker.stats.reject_reasons:
            continue
        if marker.shard >= len(plan.shards):
            continue
        keys = {host_key(t.start_url, plan.config.run.hosts) for t in plan.shards[marker.shard]}
        ended = sorted(k for k in keys if k is not None and k not in blocks)
        if ended:
            storage.delete(marker_key(marker.shard))
            redo[marker.shard] = f"the block of {', '.join(ended[:3])} ended: its tasks run again"
    return redo


HOST_COLUMNS = {  # figure → header on the /datagen page and in the run's summary
    "sessions": "sessions",
    "peak_sessions": "most sessions",
    "requests_per_s": "req/s (10 s)",
    "rate_limit": "req/s allowed",
    "requests": "requests",
    "waits": "waits",
    "wait_s": "wait s",
    "slowed": "429/503",
    "dropped": "dropped",
    "blocked": "blocked",
    "cause": "first cause",
}


def host_table(scheduler: Any) -> tuple[list[str], list[list[str]]]:
    """Headers and rows (run, host, figures) of every run's hosts on this scheduler."""
    plugin = scheduler.plugins.get(PLUGIN)
    rows: list[list[str]] = []
    for run, book in sorted(getattr(plugin, "books", {}).items()):
        for key, figures in book.figures().items():
            rows.append([run, key, *(_shown(figures.get(k)) for k in HOST_COLUMNS)])
    return ["run", "host", *HOST_COLUMNS.values()], rows


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else ""
    return "" if value is None else str(value)[:120]
