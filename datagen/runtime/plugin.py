"""Per-worker browser: a WorkerPlugin that owns an asyncio loop thread, a Chromium and the
bundled-site server for the worker's whole life.

Why a private loop thread: Playwright objects are bound to the loop that created them, Dask
task threads have no running loop, and signal-based timeouts do not work off the main thread.
Every call into the browser goes through `run()`, onto that one loop; closing happens there too
(closing Playwright objects from another thread hung Dask workers in the peers' tests).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import traceback
from collections.abc import Coroutine
from typing import Any, TypeVar

from distributed import WorkerPlugin

from datagen.browser.session import BrowserHost
from datagen.config import PipelineConfig
from datagen.engine.roles import Engines, roles_for
from datagen.observe.meter import Meter, register, unregister
from datagen.source import sites_root
from datagen.source.serve import SiteServer

log = logging.getLogger(__name__)
T = TypeVar("T")
PLUGIN_NAME = "datagen-browser"


class BrowserPlugin(WorkerPlugin):
    """Starts the loop, the site server and the browser at setup; stops them at teardown."""

    name = PLUGIN_NAME

    def __init__(self, config: PipelineConfig, workers: int = 1, local: bool = False) -> None:
        self.config = config
        self.workers = workers  # the workers sharing the engine's in-flight budget
        self.local = local  # a worker of the driver's own LocalCluster (shares its terminal)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.host: BrowserHost | None = None
        self.sites: SiteServer | None = None
        self.engines: Engines | None = None
        self.meter = Meter()

    def setup(self, worker: Any) -> None:
        if self.local:
            _quiet_in_the_drivers_terminal()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="datagen-browser-loop", daemon=True
        )
        self.thread.start()
        self.sites = SiteServer(sites_root(self.config))
        host = BrowserHost(self.config.browser, allow=[self.sites.origin])
        try:
            self.run(host.start(), timeout=120)
            if self.config.uses_engine:
                engines = Engines(self.config.engine, roles_for(self.config), self.workers)
                self.engines = engines
                self.run(engines.start(), timeout=self.config.engine.ready_timeout_s + 10)
        except BaseException:
            self.host = host
            self.teardown(worker)  # leave no loop thread, server, driver or client behind
            self.host = None
            raise
        self.host = host  # only a started browser is ever exposed
        self._meter_sources()
        if worker is not None:  # None: set up outside Dask (tests)
            register(worker, self.meter)

    def _meter_sources(self) -> None:
        """What the dashboard reads besides the pipeline's counters."""
        host, engines, meter = self.host, self.engines, self.meter
        if host is not None:
            meter.gauges["browser"] = lambda: {
                "browser_memory_mb": host.memory_mb(max_age_s=5.0),
                "browser_sessions": float(host.open_contexts),
            }
        if engines is not None:
            meter.totals["engine"] = engines.counters
            meter.gauges["engine"] = engines.in_flight

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the browser loop and wait for its result (from any thread)."""
        if self.loop is None:
            raise RuntimeError("BrowserPlugin is not set up")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            if future.done():  # the coroutine's own TimeoutError, not an overrun
                raise
            log.error(
                "overran %ss; what the browser loop is waiting on:\n%s", timeout, self.where()
            )
            future.cancel()  # stop the work on the loop too, not just the wait for it
            raise

    def where(self) -> str:
        """Where every task on the browser loop is waiting (the chain of awaits, innermost
        last): what tells a hung page from a hung engine call when a shard overruns."""
        if self.loop is None:
            return ""

        async def chains() -> str:
            return "\n".join(
                _await_chain(task)
                for task in asyncio.all_tasks()
                if task is not asyncio.current_task()
            )

        asked = asyncio.run_coroutine_threadsafe(chains(), self.loop)
        try:
            return asked.result(5)
        except Exception:  # the loop itself is blocked (synchronous code): where, then
            asked.cancel()
            ident = self.thread.ident if self.thread is not None else None
            frame = sys._current_frames().get(ident) if ident is not None else None
            stack = "".join(traceback.format_stack(frame)) if frame is not None else ""
            return "the loop itself is blocked, in:\n" + stack

    def teardown(self, worker: Any) -> None:
        if worker is not None:
            unregister(worker)
        if self.engines is not None:
            try:
                self.run(self.engines.close(), timeout=30)
            except Exception:
                log.warning("engine clients close failed", exc_info=True)
        if self.host is not None:
            try:
                self.run(self.host.close(), timeout=30)
            except Exception:
                log.warning("browser close failed at teardown", exc_info=True)
        if self.sites is not None:
            try:
                self.sites.close()
            except Exception:
                log.warning("site server close failed", exc_info=True)
        if self.loop is not None and self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)


def _await_chain(task: asyncio.Task[Any]) -> str:
    """One task as "name: function (file:line) > function (file:line) > ..."."""
    links = []
    coro: Any = task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        if frame is not None:
            links.append(f"{frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
    return f"{task.get_name()}: " + " > ".join(links)


class _NotShardFailures(logging.Filter):
    """Drops Dask's "Compute Failed" record (a traceback): the driver reports each failed
    shard itself, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Compute Failed")


def _quiet_in_the_drivers_terminal() -> None:
    """A LocalCluster's workers write to the driver's terminal and share its Ctrl-C."""
    logging.getLogger("distributed.worker").addFilter(_NotShardFailures())
    # Closing the browser under running episodes (the run stopped) makes asyncio warn about
    # the Playwright driver's closed pipe once per write in flight: noise, not news.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C is the driver's to handle (it closes the cluster in order). Workers it
        # spawned ignore it already; this covers one its nanny respawned after a crash.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
