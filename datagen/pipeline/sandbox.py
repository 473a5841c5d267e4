"""The sealed browser context an episode's replays share, made as new before each of them.

    Replayer.replay ─► ReplayContext.start(router) ─► first: a context whose only way out is
        a SealedProxy (browser/seal.py), every request routed to the replay's ReplayRouter;
        later: the same context, its page sent to about:blank and its state wiped ─► Session

Why one context: a new context costs a renderer process, its start and its teardown (on the
todo app, a wiped context's start took 0.3-0.6 s where a new one took 1-2.5 s, on 2 loaded
cores), and verification makes several replays per episode. Why it is as good as a new one:
before each replay after the first, the page leaves for about:blank (its scripts, timers and
workers end; a beacon it sends on the way out goes past the routes to the seal, refused and
counted), then every cookie goes, every origin the episode's recording answered for has its
storage cleared (local and session storage, IndexedDB, Cache Storage, …), the HTTP cache is
emptied, the tab's history is reset (a replayed Back cannot reach a page of an earlier replay),
`window.name` is blanked, and the next observation may wait as a first one does
(`first_settle_timeout_ms`). The replay's page can only have loaded documents of those origins:
whatever else it asked for was refused. With `annotation.verify.live` hosts a replay reaches
real origins whose storage the recording does not name: each replay then gets a context of its
own, as before. A context a failure went through (a crash, a timeout) is closed, not reused.

The proxy outlives the context (it is closed after it): what fires at close meets it.
"""

from __future__ import annotations

from collections import Counter
from contextlib import AsyncExitStack
from typing import Protocol

from playwright.async_api import Request, Route, WebSocketRoute

from datagen.browser.host import BrowserHost
from datagen.browser.seal import SealedProxy
from datagen.browser.session import Session
from datagen.url import origin_text

Requests = Counter[tuple[str, str, str, str]]  # (fate, kind, method, host) -> requests


class Router(Protocol):
    """What answers a replay's requests (router.ReplayRouter)."""

    requests: Requests

    async def handle(self, route: Route, request: Request) -> None: ...

    async def socket(self, socket: WebSocketRoute) -> None: ...


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
        self.origins = sorted({origin_text(u) for u in urls if u.startswith(("http:", "https:"))})
        self.requests: Requests = Counter()
        self.session: Session | None = None
        self.opened = 0  # contexts opened: one unless a replay broke one, or `live` is set
        self._router: Router | None = None
        self._seal: SealedProxy | None = None
        self._stack: AsyncExitStack | None = None
        self._used = False

    async def start(self, router: Router) -> Session:
        """A context as new as a fresh one, its requests answered by `router` from now on."""
        if self.session is not None and (self.live or not await self._wiped()):
            await self.close()
        if self.session is None:
            await self._open()
        assert self.session is not None
        self._retire()
        self._router, self._used = router, True
        return self.session

    async def close(self) -> None:
        """The context, then its proxy; what they counted joins `requests`."""
        stack, self._stack, self.session, self._used = self._stack, None, None, False
        try:
            if stack is not None:
                await stack.aclose()
        finally:
            self._retire()
            if self._seal is not None:  # what the routes never saw (workers, beacons)
                for key, n in self._seal.refused.items():
                    method, host = key.split(" ", 1)
                    self.requests[("refused", "unrouted", method, host)] += n
                for key, n in self._seal.passed.items():
                    method, host = key.split(" ", 1)
                    self.requests[("live", "unrouted", method, host)] += n
                self._seal = None

    def _retire(self) -> None:
        """The last replay's router is done: its counts join `requests`."""
        if self._router is not None:
            self.requests.update(self._router.requests)
            self._router.requests.clear()

    async def _open(self) -> None:
        stack = AsyncExitStack()
        try:
            seal = await stack.enter_async_context(SealedProxy(self.live, self.host.guard))
            self._seal = seal
            session = await stack.enter_async_context(self.host.session(proxy=seal.settings()))
            await session.context.route("**/*", self._handle)  # before the first request
            await session.context.route_web_socket("**/*", self._socket)
            session.watch_documents()
            if self.user_agent:  # as the episode's load had it
                agent = {"userAgent": self.user_agent}
                await session.cdp.send("Network.setUserAgentOverride", agent)
        except BaseException:
            await stack.aclose()
            raise
        self._stack, self.session, self._used = stack, session, False
        self.opened += 1

    async def _wiped(self) -> bool:
        """Wipe the used context (module docstring); False when that failed (a new one then)."""
        session = self.session
        if session is None or not self._used:
            return session is not None
        try:
            await session.page.goto("about:blank")
            await session.page.evaluate("window.name = ''")
            await session.context.clear_cookies()
            for origin in self.origins:
                wipe = {"origin": origin, "storageTypes": "all"}
                await session.cdp.send("Storage.clearDataForOrigin", wipe)
            await session.cdp.send("Network.clearBrowserCache")
            await session.cdp.send("Page.resetNavigationHistory")
        except Exception:  # a crashed page, a closed context: never reused
            return False
        session.camera.observed = 0  # its next observation is a first one, as on a new page
        return True

    async def _handle(self, route: Route, request: Request) -> None:
        assert self._router is not None  # set before the first navigation
        await self._router.handle(route, request)

    async def _socket(self, socket: WebSocketRoute) -> None:
        assert self._router is not None
        await self._router.socket(socket)
