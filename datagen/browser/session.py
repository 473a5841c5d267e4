"""Browser host (one Chromium per worker) and sessions (one fresh context per episode).

    BrowserHost.session() ─► Session.goto / observe() ─► Observation / act(Action) / check()

Screenshots go through Chrome's own `Page.captureScreenshot` over a CDP session with its
speed option: it saves 15-35% CPU over `page.screenshot` (measured in reference/measured.md).
Only the viewport is captured, never the full page.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path

import psutil
from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Page,
    Playwright,
    Request,
    Response,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ValidationError

from datagen.browser.actions import execute
from datagen.browser.egress import REASON_HEADER, EgressProxy
from datagen.browser.guard import BadUrl, NameNotResolved, UrlGuard, split_url
from datagen.browser.hostile import PageEvents, harden
from datagen.browser.launch import find_executable, launch_options
from datagen.browser.memory import PageMemory
from datagen.config import BrowserConfig
from datagen.records import (
    Action,
    Box,
    Element,
    Goto,
    Observation,
    RejectReason,
    SuccessCheck,
)

log = logging.getLogger(__name__)
_HERE = Path(__file__).parent
ELEMENTS_JS = (_HERE / "elements.js").read_text(encoding="utf-8")
PAGE_INIT_JS = (_HERE / "page_init.js").read_text(encoding="utf-8")
SETTLE_JS = (_HERE / "settle.js").read_text(encoding="utf-8")
STABILITY_JS = (_HERE / "stability.js").read_text(encoding="utf-8")
MAX_ELEMENTS = 400
MOVED_PX = 1.0  # a box that shifted more than this between scan and screenshot disagrees with it
RETAKES = 1  # observations retaken when something moved, before its boxes are flagged
LONG_REQUEST_S = 2.0  # a request open longer than this is a poll or a stream, not loading


class _Scan(BaseModel):
    """What elements.js returns (as one JSON string)."""

    scrollX: float
    scrollY: float
    elements: tuple[Element, ...]


class _Remeasure(BaseModel):
    """What stability.js returns: the scanned elements' boxes now (None: gone), and the
    page's title (read in the same round trip)."""

    title: str = ""
    scrollX: float
    scrollY: float
    boxes: list[Box | None]


CONCURRENT_LOADS = 4  # both cores saturate at ~4 active pages: more loads at once only time out
CONTEXT_CLOSE_TIMEOUT_S = 10.0


class BrowserDied(Exception):
    """Chromium is gone: the shard must fail (and be retried), not be committed as rejects."""


class CheckNotBoolean(Exception):
    """A task's `check.js` gave something other than true or false (a training label must not
    come from JavaScript's truthiness: a Promise, an object or "false" would all be success)."""


CHECK_SETTLE_MS = 5000
# The check's value, awaited when it is a promise (bounded: one that never settles is broken),
# and returned as JSON only when it is a boolean; otherwise its type and a glimpse of it.
CHECK_JS = (
    "async () => { const value = await Promise.race([(async () => (EXPR))(), "
    "new Promise((_, fail) => setTimeout(() => fail(new Error("
    f"'the check did not settle within {CHECK_SETTLE_MS} ms')), {CHECK_SETTLE_MS}))]); "
    "return typeof value === 'boolean' ? value : "
    "(typeof value) + ' ' + String(value).slice(0, 80); }"
)


# Chromium's network errors that say the host was never reached, by the reason they become
NET_ERRORS = {
    "ERR_NAME_NOT_RESOLVED": RejectReason.DNS_FAILED,
    "ERR_NAME_RESOLUTION_FAILED": RejectReason.DNS_FAILED,
    "ERR_CONNECTION_REFUSED": RejectReason.UNREACHABLE,
    "ERR_CONNECTION_FAILED": RejectReason.UNREACHABLE,
    "ERR_CONNECTION_TIMED_OUT": RejectReason.UNREACHABLE,
    "ERR_ADDRESS_UNREACHABLE": RejectReason.UNREACHABLE,
    "ERR_ADDRESS_INVALID": RejectReason.UNREACHABLE,
    "ERR_INTERNET_DISCONNECTED": RejectReason.UNREACHABLE,
}
NET_ERROR = re.compile(r"net::(ERR_[A-Z_]+)")
# Playwright's "Cannot navigate to invalid URL": Chromium's parser refused what Python's took
INVALID_URL = "invalid URL"


