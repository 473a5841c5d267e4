"""Browser host: one Playwright driver and one Chromium per worker, and a fresh, isolated
context per episode.

    BrowserHost.start() ─► session() ─► Session (session.py) ─► close() | kill() | restart()

The host also answers for the browser as a whole: its memory (USS over its processes), whether
it still answers CDP, killing it when it does not, and admitting new episodes (`admit`: memory,
and the CPU-aware session limit of `admission.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import cast

import psutil
from playwright.async_api import Browser, CDPSession, Playwright, async_playwright

from datagen.browser.admission import AdmissionController
from datagen.browser.egress import EgressProxy
from datagen.browser.failures import BrowserDied
from datagen.browser.guard import UrlGuard
from datagen.browser.hostile import PageEvents, harden
from datagen.browser.launch import find_executable, launch_options
from datagen.browser.memory import PageMemory, forked, private_mb, zygotes
from datagen.browser.session import CONCURRENT_LOADS, Session
from datagen.config import BrowserConfig

log = logging.getLogger(__name__)
PAGE_INIT_JS = (Path(__file__).parent / "page_init.js").read_text(encoding="utf-8")
CONTEXT_CLOSE_TIMEOUT_S = 10.0
USS_EVERY_S = 10.0  # the exact figure; scaled statm figures in between (memory_mb)
BOUND_EVERY_S = 0.1  # how stale the pages' shared upper bound (`private_total_mb`) may be
RELIST_S = 1.0  # how stale its list of the browser's processes may be
# Playwright launches Chromium with this switch (its own tests navigate fast). It also lifts
# Chromium's limit on one frame's navigations (200 in 10 s: pushState, replaceState, location
# changes). Without the limit, a page looping on `history.pushState` sends the browser process
# one commit per call; its UI thread, which also answers every CDP command, falls minutes
# behind, so every page of the browser stops and the watchdog kills it, losing the shard
# (measured, 200,000 calls: Browser.getVersion unanswered after 20 s, the browser process at
# 80% CPU and 850 MB and growing, Playwright's driver idle). With the limit, the page's calls
# past 200 are dropped in its own renderer: the load ends in ~3 s, the browser answers in ms.
FLOODING_PROTECTION_OFF = "--disable-ipc-flooding-protection"


class BrowserHost:
    """One Playwright driver and one Chromium, owned by the event loop that started them."""

    def __init__(
        self,
        config: BrowserConfig,
        allow: list[str] | None = None,
        admission: AdmissionController | None = None,
    ) -> None:
        self.config = config
        # a worker's host gets the run's session limit; elsewhere only memory holds episodes
        self.admission = admission or AdmissionController()
        self.guard = UrlGuard([*config.allow, *(allow or [])]) if config.url_guard else None
        self.episodes = 0  # sessions opened since this browser started (for recycling)
        self.launches = 0  # browsers started: a shard commits only on the one it began with
        self.stopping = False  # close() has begun: what fails now is no task's fault
        self._marker = (
            f"--datagen-browser={uuid.uuid4().hex}"  # finds our processes; Chromium ignores it
        )
        self._main_process: psutil.Process | None = None
        self._memory: tuple[float, float] = (0.0, 0.0)  # (when measured, MB)
        self._bound: tuple[float, float] = (-BOUND_EVERY_S, 0.0)  # private_total_mb: (when, MB)
        self._listed: list[psutil.Process] = []  # the processes private_total_mb sums
        self._listed_at = 0.0
        self._zygotes: list[int] | None = None  # the browser's zygotes (None: not looked for)
        # USS ÷ statm's private resident memory, when measured, over how many processes
        self._uss: tuple[float, float, int] = (-USS_EVERY_S, 1.0, 0)
        self.egress: EgressProxy | None = None
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self.version = ""
        self.playwright_version = metadata.version("playwright")
        self._loads: asyncio.Semaphore | None = None
        self._traces: asyncio.Lock | None = None  # pages' memory watchers trace one at a time
        # what closes with the browser, first (contexts kept open for reuse: pipeline/sandbox.py)
        self.on_close: list[Callable[[], Awaitable[None]]] = []

    async def start(self) -> None:
        self._playwright = await async_playwright().start()
        own = None
        try:
            own = self._playwright.chromium.executable_path
        except Exception:  # no browser downloaded by Playwright: fine, use the system's
            own = None
        executable = find_executable(self.config.executable, own)
        self._main_process = None
        self._listed, self._bound = [], (-BOUND_EVERY_S, 0.0)  # the last browser's: none now
        self._zygotes = None
        if self.guard is not None:
            # Every connection goes through the egress proxy (Playwright sends loopback there
            # too), and WebRTC sends no UDP, which could not.
            self.egress = EgressProxy(self.guard)
            await self.egress.start()
        options = launch_options(
            executable,
            self.config.headless,
            [*self.config.extra_args, self._marker],
            proxy=self.egress.url if self.egress is not None else None,
        )
        ignored = cast(list[str], options.get("ignore_default_args", []))
        options["ignore_default_args"] = [*ignored, FLOODING_PROTECTION_OFF]
        self._browser = await self._playwright.chromium.launch(**options)  # type: ignore[arg-type]
        self.version = f"chromium/{self._browser.version}"
        self.episodes = 0
        self.launches += 1
        self.stopping = False
        self.admission.start(self._recent_processes)
        log.info("browser started: %s (%s)", self.version, executable)

    @property
    def connected(self) -> bool:
        """The browser runs and is not being closed."""
        return self._browser is not None and self._browser.is_connected() and not self.stopping

    def memory_mb(self, max_age_s: float = 1.0) -> float:
        """The browser's own memory: USS summed over its processes (RSS would count shared
        pages once per process, ~5× too much). Measured at most once per `max_age_s`.

        USS costs ~45 ms of CPU on the browser's loop for 16 processes (every page of every
        process walked), so it is read once per USS_EVERY_S; in between, the private resident
        memory from /proc/PID/statm (~0.1 ms a process, 10–25% off USS: pages a renderer still
        shares with the zygote it forked from) is scaled by the last USS ÷ statm ratio, which is
        measured again sooner when the number of processes changed by a quarter. The processes
        are those `private_total_mb` lists (one listing, at most `max_age_s` old, shared: a
        listing costs ~4-6 ms of CPU, psutil reading every process's stat on the machine, and
        admission asks each 0.5 s while it holds episodes back)."""
        now = time.monotonic()
        when, value = self._memory
        if now - when < max_age_s:
            return value
        self._relisted(max_age_s=max_age_s)
        processes = list(self._listed)
        private = sum(private_mb(p) for p in processes)
        measured, _, count = self._uss
        if private and (now - measured >= USS_EVERY_S or abs(len(processes) - count) * 4 > count):
            uss = 0
            for process in processes:
                with contextlib.suppress(psutil.Error):
                    uss += process.memory_full_info().uss
            self._uss = (now, uss / 2**20 / private, len(processes))
        self._memory = (now, private * self._uss[1])
        return self._memory[1]

    def private_total_mb(self, relist: bool = False) -> float:
        """The private resident memory of all the browser's processes (statm), read at most
        every BOUND_EVERY_S and shared by its pages: no page holds more, so while this is below
        a page's ceiling its check needs nothing finer (PageMemory). The processes are listed
        again (~4-6 ms: psutil reads every process's stat on the machine) at least every
        RELIST_S (any process Chromium started meanwhile, a renderer it swapped in for a page
        that stayed on its origin); when `relist` (a page that is new, or navigated to another
        origin, may have a renderer the list lacks), the renderers the zygotes forked since
        join the list (`memory.forked`: a file a zygote), or, where that cannot be read, all
        are listed again. A listed process that is gone (the renderer of a context
        that closed: one an episode) is dropped; it holds nothing now."""
        now = time.monotonic()
        when, value = self._bound
        if not self._relisted(relist) and now - when < BOUND_EVERY_S:
            return value
        read = [private_mb(p, missing=-1.0) for p in self._listed]
        if -1.0 in read:
            self._listed = [p for p, mb in zip(self._listed, read, strict=True) if mb >= 0]
        value = sum(mb for mb in read if mb > 0)
        self._bound = (now, value)
        return value

    @property
    def open_contexts(self) -> int:
        return len(self._browser.contexts) if self._browser is not None else 0

    async def admit(self, others_running: int) -> None:
        """Wait before a new episode while the browser is above its memory limit, or the
        worker's session limit (`admission`) is full, and other episodes are still running
        (they free memory and CPU as they end; never wait for nothing). The admitted episode's
        next `session()` takes the slot."""
        limit = self.config.memory_limit_mb
        await self.admission.admit(others_running, lambda: self.memory_mb() > limit)

    async def responsive(self, timeout_s: float = 10.0) -> bool:
        """Does the browser still answer a CDP command within `timeout_s`?"""
        if self._browser is None or not self.connected:
            return False
        try:
            cdp = await asyncio.wait_for(self._browser.new_browser_cdp_session(), timeout_s)
            await asyncio.wait_for(cdp.send("Browser.getVersion"), timeout_s)
            await cdp.detach()
        except Exception:
            return False
        return True

    async def kill(self) -> None:
        """Kill a browser that stopped answering: its processes, then our handles."""
        for process in self._browser_processes():
            with contextlib.suppress(psutil.Error):
                process.kill()
        await self.close()

    def _recent_processes(self) -> list[psutil.Process]:
        """The browser's processes as listed at most RELIST_S ago (`private_total_mb`'s list,
        shared), for the admission's CPU probe: listing costs ~6 ms of CPU on a machine of 160
        processes (psutil reads every process's stat), and the probe listed on its own once a
        second; a process started since counts from the next listing (its CPU until then is
        left out of one interval, as a process's that started between two probes always was).
        `memory_mb` shares it too, listed again when older than the figure asked for."""
        self._relisted()
        return list(self._listed)

    def _relisted(self, force: bool = False, max_age_s: float = RELIST_S) -> bool:
        """List the browser's processes again when none are listed, or when the list is
        `max_age_s` (at most RELIST_S) old; when `force`, at least add what its zygotes forked
        since (`memory.forked`; all listed again where that cannot be read). Whether it did."""
        now = time.monotonic()
        if self._listed and now - self._listed_at < min(max_age_s, RELIST_S):
            if not force:
                return False
            found = forked(self._zygotes or [], self._listed)  # a new page's renderer
            if found is not None:
                self._listed = found
                return True
        self._listed, self._listed_at = self._browser_processes(), now
        if self._zygotes is None and self._listed:  # started with the browser: looked for once
            self._zygotes = zygotes(self._listed)
        return True

    def _browser_processes(self) -> list[psutil.Process]:
        """This host's Chromium: the process whose command line carries our marker switch
        (Playwright does not expose the pid), and everything under it."""
        main = self._main_process
        if main is None or not main.is_running():
            main = next(
                (
                    p
                    for p in psutil.process_iter(["cmdline"])
                    if self._marker in (p.info["cmdline"] or [])
                ),
                None,
            )
            self._main_process = main
        if main is None:
            return []
        try:
            children: list[psutil.Process] = main.children(recursive=True)
        except psutil.Error:
            return []
        return [main, *children]

    async def restart(self) -> None:
        """Relaunch after the browser died (a crash, an OOM kill)."""
        await self.close()
        await self.start()

    async def close(self) -> None:
        """Close browser then driver; each step guarded so one failure doesn't leak the other."""
        self.stopping = True  # before anything closes: episodes failing from here are not data
        self.admission.stop()
        for hook in self.on_close:
            try:
                await hook()
            except Exception:
                log.warning("closing what the browser kept open failed", exc_info=True)
        if self._browser is not None:
            try:
                await self._browser.close()
            except Exception:
                log.warning("browser close failed", exc_info=True)
            self._browser = None
        if self._playwright is not None:
            try:
                await self._playwright.stop()
            except Exception:
                log.warning("playwright stop failed", exc_info=True)
            self._playwright = None
        if self.egress is not None:
            await self.egress.close()
            self.egress = None

    @asynccontextmanager
    async def session(
        self,
        record: Path | None = None,
        proxy: dict[str, str] | None = None,
        counted: bool = True,
    ) -> AsyncIterator[Session]:
        """A fresh, isolated browser context with one page, closed on exit. With `record`,
        Playwright's driver records its traffic there (HAR, bodies embedded), written when the
        context closes: what a replay of the episode is answered from (pipeline/recording.py).
        With `proxy` (Playwright's per-context setting), its connections go there instead of
        the egress proxy: a replay's seal (browser/seal.py). Not `counted`: the caller tells
        the session limit when the context is in use itself (one kept open between uses)."""
        if counted:
            self.admission.opened()
        try:
            async with self._session(record, proxy) as session:
                yield session
        finally:
            if counted:
                self.admission.closed()

    @asynccontextmanager
    async def _session(
        self, record: Path | None, proxy: dict[str, str] | None
    ) -> AsyncIterator[Session]:
        if self._browser is None or not self.connected:
            raise BrowserDied("the browser is not running")
        cfg = self.config
        self.episodes += 1
        watch: asyncio.Task[None] | None = None
        context = await self._browser.new_context(
            viewport={"width": cfg.viewport.width, "height": cfg.viewport.height},
            device_scale_factor=cfg.device_scale_factor,
            accept_downloads=False,  # a download is not data, and fills disks
            service_workers="block",  # they outlive the page, fetching on no episode's record
            proxy=proxy,  # type: ignore[arg-type]
            # minimal: what a replay needs (requests, responses, bodies), no timings or pages
            record_har_path=record,
            record_har_mode="minimal" if record is not None else None,
            record_har_content="embed" if record is not None else None,
        )
        try:
            await context.add_init_script(script=PAGE_INIT_JS)  # before any page script runs
            page = await context.new_page()
            events = PageEvents()
            cdp = await context.new_cdp_session(page)
            harden(context, page, events, stop=lambda: _crash(cdp))
            page.set_default_timeout(cfg.action_timeout_s * 1000)
            page.set_default_navigation_timeout(cfg.navigation_timeout_s * 1000)
            if self._loads is None:
                self._loads = asyncio.Semaphore(CONCURRENT_LOADS)
            if self._traces is None:
                self._traces = asyncio.Lock()
            memory = PageMemory(
                page,
                cdp,
                cfg.page_memory_mb,
                self._traces,
                self._browser_processes,
                self.private_total_mb,
            )
            watch = asyncio.create_task(memory.watch(), name="datagen-page-memory")
            yield Session(
                context, page, cdp, cfg, self._loads, events, self.guard, self.egress, memory
            )
        finally:
            if watch is not None:
                watch.cancel()  # awaited after the close: it must not delay (or swallow) it
            try:
                # A renderer stuck in a JS loop can make close slow: bounded, then move on.
                await asyncio.wait_for(context.close(), CONTEXT_CLOSE_TIMEOUT_S)
            except Exception as exc:
                # closed along with the browser (a shutdown): nothing worth a warning; else one
                # line (a hung or crashed page: its episode's reject says what happened)
                level = logging.WARNING if self.connected else logging.DEBUG
                log.log(level, "context close failed: %s", _said(exc))
                log.debug("context close failed", exc_info=True)
            if watch is not None:  # let the cancelled watchdog end (a pending one is dropped)
                await asyncio.wait([watch], timeout=1.0)


def _said(exc: BaseException) -> str:
    """An exception in one line: its type and first line (a timeout says which limit)."""
    if isinstance(exc, TimeoutError):
        return f"no answer within {CONTEXT_CLOSE_TIMEOUT_S:g} s"
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"


async def _crash(cdp: CDPSession) -> None:
    """End one page alone: Chromium crashes its renderer (contexts never share renderers)."""
    with contextlib.suppress(Exception):  # already gone, or closing: it is ended either way
        await asyncio.wait_for(cdp.send("Page.crash"), 2.0)
