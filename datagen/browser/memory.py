"""The per-page memory ceiling (`browser.page_memory_mb`): what one episode's page may hold.

    BrowserHost.session() ─► PageMemory.watch() every WATCH_S, and Session.observe() ─► check()
                          ─► above the ceiling: the page's renderers killed, PageMemoryExceeded

What is measured, and why: the private resident memory (resident minus shared pages, from
/proc/PID/statm) of the renderer processes that hold the page's frames. Measured per kind of
allocation (docs/reliability.md): V8's per-page figures (`Runtime.getHeapUsage`: its heap,
ArrayBuffer backing stores, Blink's DOM heap) miss a canvas's pixels and WebAssembly memory
altogether, and a CDP command waits while a script holds the page's main thread; the renderer's
own memory counts every kind, a Web Worker's too, and can be read while the page is stuck.

Chromium says which process holds a frame only in a trace (`TracingStartedInBrowser` lists the
traced page's frames with their process ids). A trace takes ~30 ms and Chromium runs one at a
time, so the frames' processes are looked up again only after a frame navigated (a cross-site
navigation changes process), one trace at a time per browser; in between a check reads
/proc/PID/statm, some microseconds. Should no process be found, the page's JavaScript heap
(V8's heap, backing stores and DOM heap) is measured instead.

None of that is needed while the browser as a whole holds less than the page's ceiling (its
processes' private memory summed, read at most every 0.1 s and shared by all its pages: a
step's check is then a cached number). The usual run never traces: with the default ceiling of
2 GB, a page is looked at alone only once the browser holds more than that.

Renderers are never shared between browser contexts and each episode has its own: killing the
page's renderers ends that page alone, and gives its memory back at once, even while a script
holds the page's main thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable
from typing import Any

import psutil
from playwright.async_api import CDPSession, Frame, Page

from datagen.url import origin_text

log = logging.getLogger(__name__)
# A page can allocate ~1.5 GB/s (measured): a check every 0.25 s lets it pass its ceiling by
# ~0.4 GB at most. A check between traces reads one small /proc file per renderer.
WATCH_S = 0.25
# After a frame navigated (a cross-site one changes process), the page's frames' processes are
# traced again: at once for the main frame, at most this often for subframes (~30 ms a trace).
REMAP_S = 1.0
TRACE_TIMEOUT_S = 5.0
KILL_WAIT_S = 1.0  # a kill waits this long for a trace to end, then for its processes to go
HEAP_TIMEOUT_S = 2.0  # the fallback's CDP command waits while a script holds the page
TRACE_CATEGORIES = "-*,disabled-by-default-devtools.timeline"  # holds TracingStartedInBrowser
MB = 2**20
STATM = os.path.exists("/proc/self/statm")  # Linux: private_mb reads the file itself
PAGE = os.sysconf("SC_PAGE_SIZE") if STATM else 4096


class PageMemoryExceeded(Exception):
    """The page held more memory than `browser.page_memory_mb`; its renderer was stopped."""

    def __init__(self, measured_mb: float, ceiling_mb: int, measure: str) -> None:
        super().__init__(
            f"the page held {math.ceil(measured_mb)} MB ({measure}), above browser.page_memory_mb = "
            f"{ceiling_mb}; its renderer was stopped"
        )
        self.measured_mb = measured_mb
        self.ceiling_mb = ceiling_mb
        self.measure = measure


class PageMemory:
    """One page's memory, checked by each step (`check`) and by a watchdog (`watch`)."""

    def __init__(
        self,
        page: Page,
        cdp: CDPSession,
        ceiling_mb: int,
        traces: asyncio.Lock,
        ours: Callable[[], list[psutil.Process]],
        bound: Callable[[bool], float] | None = None,
    ) -> None:
        self.page = page
        self.cdp = cdp
        self.ceiling_mb = ceiling_mb
        self._traces = traces  # the browser's: Chromium refuses a second trace at once
        self._ours = ours  # the browser's processes: only those are ever read or killed
        self._bound = bound  # MB all the browser's processes hold (listed again: True)
        self._unlisted = True  # the page may have a renderer the browser's list lacks
        self._renderers: list[psutil.Process] = []
        self._stale = True  # a frame navigated since the renderers were looked up
        self._moved = True  # the main frame changed origin: traced at once (else REMAP_S)
        self._origin = ""  # the main frame's origin when last seen
        self._traced = 0.0
        self._crashed = False  # its renderer is gone: nothing left to measure
        self.exceeded: PageMemoryExceeded | None = None
        self.capturing = 0  # the page's screenshots in flight (the Camera counts them)
        page.on("framenavigated", self._navigated)
        page.on("crash", self._crash)

    def _navigated(self, frame: Frame) -> None:
        """Only a change of origin can move the main frame to another renderer (a same-origin
        navigation, or a same-document one such as an app's pushState, which Playwright also
        reports, keeps it; should Chromium still swap it, the known renderer is gone and
        `measure` looks again). A subframe may move whenever it navigates."""
        if frame.parent_frame is not None:
            self._stale = True
            # another site's frame may get a process of its own
            self._unlisted |= origin_text(frame.url) != self._origin
            return
        origin = origin_text(frame.url)
        if origin != self._origin:
            self._origin = origin
            self._stale = self._moved = self._unlisted = True

    def _crash(self, _: Page) -> None:
        self._crashed = True

    async def check(self) -> None:
        """Raise PageMemoryExceeded when the page is, or was, above its ceiling (its renderers
        are killed the first time). A page that cannot be measured (closed, crashed) passes:
        the step's own browser calls say what happened to it."""
        if self.exceeded is None and not self._crashed:
            try:
                measured, measure = await self.measure()
            except Exception:
                log.debug("page memory not measured", exc_info=True)
                return
            if measured > self.ceiling_mb and self.exceeded is None:
                self.exceeded = PageMemoryExceeded(measured, self.ceiling_mb, measure)
                log.warning("%s on %s", self.exceeded, self.page.url)
                await self._stop()
        if self.exceeded is not None:
            e = self.exceeded
            raise PageMemoryExceeded(e.measured_mb, e.ceiling_mb, e.measure)

    async def watch(self) -> None:
        """Check every WATCH_S (between steps too: while the model decides, say) until the
        page passes its ceiling or the session ends (the task is cancelled)."""
        with contextlib.suppress(PageMemoryExceeded):
            while True:
                await asyncio.sleep(WATCH_S)
                await self.check()

    async def measure(self) -> tuple[float, str]:
        """(MB, what was measured): its renderer processes' private memory, else its heap;
        while all the browser's processes together hold less than the ceiling, that total (an
        upper bound, shared by the browser's pages: no trace, no reads of its own)."""
        if self._bound is not None:
            total = self._bound(self._unlisted)
            self._unlisted = False
            if 0 < total <= self.ceiling_mb:
                return total, "all the browser's processes, at most"
        renderers = [p for p in self._renderers if p.is_running()]
        if not renderers and self._renderers:  # swapped under us: look again
            self._stale = self._moved = True
        if self._stale and (self._moved or time.monotonic() - self._traced >= REMAP_S):
            await self._find_renderers()
            renderers = [p for p in self._renderers if p.is_running()]
        if renderers:
            return sum(private_mb(p) for p in renderers), _plural(len(renderers))
        usage = await asyncio.wait_for(self.cdp.send("Runtime.getHeapUsage"), HEAP_TIMEOUT_S)
        used = sum(usage.get(k, 0) for k in ("usedSize", "embedderHeapUsedSize"))
        return (used + usage.get("backingStorageSize", 0)) / MB, "its JavaScript heap"

    async def _find_renderers(self) -> None:
        """The processes of the page's frames, from a trace (see the module's docstring)."""
        self._stale = self._moved = False  # a frame navigating meanwhile makes it stale again
        try:
            async with self._traces:
                pids = await asyncio.wait_for(_frame_pids(self.cdp), TRACE_TIMEOUT_S)
        except Exception:  # tracing refused or failed: keep what was known, try again later
            log.debug("no trace of the page's frames", exc_info=True)
            self._stale = True
            return
        finally:
            self._traced = time.monotonic()
        # only renderers: whatever a trace says, the browser's own, GPU or utility processes
        # are never this page's to measure or kill
        self._renderers = [p for p in self._ours() if p.pid in pids and _of_type(p, "renderer")]

    async def _stop(self) -> None:
        """Kill the page's renderers (its memory is given back at once, whatever its main
        thread is doing); with none known, ask Chromium to crash the page."""
        renderers = [p for p in self._renderers if p.is_running()]
        if renderers:
            # Never while a trace or the page's screenshot runs, and no trace until they are
            # gone: the browser itself crashed (SIGSEGV, a crashpad dump) right after such
            # kills in full suites beside a CPU hog. Each takes some ms: the kill waits for
            # them at most KILL_WAIT_S (a page whose main thread is held never answers).
            loop = asyncio.get_running_loop()
            deadline = loop.time() + KILL_WAIT_S
            while (self._traces.locked() or self.capturing) and loop.time() < deadline:
                await asyncio.sleep(0.01)
            held = not self._traces.locked()  # (no wait_for on acquire: it can leak the lock)
            if held:
                await self._traces.acquire()
            try:
                for process in renderers:
                    with contextlib.suppress(psutil.Error):
                        process.kill()
                await asyncio.to_thread(psutil.wait_procs, renderers, KILL_WAIT_S)
            finally:
                if held:
                    self._traces.release()
        else:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.cdp.send("Page.crash"), 2.0)


