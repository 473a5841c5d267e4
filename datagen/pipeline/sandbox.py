"""The sealed browser context an episode's replays share, made as new before each of them.

    Replayer.replay ─► ReplayContext.start(router) ─► first: a context whose only way out is
        a SealedProxy (browser/seal.py), every request routed to the replay's ReplayRouter,
        taken from the browser's shelf (an earlier episode's, kept) or opened; later: the
        same context, its page sent to about:blank and its state wiped ─► Session
    Replayer.close ─► ReplayContext.close ─► the page left for about:blank, what the seal
        counted taken, the context back on the shelf (at most KEEP a browser; else closed)

Why one context: a new context costs a renderer process, its start and its teardown (on the
todo app, a wiped context's start took 0.2-0.4 s where a new one took 1.2-2.2 s, on 2 loaded
cores), and verification makes several replays per episode, and a worker verifies episode
after episode: the contexts outlive the episode, on a shelf of the browser's. Why it is as good
as a new one: before each replay (the first of an episode too, on a shelved context), the page
leaves for about:blank (its scripts, timers and workers end; a beacon it sends on the way out
goes past the routes to the seal, refused and counted), then every cookie goes, every origin
the context's replays were answered for, this episode's and earlier ones', has its storage
cleared (local and session storage, IndexedDB, Cache Storage, …), the HTTP cache is emptied,
the tab's history is reset (a replayed Back cannot reach a page of an earlier replay),
`window.name` is blanked, and the next observation may wait as a first one does
(`first_settle_timeout_ms`). The replay's page can only have loaded documents of those origins:
whatever else it asked for was refused. With `annotation.verify.live` hosts a replay reaches
real origins whose storage no recording names: each replay then gets a context of its own, as
before, never shelved. A context a failure went through (a crash, a timeout) is closed, not
reused. A shelved context is not a session in flight (the session limit counts one while an
episode's replays use it); the shelf closes with the browser.

The proxy outlives the context (it is closed after it): what fires at close meets it. An
episode's requests are what its seal counted while the episode held it (and a short GRACE_S
after its page left, for a beacon on the way out).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Protocol
from weakref import WeakKeyDictionary

from playwright.async_api import Request, Route, WebSocketRoute

from datagen.browser.host import BrowserHost
from datagen.browser.seal import SealedProxy
from datagen.browser.session import Session
from datagen.url import origin_text

log = logging.getLogger(__name__)
Requests = Counter[tuple[str, str, str, str]]  # (fate, kind, method, host) -> requests
KEEP = 4  # sealed contexts a browser keeps on its shelf between episodes
LEAVE_MS = 5000  # an episode's page that does not leave within this is closed, not shelved
GRACE_S = 0.05  # after an episode's page left: its beacons reach the seal, counted on it


class Router(Protocol):
    """What answers a replay's requests (router.ReplayRouter)."""

    requests: Requests

    async def handle(self, route: Route, request: Request) -> None: ...

    async def socket(self, socket: WebSocketRoute) -> None: ...


@dataclass(eq=False)
class Sealed:
    """One sealed context: its stack (closes the context, then its proxy), its session, its
    seal, the router its routes answer with now, and every origin its replays were answered
    for (what a wipe clears)."""

    stack: AsyncExitStack
    session: Session
    seal: SealedProxy
    router: Router | None = None
    origins: set[str] = field(default_factory=set)

    async def handle(self, route: Route, request: Request) -> None:
        if self.router is None:  # between episodes nothing asks; refuse what still does
            await route.abort()
            return
        await self.router.handle(route, request)

    async def socket(self, socket: WebSocketRoute) -> None:
        if self.router is None:
            await socket.close()
            return
        await self.router.socket(socket)


class Shelf:
    """A browser's sealed contexts no episode holds now (at most KEEP); closed with it."""

    def __init__(self) -> None:
        self.idle: list[Sealed] = []

    def take(self) -> Sealed | None:
        return self.idle.pop() if self.idle else None

    async def put(self, sealed: Sealed) -> None:
        if len(self.idle) < KEEP:
            self.idle.append(sealed)
        else:
            await _shut(sealed)

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for sealed in idle:
            await _shut(sealed)


_SHELVES: WeakKeyDictionary[BrowserHost, Shelf] = WeakKeyDictionary()


def shelf_of(host: BrowserHost) -> Shelf:
    """The host's shelf (made on first use, closed when the browser closes or restarts)."""
    shelf = _SHELVES.get(host)
    if shelf is None:
        shelf = _SHELVES[host] = Shelf()
        host.on_close.append(shelf.close)
    return shelf


def shelved(host: BrowserHost) -> int:
    """Contexts on the host's shelf now: open in the browser, no session's."""
    shelf = _SHELVES.get(host)
    return len(shelf.idle) if shelf is not None else 0


async def _shut(sealed: Sealed) -> None:
    try:
        await sealed.stack.aclose()
    except Exception:  # a browser already gone: nothing left to close
        log.debug("closing a shelved replay context failed", exc_info=True)