class NavigationFailed(Exception):
    """The start URL could not be loaded; `reason` is its reject: `blocked_url` (the guard),
    `bad_url` (it does not parse), `dns_failed`, `unreachable` or `navigation_failed` (an HTTP
    error, anything else)."""

    def __init__(self, message: str, reason: RejectReason = RejectReason.NAVIGATION_FAILED) -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def blocked(self) -> bool:
        return self.reason is RejectReason.BLOCKED_URL


def target_closed(exc: BaseException) -> bool:
    """Playwright's "target page, context or browser has been closed" (its class is private)."""
    return type(exc).__name__ == "TargetClosedError"


class BrowserHost:
    """One Playwright driver and one Chromium, owned by the event loop that started them."""

    def __init__(self, config: BrowserConfig, allow: list[str] | None = None) -> None:
        self.config = config
        self.guard = UrlGuard([*config.allow, *(allow or [])]) if config.url_guard else None
        self.episodes = 0  # sessions opened since this browser started (for recycling)
        self.launches = 0  # browsers started: a shard commits only on the one it began with
        self.stopping = False  # close() has begun: what fails now is no task's fault
        self._marker = (
            f"--datagen-browser={uuid.uuid4().hex}"  # finds our processes; Chromium ignores it
        )
        self._main_process: psutil.Process | None = None
        self._memory: tuple[float, float] = (0.0, 0.0)  # (when measured, MB)
        self.egress: EgressProxy | None = None
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self.version = ""
        self.playwright_version = metadata.version("playwright")
        self._loads: asyncio.Semaphore | None = None
        self._traces: asyncio.Lock | None = None  # pages' memory watchers trace one at a time

    async def start(self) -> None:
        self._playwright = await async_playwright().start()
        own = None
        try:
            own = self._playwright.chromium.executable_path
        except Exception:  # no browser downloaded by Playwright: fine, use the system's
            own = None
        executable = find_executable(self.config.executable, own)
        self._main_process = None
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
        self._browser = await self._playwright.chromium.launch(**options)  # type: ignore[arg-type]
        self.version = f"chromium/{self._browser.version}"
        self.episodes = 0
        self.launches += 1
        self.stopping = False
        log.info("browser started: %s (%s)", self.version, executable)

    @property
    def connected(self) -> bool:
        """The browser runs and is not being closed."""
        return self._browser is not None and self._browser.is_connected() and not self.stopping

    def memory_mb(self, max_age_s: float = 1.0) -> float:
        """The browser's own memory: USS summed over its processes (RSS would count shared
        pages once per process, ~5× too much). Measured at most once per `max_age_s`."""
        when, value = self._memory
        if time.monotonic() - when < max_age_s:
            return value
        total = 0
        for process in self._browser_processes():
            with contextlib.suppress(psutil.Error):
                total += process.memory_full_info().uss
        self._memory = (time.monotonic(), total / 2**20)
        return self._memory[1]

    @property
    def open_contexts(self) -> int:
        return len(self._browser.contexts) if self._browser is not None else 0

    async def admit(self, others_running: int) -> None:
        """Wait before a new episode while the browser is above its memory limit and other
        episodes are still running (they free memory as they end; never wait for nothing)."""
        while others_running and self.memory_mb() > self.config.memory_limit_mb:
            await asyncio.sleep(0.5)
            others_running = self.open_contexts

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
    async def session(self) -> AsyncIterator[Session]:
        """A fresh, isolated browser context with one page, closed on exit."""
        if self._browser is None or not self.connected:
            raise BrowserDied("the browser is not running")
        cfg = self.config
        self.episodes += 1
        watch: asyncio.Task[None] | None = None
        context = await self._browser.new_context(
            viewport={"width": cfg.viewport.width, "height": cfg.viewport.height},
            device_scale_factor=cfg.device_scale_factor,
            accept_downloads=False,  # a download is not data, and fills disks
            service_workers="block",  # they could fetch past the route-based guard
        )
        try:
            await context.add_init_script(script=PAGE_INIT_JS)  # before any page script runs
            page = await context.new_page()
            events = PageEvents()
            await harden(context, page, self.guard, events)
            page.set_default_timeout(cfg.action_timeout_s * 1000)
            page.set_default_navigation_timeout(cfg.navigation_timeout_s * 1000)
            cdp = await context.new_cdp_session(page)
            if self._loads is None:
                self._loads = asyncio.Semaphore(CONCURRENT_LOADS)
            if self._traces is None:
                self._traces = asyncio.Lock()
            memory = PageMemory(
                page, cdp, cfg.page_memory_mb, self._traces, self._browser_processes
            )
            watch = asyncio.create_task(memory.watch(), name="datagen-page-memory")
            yield Session(
                context, page, cdp, cfg, self._loads, events, self.guard, self.egress, memory
            )
        finally:
            if watch is not None:
                watch.cancel()  # not awaited: it must not delay (or swallow) the close below
            try:
                # A renderer stuck in a JS loop can make close slow: bounded, then move on.
                await asyncio.wait_for(context.close(), CONTEXT_CLOSE_TIMEOUT_S)
            except Exception:
                # closed along with the browser (a shutdown): nothing worth a warning
                level = logging.WARNING if self.connected else logging.DEBUG
                log.log(level, "context close failed", exc_info=True)