async def _frame_pids(cdp: CDPSession) -> set[int]:
    """The process ids of a page's frames: the one trace event that lists them."""
    frames: list[dict[str, Any]] = []
    done = asyncio.get_running_loop().create_future()

    def collected(params: dict[str, Any]) -> None:
        for event in params.get("value", []):
            if event.get("name") == "TracingStartedInBrowser":
                frames.extend(event.get("args", {}).get("data", {}).get("frames", []))

    def complete(_: object) -> None:
        if not done.done():
            done.set_result(None)

    cdp.on("Tracing.dataCollected", collected)
    cdp.on("Tracing.tracingComplete", complete)
    try:
        await cdp.send(
            "Tracing.start", {"categories": TRACE_CATEGORIES, "transferMode": "ReportEvents"}
        )
        await cdp.send("Tracing.end")
        await done
    finally:
        cdp.remove_listener("Tracing.dataCollected", collected)
        cdp.remove_listener("Tracing.tracingComplete", complete)
    return {int(f["processId"]) for f in frames if f.get("processId")}


def _of_type(process: psutil.Process, kind: str) -> bool:
    """A Chromium process of `kind` (`--type=KIND` on its command line); False when gone."""
    try:
        return f"--type={kind}" in process.cmdline()
    except psutil.Error:
        return False


