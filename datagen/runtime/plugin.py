"""Per-worker browser: a WorkerPlugin that owns an asyncio loop thread, a Chromium and the
bundled-site server for the worker's whole life.

One plugin per run, named per run (`RunNames`): runs sharing a scheduler each have their own
browser settings on every worker, and a run removes its plugin (closing its browsers) when it
ends. A worker advertises the run's Dask resource only once its browser started; the run's
shards require it, so a worker that cannot work never takes one. A failed setup is reported to
the driver (the worker's name, why, the fix) on the run's topic, not raised into Dask.

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
from dataclasses import dataclass
from typing import Any, TypeVar

from distributed import WorkerPlugin
from distributed.core import Status

from datagen.browser.admission import AdmissionController
from datagen.browser.host import BrowserHost
from datagen.browser.launch import INSTALL_HINT
from datagen.config import PipelineConfig
from datagen.engine.roles import Engines
from datagen.errors import BrowserUnavailable, DatagenError, EngineNotReady
from datagen.observe.meter import Meter
from datagen.pipeline import EpisodePool, shards_in_flight
from datagen.pipeline.sandbox import shelved
from datagen.policy import roles_for
from datagen.runtime.metrics import register, unregister
from datagen.source import checked_sites_root
from datagen.source.serve import SiteServer

log = logging.getLogger(__name__)
T = TypeVar("T")
PLUGIN_NAME = "datagen-browser"
CANCEL_ROUNDS = 3
CANCEL_TIMEOUT_S = 5.0  # at teardown, for the tasks still on the browser loop to end


@dataclass(frozen=True)
class RunNames:
    """What one invocation of a run is called on the scheduler: its worker plugin, its event
    topic, the resource its ready workers advertise, its shards' task keys. From the run id and
    a per-invocation token, so neither two pipelines nor two invocations of one pipeline on a
    shared scheduler replace each other's plugin, read each other's events or share a key."""

    tag: str

    @classmethod
    def new(cls, run_id: str, token: str) -> RunNames:
        return cls(f"{run_id[:12]}-{token[:8]}")

    @property
    def plugin(self) -> str:
        return f"{PLUGIN_NAME}-{self.tag}"

    @property
    def topic(self) -> str:
        return f"datagen-{self.tag}"

    @property
    def resource(self) -> str:
        return f"datagen-ready-{self.tag}"

    def key(self, shard: int) -> str:
        return f"shard-{shard:05d}-{self.tag}"


class BrowserPlugin(WorkerPlugin):
    """Starts the loop, the site server and the browser at setup; stops them at teardown."""

    name = PLUGIN_NAME

    def __init__(
        self,
        config: PipelineConfig,
        workers: int = 1,
        local: bool = False,
        names: RunNames | None = None,
        shards: int | None = None,
    ) -> None:
        self.config = config
        self.names = names  # None: set up outside a run (tests)
        if names is not None:
            self.name = names.plugin
        self.failure = ""  # why setup failed on this worker, with the fix
        self.advertised = False
        self.workers = workers  # the workers sharing the engine's in-flight budget
        self.shards = shards  # the run's shards to share out among them (None: not capped)
        self.local = local  # a worker of the driver's own LocalCluster (shares its terminal)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.host: BrowserHost | None = None
        self.sites: SiteServer | None = None
        self.engines: Engines | None = None
        self.pool: EpisodePool | None = None  # the episode slots all this run's shards here share
        self.meter = Meter()

    def setup(self, worker: Any) -> None:
        """Start the loop, site server and browser. Under Dask a failure is not raised (Dask
        would log a traceback naming no worker, or fail the whole registration): it is logged
        in one line and sent to the driver, and the worker never advertises the run's resource."""
        try:
            self._start(worker)
        except Exception as exc:
            if worker is None:  # set up outside Dask (tests): the caller sees it
                raise
            self._report_failure(worker, exc)
            return
        if worker is not None and self.names is not None:
            worker.loop.add_callback(self._advertise, worker, self.names)

    def _start(self, worker: Any) -> None:
        if self.local:
            _quiet_in_the_drivers_terminal()
        # First, before any thread or browser: a worker without the sites (a datagen installed
        # without its package data, a `dir` that is not on this machine) would serve 404s, and
        # every task would end as navigation_failed in a run that "completes".
        root = checked_sites_root(self.config)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="datagen-browser-loop", daemon=True
        )
        self.thread.start()
        self.sites = SiteServer(root)
        cluster = self.config.cluster
        admission = AdmissionController(cluster.admission, cluster.sessions_per_worker)
        host = BrowserHost(self.config.browser, allow=[self.sites.origin], admission=admission)
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
        self.pool = EpisodePool(self.config.cluster.sessions_per_worker)
        self.host = host  # only a started browser is ever exposed
        self._meter_sources()
        if worker is not None:  # None: set up outside Dask (tests)
            register(worker, self.meter)

    async def _advertise(self, worker: Any, names: RunNames) -> None:
        """Offer the run's resource: from now on the scheduler may send this worker the run's
        shards, as many at once as keep its episode pool full (each shard task secedes from
        the worker's threads, so the resource binds, not the threads)."""
        await worker.set_resources(**{names.resource: float(self.shards_at_once)})
        self.advertised = True
        if worker.status == Status.running:
            # The scheduler looks for work for a worker when it joins or resumes, not when its
            # resources change: shards left waiting with no worker able to take them (every
            # ready worker was lost) would wait forever. A pause and resume is that moment.
            worker.status = Status.paused
            worker.status = Status.running
        worker.log_event(names.topic, {"kind": "worker", "state": "ready", **_who(worker)})

    @property
    def shards_at_once(self) -> int:
        """The run's shards in flight on this worker: enough to keep its pool's slots full, and
        no more than its share of the run's shards (spread before doubled up)."""
        per_shard = self.config.run.tasks_per_shard * self.config.run.repeats
        sessions = self.config.cluster.sessions_per_worker
        return shards_in_flight(sessions, per_shard, self.shards, self.workers)

    def _report_failure(self, worker: Any, exc: Exception) -> None:
        reason, fix = _why(exc)
        self.failure = f"{reason}. fix: {fix}"
        log.error("datagen's browser did not start on worker %s: %s", worker.name, self.failure)
        if self.names is not None:
            event = {"kind": "worker", "state": "failed", "reason": reason, "fix": fix}
            worker.log_event(self.names.topic, {**event, **_who(worker)})

    def _meter_sources(self) -> None:
        """What the dashboard reads besides the pipeline's counters."""
        host, engines, meter = self.host, self.engines, self.meter
        if host is not None:
            meter.gauges["browser"] = lambda: {
                "browser_memory_mb": host.memory_mb(max_age_s=5.0),
                # contexts episodes hold (shelved replay contexts are open, no one's)
                "browser_sessions": float(host.open_contexts - shelved(host)),
            }
            meter.gauges["admission"] = host.admission.figures  # session limit, what binds
        if engines is not None:
            meter.totals["engine"] = engines.counters
            meter.gauges["engine"] = engines.in_flight
            meter.gauges["engine_health"] = engines.health  # datagen.engine.health
            if host is not None:  # requests wait for an engine slot: the engine binds
                host.admission.engine_bound = lambda: engines.in_flight()["engine_queued"] > 0

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
            for other in worker.plugins.values():  # another run's browser here keeps its figures
                if (
                    isinstance(other, BrowserPlugin)
                    and other is not self
                    and other.host is not None
                ):
                    register(worker, other.meter)
            if self.advertised and self.names is not None:  # no more of this run's shards here
                self.advertised = False
                worker.loop.add_callback(worker.set_resources, **{self.names.resource: 0.0})
        if self.loop is None:  # torn down already (or never set up): nothing runs
            return
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
        if self.thread is not None:
            try:  # what is left (a shard cut short by the run's end): ended, not dropped
                self.run(_cancel_the_rest(), timeout=CANCEL_ROUNDS * CANCEL_TIMEOUT_S + 5)
            except Exception:
                log.warning("tasks left on the browser loop", exc_info=True)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            if not self.thread.is_alive():  # a second teardown (setup failed) finds nothing
                self.loop.close()
                self.loop = self.thread = None