class ReplayContext:
    """The replays' context (module docstring); `requests` counts what they all asked."""

    def __init__(
        self,
        host: BrowserHost,
        live: frozenset[str],
        urls: list[str],
        user_agent: str | None = None,
    ) -> None:
        """`urls`: the start URL and every URL the recording answers (whose origins' storage a
        wipe clears); `user_agent`: the episode's (run.hosts.user_agent)."""
        self.host, self.live, self.user_agent = host, live, user_agent
        self.origins = {origin_text(u) for u in urls if u.startswith(("http:", "https:"))}
        self.requests: Requests = Counter()
        self.opened = 0  # contexts opened: one unless a replay broke one, or `live` is set
        self.reused = 0  # contexts taken from the shelf (an earlier episode's, wiped)
        self._sealed: Sealed | None = None
        self._router: Router | None = None
        self._counts: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
        self._used = False

    @property
    def session(self) -> Session | None:
        return self._sealed.session if self._sealed is not None else None

    async def start(self, router: Router) -> Session:
        """A context as new as a fresh one, its requests answered by `router` from now on."""
        if self._sealed is not None and (self.live or not await self._wiped()):
            await self.drop()
        if self._sealed is None:
            await self._acquire()
        sealed = self._sealed
        assert sealed is not None
        self._retire()
        self._router = sealed.router = router
        self._used = True
        return sealed.session

    async def close(self) -> None:
        """The episode is done with the context: its page leaves (what fires then is counted
        here), and the context goes on the browser's shelf; closed instead with `live` hosts,
        or when leaving failed."""
        sealed = self._sealed
        if sealed is None or self.live or self.host.stopping:
            await self.drop()
            return
        try:
            await sealed.session.page.goto("about:blank", timeout=LEAVE_MS)  # a hung page: closed
            await asyncio.sleep(GRACE_S)
        except Exception:
            await self.drop()
            return
        self._release()
        sealed.origins |= self.origins
        await shelf_of(self.host).put(sealed)

    async def drop(self) -> None:
        """Close the context, then its proxy (a failure went through it, or it is not kept);
        what they counted joins `requests`."""
        sealed = self._sealed
        if sealed is None:
            self._retire()
            return
        try:
            await sealed.stack.aclose()
        finally:
            self._release()

    def _release(self) -> None:
        """The episode lets go of its context: the seal's counts since it took it join
        `requests`, and the session limit counts it no more."""
        sealed, self._sealed, self._used = self._sealed, None, False
        self._retire()
        if sealed is None:
            return
        sealed.router = None
        refused, passed = self._counts
        for fate, now, then in (("refused", sealed.seal.refused, refused),
                                ("live", sealed.seal.passed, passed)):  # fmt: skip
            for key, n in (now - then).items():  # what the routes never saw (workers, beacons)
                method, host = key.split(" ", 1)
                self.requests[(fate, "unrouted", method, host)] += n
        self.host.admission.closed()

    def _retire(self) -> None:
        """The last replay's router is done: its counts join `requests`."""
        if self._router is not None:
            self.requests.update(self._router.requests)
            self._router.requests.clear()
            self._router = None

    def _hold(self, sealed: Sealed) -> None:
        self._sealed = sealed
        self._counts = (Counter(sealed.seal.refused), Counter(sealed.seal.passed))
        self.host.admission.opened()

    async def _acquire(self) -> None:
        """A shelved context, wiped (not with `live` hosts), else a new one."""
        sealed = None if self.live else shelf_of(self.host).take()
        if sealed is not None:
            self._hold(sealed)
            self._used = True  # an earlier episode's: wiped before use
            if await self._wiped(shelved=True):
                self.reused += 1
                return
            await self.drop()
        await self._open()

    async def _open(self) -> None:
        stack = AsyncExitStack()
        try:
            seal = await stack.enter_async_context(SealedProxy(self.live, self.host.guard))
            opened = self.host.session(proxy=seal.settings(), counted=False)
            session = await stack.enter_async_context(opened)
            sealed = Sealed(stack, session, seal)
            await session.context.route("**/*", sealed.handle)  # before the first request
            await session.context.route_web_socket("**/*", sealed.socket)
            session.watch_documents()
            if self.user_agent:  # as the episode's load had it
                agent = {"userAgent": self.user_agent}
                await session.cdp.send("Network.setUserAgentOverride", agent)
        except BaseException:
            await stack.aclose()
            raise
        self._hold(sealed)
        self._used = False
        self.opened += 1

    async def _wiped(self, shelved: bool = False) -> bool:
        """Wipe the used context (module docstring; `shelved`: an earlier episode's, taken
        from the shelf); False when that failed (a new one then)."""
        sealed = self._sealed
        if sealed is None or not self._used:
            return sealed is not None
        session = sealed.session
        try:
            # a shelved context's page left for about:blank as its episode closed, and nothing
            # has run there since (no script, its routes refusing): no second navigation
            if not (shelved and session.page.url == "about:blank"):
                await session.page.goto("about:blank")
            # the page is blank (its scripts, timers and workers gone): what is left to clear
            # is the browser's, and independent, so asked at once rather than one by one (a
            # round trip each to a loaded browser: 0.1-0.3 s)
            wipes: list[Awaitable[object]] = [
                session.page.evaluate("window.name = ''"),
                session.context.clear_cookies(),
                *(
                    session.cdp.send(
                        "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"}
                    )
                    for origin in sorted(self.origins | sealed.origins)
                ),
                session.cdp.send("Network.clearBrowserCache"),
                session.cdp.send("Page.resetNavigationHistory"),
            ]
            if self.user_agent:  # an earlier episode's context: this episode's agent
                agent = {"userAgent": self.user_agent}
                wipes.append(session.cdp.send("Network.setUserAgentOverride", agent))
            done = await asyncio.gather(*wipes, return_exceptions=True)
        except Exception:  # a crashed page, a closed context: never reused
            return False
        if any(isinstance(d, BaseException) for d in done):
            return False
        session.camera.observed = 0  # its next observation is a first one, as on a new page
        return True