def private_mb(process: psutil.Process, missing: float = 0.0) -> float:
    """Resident memory not shared with other processes or backed by files (statm: resident
    minus shared; within a few MB of USS, at a thousandth of its cost); `missing` for a process
    that is gone. Read from the file itself where there is one (~9 µs, psutil's memory_info
    ~24: the pages' watchers read every process of the browser up to ten times a second)."""
    if STATM:
        try:
            fd = os.open(f"/proc/{process.pid}/statm", os.O_RDONLY)
        except FileNotFoundError:
            return missing  # gone
        except OSError:
            pass  # not ours to read this way: psutil says why
        else:
            try:
                fields = os.read(fd, 256).split()
                return (int(fields[1]) - int(fields[2])) * PAGE / MB
            except (OSError, ValueError, IndexError):
                return missing  # exited between open and read
            finally:
                os.close(fd)
    try:
        info = process.memory_info()
    except psutil.Error:
        return missing
    return float(info.rss - getattr(info, "shared", 0)) / MB


def _plural(count: int) -> str:
    return "its renderer process" if count == 1 else f"its {count} renderer processes"


def zygotes(processes: list[psutil.Process]) -> list[int]:
    """The process ids of Chromium's zygotes among `processes` (`--type=zygote`): on Linux
    every renderer is forked by one of them."""
    return [process.pid for process in processes if _of_type(process, "zygote")]


def forked(zygote_pids: list[int], listed: list[psutil.Process]) -> list[psutil.Process] | None:
    """`listed` and the zygotes' children it lacks (a renderer forked since), read from each
    zygote's /proc/PID/task/PID/children (zygotes are single-threaded: one small file each,
    where listing the browser's processes anew reads every process's stat on the machine);
    None when that cannot be read (no zygote known, one gone, a kernel without the file)."""
    if not zygote_pids:
        return None
    known = {p.pid for p in listed}
    found = list(listed)
    for pid in zygote_pids:
        try:
            with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
                pids = [int(child) for child in children.read().split()]
        except (OSError, ValueError):
            return None
        for child in pids:
            if child not in known:
                with contextlib.suppress(psutil.Error):
                    found.append(psutil.Process(child))
    return found
