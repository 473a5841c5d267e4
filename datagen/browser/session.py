"""Sessions: one fresh browser context and page per episode (opened by `BrowserHost.session`).

    Session.goto(start URL) ─► [observe() ─► Observation, act(Action), check(SuccessCheck)] × steps

The session follows its page's requests (for settling and for the main document's status),
vets the URLs it is told to load with the guard, records what the egress proxy refused the page
(egress.py), and observes through its `Camera` (observe.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable

from playwright.async_api import BrowserContext, CDPSession, Page, Request, Response, WebSocket
from playwright.async_api import TimeoutError as PlaywrightTimeout

from datagen.browser.actions import execute
from datagen.browser.egress import REASON_HEADER, EgressProxy
from datagen.browser.failures import CheckNotBoolean, target_closed
from datagen.browser.guard import NameNotResolved, UrlGuard
from datagen.browser.hostile import PageEvents
from datagen.browser.memory import PageMemory
from datagen.browser.navigation import NavigationFailed, navigation_failure
from datagen.browser.observe import Camera, settle_load
from datagen.config import BrowserConfig
from datagen.records import (
    Action,
    Element,
    Goto,
    Observation,
    PageState,
    RejectReason,
    SuccessCheck,
)
from datagen.records.state import element_holds
from datagen.url import BadUrl, split_url

log = logging.getLogger(__name__)
LONG_REQUEST_S = 2.0  # a request open longer than this is a poll or a stream, not loading
CONCURRENT_LOADS = 4  # both cores saturate at ~4 active pages: more loads at once only time out
CHECK_SETTLE_MS = 5000
# Where a page puts messages that may go by themselves (a toast, "Added ✓"): live regions
LIVE = "[aria-live]:not([aria-live=off]), [role=status], [role=alert], [role=log], [role=timer], output"
LIVE_TEXT = (
    f"() => [...document.querySelectorAll('{LIVE}')]"
    ".filter((e) => !e.checkVisibility || e.checkVisibility())"
    ".map((e) => e.innerText).join('\\n')"
)
GONE_JS = (
    "(lines) => !lines.some((l) => (document.body ? document.body.innerText : '').includes(l))"
)
# How Chromium reports a request the egress proxy refused when the page gets no response
PROXY_FAILURES = ("net::ERR_TUNNEL_CONNECTION_FAILED", "net::ERR_FAILED")
# The check's value, awaited when it is a promise (bounded: one that never settles is broken),
# and returned as JSON only when it is a boolean; otherwise its type and a glimpse of it.
CHECK_JS = (
    "async () => { const value = await Promise.race([(async () => (EXPR))(), "
    "new Promise((_, fail) => setTimeout(() => fail(new Error("
    f"'the check did not settle within {CHECK_SETTLE_MS} ms')), {CHECK_SETTLE_MS}))]); "
    "return typeof value === 'boolean' ? value : "
    "(typeof value) + ' ' + String(value).slice(0, 80); }"
)


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
        self.camera = Camera(page, cdp, config, self._loading, memory)
        page.on("request", self._request_started)
        page.on("requestfinished", self._request_ended)
        page.on("requestfailed", self._request_ended)
        if egress is not None:  # the context's: a pop-up's first load too (it is then closed)
            context.on("response", self._proxy_answered)
            context.on("requestfailed", self._proxy_failed)
            page.on("websocket", self._socket_opened)

    def _request_started(self, request: Request) -> None:
        self._requests[id(request)] = time.monotonic()

    def _request_ended(self, request: Request) -> None:
        self._requests.pop(id(request), None)

    def _proxy_answered(self, response: Response) -> None:
        """An http request the egress proxy refused (every connection of the page goes through
        it): recorded with the episode's blocked requests."""
        if response.headers.get(REASON_HEADER) == RejectReason.BLOCKED_URL.value:
            self._proxy_blocked(response.url)

    def _proxy_failed(self, request: Request) -> None:
        """The same for a request that failed without a response: an https one (Chromium only
        says the tunnel failed), or a cross-origin fetch, whose 403 Chromium's CORS check turns
        into `net::ERR_FAILED`. The proxy says whether it refused, and why (a request aborted,
        or refused by the page's own policies, is none of its doing)."""
        if (request.failure or "").endswith(PROXY_FAILURES):
            self._proxy_blocked(request.url)

    def _socket_opened(self, socket: WebSocket) -> None:
        """A WebSocket's tunnel refused: Chromium says only that the handshake failed."""
        socket.on("socketerror", lambda _: self._proxy_blocked(socket.url))

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
        if reason is not None:  # data:, file: and the like: no connection the proxy could vet
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
        return navigation_failure(url, exc, answers, last, began, self.egress)

    async def observe(self) -> Observation:
        """Screenshot and DOM elements of one moment (`Camera.observe`)."""
        return await self.camera.observe()

    async def elements(self) -> tuple[tuple[Element, ...], float, float]:
        """The visible interactive elements and the scroll offset (`Camera.elements`)."""
        return await self.camera.elements()

    async def settled_elements(self) -> tuple[Element, ...]:
        """Wait until the page holds still, then its visible interactive elements, in one
        evaluate (`Camera.settled_elements`)."""
        return await self.camera.settled_elements()

    async def settle(self) -> tuple[float, bool]:
        """Wait until the page holds still: (ms waited, quiet) (`Camera.settle`)."""
        return await self.camera.settle()

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
                reason = None  # the egress proxy answers it 502 (dns_failed): an error page
            if reason is not None:
                return f"blocked: {reason}"
        error = await execute(
            self.page, action, self.config.device_scale_factor, self.config.action_timeout_s
        )
        if self.config.settle_ms:
            await asyncio.sleep(self.config.settle_ms / 1000)
        await settle_load(self.page, self.config.navigation_timeout_s)
        return error

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
            if not value:
                return False
        if check.element is not None:  # the same pure rule as offline: records/state.py
            elements, _, _ = await self.elements()
            return element_holds(check.element, PageState.of(self.page.url, "", elements))
        return True

    async def live_lines(self) -> set[str]:
        """The lines the page's live regions show now (aria-live, role status, alert, log,
        marquee or timer, <output>)."""
        text = await self.page.evaluate(LIVE_TEXT)
        return {line.strip() for line in str(text).splitlines() if line.strip()}

    async def until_gone(self, lines: Iterable[str], within_s: float) -> bool:
        """Wait until none of `lines` is in the body's text, at most `within_s`; were they?"""
        try:
            await self.page.wait_for_function(
                GONE_JS, arg=sorted(lines), timeout=within_s * 1000, polling=100
            )
        except PlaywrightTimeout:
            return False
        return True

    async def state(self) -> PageState:
        """What checks read of the page now: its URL, body text and visible elements."""
        elements, _, _ = await self.elements()
        text = await self.page.evaluate("() => document.body ? document.body.innerText : ''")
        return PageState.of(self.page.url, str(text), elements)

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