class Session:
    """One episode's page: navigate, observe, act, check."""

    def __init__(
        self,
        context: BrowserContext,
        page: Page,
        cdp: CDPSession,
        config: BrowserConfig,
        loads: asyncio.Semaphore | None = None,
        events: PageEvents | None = None,
        guard: UrlGuard | None = None,
        egress: EgressProxy | None = None,
        memory: PageMemory | None = None,
    ) -> None:
        self.context = context
        self.page = page
        self.cdp = cdp
        self.config = config
        self._loads = loads or asyncio.Semaphore(CONCURRENT_LOADS)
        self.events = events or PageEvents()
        self.guard = guard
        self.egress = egress
        self._requests: dict[int, float] = {}  # open requests of this page: id -> when sent
        self.memory = memory  # its memory ceiling (browser.page_memory_mb)
        self._opened = time.monotonic()
        page.on("request", self._request_started)
        page.on("requestfinished", self._request_ended)
        page.on("requestfailed", self._request_ended)
        if egress is not None:
            page.on("response", self._proxy_answered)
            page.on("requestfailed", self._proxy_failed)

    def _request_started(self, request: Request) -> None:
        self._requests[id(request)] = time.monotonic()

    def _request_ended(self, request: Request) -> None:
        self._requests.pop(id(request), None)

    def _proxy_answered(self, response: Response) -> None:
        """An http request the egress proxy refused (a redirect hop no route handler saw):
        recorded with the episode's blocked requests, like the route guard's own blocks."""
        if response.headers.get(REASON_HEADER) == RejectReason.BLOCKED_URL.value:
            self._proxy_blocked(response.url)

    def _proxy_failed(self, request: Request) -> None:
        """The same for https and wss: Chromium only says the tunnel failed; the proxy says why."""
        if "ERR_TUNNEL_CONNECTION_FAILED" in (request.failure or ""):
            self._proxy_blocked(request.url)

    def _proxy_blocked(self, url: str) -> None:
        # the proxy's word, not the header's alone: a site could send that header itself
        refusal = self.egress.refusal(url, since=self._opened) if self.egress else None
        if refusal is not None and refusal.reason is RejectReason.BLOCKED_URL:
            self.events.block(refusal.detail, url)

    def _loading(self) -> bool:
        """A request of this page is open that is not a long poll or a stream."""
        now = time.monotonic()
        return any(now - sent < LONG_REQUEST_S for sent in self._requests.values())

    async def goto(self, url: str) -> None:
        """Load the start URL; an error status or a failed load raises NavigationFailed with
        its reason (blocked, DNS, unreachable, anything else).

        The main document's status is taken from the response event too: Chromium sometimes
        swaps an error response for its own error page, and `goto` then only says
        "interrupted by another navigation". A page, context or browser closed under the load
        (a shutdown, an interrupt, a crash) is no answer about the URL: Playwright's error goes
        up unchanged, and the pipeline fails the shard instead of rejecting the task.
        """
        try:
            split_url(url)  # guard or no guard: a URL that does not parse is the task's mistake
            reason = await self._vet(url)
        except BadUrl as exc:
            raise NavigationFailed(str(exc), RejectReason.BAD_URL) from None
        except NameNotResolved as exc:
            raise NavigationFailed(f"{exc}: {url[:300]}", RejectReason.DNS_FAILED) from None
        if reason is not None:  # data:, file: and the like never reach a route handler
            raise NavigationFailed(f"{reason}: {url[:300]}", RejectReason.BLOCKED_URL)
        answers: list[tuple[int, str]] = []  # main document: (status, the proxy's reason or "")

        def on_response(response: Response) -> None:
            if response.request.is_navigation_request() and response.frame == self.page.main_frame:
                proxy = response.headers.get(REASON_HEADER, "")
                answers.append((response.status, proxy))

        requested: list[str] = [url]  # main document requests, redirect hops included

        def on_request(request: Request) -> None:
            with contextlib.suppress(Exception):  # a worker's request has no frame
                if request.is_navigation_request() and request.frame == self.page.main_frame:
                    requested.append(request.url)

        began = time.monotonic()
        self.page.on("response", on_response)
        self.page.on("request", on_request)
        try:
            async with self._loads:  # the timeout starts when the load does, not in the queue
                await self.page.goto(url, wait_until="load")
        except Exception as exc:
            if target_closed(exc) or self.page.is_closed():
                raise
            raise self._failed(url, exc, answers, requested[-1], began) from None
        finally:
            self.page.remove_listener("response", on_response)
            self.page.remove_listener("request", on_request)
        if answers and answers[-1][0] >= 400:
            raise self._failed(url, None, answers, requested[-1], began)

    def _failed(
        self,
        url: str,
        exc: Exception | None,
        answers: list[tuple[int, str]],
        last: str,
        began: float,
    ) -> NavigationFailed:
        """Why a start URL did not load, from what the browser and the egress proxy saw."""
        refusal = self.egress.refusal(last, since=began) if self.egress is not None else None
        if answers and answers[-1][0] >= 400:
            status, proxy = answers[-1]
            if proxy and refusal is not None:  # the proxy's own answer, not the site's
                return NavigationFailed(f"{url}: {refusal.detail}", refusal.reason)
            return NavigationFailed(f"{url}: HTTP {status}")
        text = str(exc).splitlines()[0] if exc is not None else ""
        if "ERR_BLOCKED_BY_CLIENT" in text and self.events.blocked:
            return NavigationFailed(self.events.blocked[-1], RejectReason.BLOCKED_URL)
        if INVALID_URL in text:  # Python's parser let it through, Chromium's did not
            return NavigationFailed(f"{url[:300]}: {text}", RejectReason.BAD_URL)
        code = NET_ERROR.search(text)
        if code and code.group(1) in NET_ERRORS:
            return NavigationFailed(f"{url}: {text}", NET_ERRORS[code.group(1)])
        if code and code.group(1) == "ERR_TUNNEL_CONNECTION_FAILED" and refusal is not None:
            return NavigationFailed(f"{url}: {refusal.detail}", refusal.reason)
        return NavigationFailed(f"{url}: {text}")

    async def screenshot(self, scroll_x: float = 0.0, scroll_y: float = 0.0) -> bytes:
        """The viewport at device pixels. CDP's capture ignores the emulated device scale
        factor unless asked through `clip.scale`, and its clip is in document coordinates."""
        cfg = self.config
        clip = {
            "x": scroll_x,
            "y": scroll_y,
            "width": cfg.viewport.width,
            "height": cfg.viewport.height,
            "scale": cfg.device_scale_factor,
        }
        params: dict[str, object] = {
            "format": cfg.image_format,
            "optimizeForSpeed": True,
            "clip": clip,
        }
        if cfg.image_format != "png":
            params["quality"] = cfg.image_quality
        result = await self.cdp.send("Page.captureScreenshot", params)
        return base64.b64decode(result["data"])

    async def elements(self) -> tuple[tuple[Element, ...], float, float]:
        """The visible interactive elements, and the page's scroll offset (x, y)."""
        raw = await self.page.evaluate(ELEMENTS_JS, {"maxElements": MAX_ELEMENTS, "asJson": True})
        try:
            scan = _Scan.model_validate_json(raw)
        except ValidationError:  # the page's JSON is not the standard one: take the object
            args = {"maxElements": MAX_ELEMENTS, "asJson": False}
            scan = _Scan.model_validate(await self.page.evaluate(ELEMENTS_JS, args))
        return scan.elements, scan.scrollX, scan.scrollY

    async def settle(self) -> tuple[float, bool]:
        """Wait, bounded by `settle_timeout_ms`, until the page holds still: no request loading,
        no DOM change for `settle_quiet_ms`, fonts ready, a frame painted. Returns (ms waited,
        whether it got quiet). Apps that render after `load` (loaders, SPAs, data fetches) are
        observed once they have rendered, not at `load`."""
        cfg = self.config
        start = time.monotonic()
        deadline = start + cfg.settle_timeout_ms / 1000
        quiet = False
        while True:
            while self._loading() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            left_ms = max(0.0, (deadline - time.monotonic()) * 1000)
            args = {"quietMs": cfg.settle_quiet_ms, "timeoutMs": left_ms}
            try:
                quiet = bool((await self.page.evaluate(SETTLE_JS, args))["quiet"])
            except PlaywrightError:  # navigating: the new document settles on the next round
                await self._settle_load()
                quiet = False
            if (quiet and not self._loading()) or time.monotonic() >= deadline:
                break
        return (time.monotonic() - start) * 1000, quiet and not self._loading()

    async def _scan(self) -> tuple[tuple[Element, ...], float, float]:
        try:
            return await self.elements()
        except PlaywrightError:
            # The page navigated under us ("execution context was destroyed"): wait, retry once.
            await self._settle_load()
            return await self.elements()

    async def _moved(
        self, elements: tuple[Element, ...], scroll: tuple[float, float]
    ) -> tuple[set[int], str | None]:
        """Indices of the scanned elements whose box is not where the scan put it any more, and
        the page's title (None when the page could not be read)."""
        try:
            now = _Remeasure.model_validate_json(await self.page.evaluate(STABILITY_JS))
        except (PlaywrightError, ValidationError):
            return {e.index for e in elements}, None  # navigated away: nothing is certain
        if abs(now.scrollX - scroll[0]) > MOVED_PX or abs(now.scrollY - scroll[1]) > MOVED_PX:
            return {e.index for e in elements}, now.title
        moved = set()
        for element, box in zip(elements, now.boxes, strict=False):
            if box is None or _shifted(element.box, box):
                moved.add(element.index)
        return moved, now.title

    async def observe(self) -> Observation:
        """Screenshot and DOM elements of one moment: settle, scan, capture, then measure the
        boxes again. If anything moved meanwhile, take it all again once; elements that still
        moved, and those the scan saw animated (a running CSS animation of their geometry, or a
        script rewriting their style frame after frame), are marked `stable=False`: their boxes
        may not match the image. A page above its memory ceiling raises PageMemoryExceeded."""
        start = time.perf_counter()
        if self.memory is not None:  # a page above its memory ceiling is no observation
            await self.memory.check()
        settle_ms, _ = await self.settle()
        retakes = 0
        while True:
            elements, scroll_x, scroll_y = await self._scan()
            image = await self.screenshot(scroll_x, scroll_y)
            moved, title = await self._moved(elements, (scroll_x, scroll_y))
            if not moved or retakes >= RETAKES:
                break
            retakes += 1
        moved |= {e.index for e in elements if not e.stable}  # animated: moving by nature
        if moved:
            elements = tuple(
                e.model_copy(update={"stable": False}) if e.index in moved else e for e in elements
            )
        cfg = self.config
        scale = cfg.device_scale_factor
        return Observation(
            url=self.page.url,
            title=title if title is not None else await self.page.title(),
            screenshot=image,
            image_format=cfg.image_format,
            image_width=round(cfg.viewport.width * scale),
            image_height=round(cfg.viewport.height * scale),
            viewport_width=cfg.viewport.width,
            viewport_height=cfg.viewport.height,
            device_scale_factor=scale,
            elements=elements,
            observe_ms=(time.perf_counter() - start) * 1000,
            settle_ms=round(settle_ms, 1),
            stable=not moved,
            retakes=retakes,
        )

    async def answers(self, timeout_s: float = 2.0) -> bool:
        """Does the page's main thread run a script within `timeout_s`? (No: it is hung.)"""
        try:
            await asyncio.wait_for(self.page.evaluate("1"), timeout_s)
        except Exception:
            return False
        return True

    async def _vet(self, url: str) -> str | None:
        if self.guard is None:
            return None
        reason = await self.guard.check(url, top_level=True)
        if reason is not None:
            self.events.block(reason, url)
        return reason

    async def act(self, action: Action) -> str | None:
        """Execute, then give the page `settle_ms` and any navigation time to react. A goto the
        guard refuses, or to a URL that does not parse, is not taken: its action error says
        why. One to a name that does not resolve is taken, and fails as it would unguarded."""
        if isinstance(action, Goto):
            try:
                split_url(action.url)
                reason = await self._vet(action.url)
            except BadUrl as exc:
                return f"bad URL: {exc}"
            except NameNotResolved:
                reason = None  # the route handler aborts it as Chromium would: an error page
            if reason is not None:
                return f"blocked: {reason}"
        error = await execute(
            self.page, action, self.config.device_scale_factor, self.config.action_timeout_s
        )
        if self.config.settle_ms:
            await asyncio.sleep(self.config.settle_ms / 1000)
        await self._settle_load()
        return error

    async def _settle_load(self) -> None:
        try:
            await self.page.wait_for_load_state(
                "load", timeout=self.config.navigation_timeout_s * 1000
            )
        except Exception:
            log.debug("page did not reach load state", exc_info=True)

    async def check(self, check: SuccessCheck) -> bool:
        """Every given condition of the task's success check, on the live page."""
        if check.url_contains is not None and check.url_contains not in self.page.url:
            return False
        if check.text_present is not None:
            text = await self.page.evaluate("() => document.body ? document.body.innerText : ''")
            if check.text_present not in text:
                return False
        if check.js is not None:
            value = await self.page.evaluate(CHECK_JS.replace("EXPR", check.js))
            if not isinstance(value, bool):
                raise CheckNotBoolean(
                    f"success check gave {value!r}, not true or false: write a comparison "
                    "(=== , >=, Boolean(…))"
                )
            return value
        return True

    def watch_documents(self) -> None:
        """Follow the main frame's documents for `document`: the URL last requested and the
        HTTP status it got (the pipeline checks that an action did not land on an error page)."""
        self._document: tuple[str, int | None] = ("", None)

        def main(request: Request) -> bool:
            try:
                return request.is_navigation_request() and request.frame == self.page.main_frame
            except Exception:  # a request without a frame (a worker's): not a document
                return False

        def on_request(request: Request) -> None:
            if main(request):
                self._document = (request.url, None)

        def on_response(response: Response) -> None:
            if main(response.request):
                self._document = (response.url, response.status)

        self.page.on("request", on_request)
        self.page.on("response", on_response)

    @property
    def document(self) -> tuple[str, int | None]:
        """(URL, HTTP status) of the main frame's last document request since
        `watch_documents`; the status is None until a response came (loading, failed, blocked)."""
        return getattr(self, "_document", ("", None))


def _shifted(before: Box, after: Box) -> bool:
    return (
        abs(before.x - after.x) > MOVED_PX
        or abs(before.y - after.y) > MOVED_PX
        or abs(before.width - after.width) > MOVED_PX
        or abs(before.height - after.height) > MOVED_PX
    )