async def _cancel_the_rest() -> None:
    """Cancel every other task on the loop and let each run to its end: a loop stopped with
    tasks pending drops them, and each prints "Task was destroyed but it is pending!" into
    the driver's terminal when collected (what a run cut short by a full disk left)."""
    current = asyncio.current_task()
    # In rounds: a task's cleanup can start tasks of its own (a session's page-memory watchdog,
    # a shielded release), which the first snapshot did not hold.
    for _ in range(CANCEL_ROUNDS):
        rest = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
        if not rest:
            return
        for task in rest:
            task.cancel()
        await asyncio.wait(rest, timeout=CANCEL_TIMEOUT_S)


def _who(worker: Any) -> dict[str, str]:
    return {"name": str(worker.name), "address": str(worker.address)}


def _why(exc: Exception) -> tuple[str, str]:
    """One line saying why a worker could not start, and the fix."""
    text = str(exc).strip()
    reason = text.splitlines()[0].strip() if text else ""
    if isinstance(exc, BrowserUnavailable):
        return reason.replace(f"; {INSTALL_HINT}", ""), f"on that worker's machine, {INSTALL_HINT}"
    if isinstance(exc, EngineNotReady):
        return reason, "make engine.url reachable from the workers' machines"
    if not isinstance(exc, DatagenError):  # Playwright's errors, timeouts, OSError: say the kind
        reason = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
    fix = str(getattr(exc, "fix", "") or "") or (
        "check that Chromium starts on that worker's machine (`chromium --headless --version`; "
        "the worker's log has the browser's own output), or set browser.executable"
    )
    return reason, fix


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
    shard itself, in one line. And a heartbeat that found the scheduler gone (a traceback):
    a LocalCluster's scheduler lives in the driver, so it is gone only when the driver stops
    (a Ctrl-C while the workers start), which the driver says itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        return not msg.startswith(("Compute Failed", "Failed to communicate with scheduler"))


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
