"""A replay's requests, answered from its episode's recording (replay verification).

    verify.py: one ReplayRouter per replay ─► context.route("**/*", handle),
               context.route_web_socket("**/*", socket) ─► `requests` counted by fate

A replay is a sealed experiment: nothing it does reaches a site, unless the operator lets it
(`annotation.verify.live`). Each request the page makes is answered here:

- a safe method (GET, HEAD, OPTIONS) the episode made: its recorded response, the one it got at
  the same point of the episode (after the same state-changing requests); a request the episode
  made only later (after a write this replay has not repeated) is not answered with what that
  write caused. A GET that differs from a recorded one only in a cache-buster or a timestamp
  value is answered with that recording (recording.same_values). Any other GET is refused: its
  URL is kept (`refused_gets`, in the replay's note when it did not reproduce), and a page load
  refused is a divergence (the episode never saw that page);
- a state-changing request (a form's POST, a fetch's PUT or DELETE) is answered only when it is
  the next one of the episode's, in order (same method, URL, body but for volatile values, and
  the site's cookies as the episode's request carried them): the server's state stands for
  what came before it. "Buy now" replayed without "Add to cart" meets a cart the episode never
  saw (a session cookie says nothing of a cart kept on the server): refused, and the replay
  diverged (`diverged` says which request);
- a WebSocket is closed at once (its messages cannot be answered from a recording);
- a host in `live` goes to the network, whatever the method.

What the routes do not see (a shared worker's fetch, a beacon sent as the context closes)
meets the replay context's sealed proxy (browser/seal.py), which refuses it and counts it.
Why a redirect is followed by hand: Chromium does not intercept the hop after a fulfilled 3xx,
it would reach the site; the frame is sent there instead, with the redirect's cookies set first.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin

from playwright.async_api import Request, Route, WebSocketRoute

from datagen.pipeline.recording import (
    REDIRECTS,
    SAFE_METHODS,
    Entry,
    Recording,
    is_live,
    parsed_cookies,
    same_body,
    same_url,
)
from datagen.url import hostname, netloc

log = logging.getLogger(__name__)
REFUSED_GETS_KEPT = 5  # URLs kept for the note: enough to say why, bounded


class ReplayRouter:
    """Answers one replay's requests (module docstring). Use `handle` as a context route."""

    def __init__(self, recording: Recording, live: frozenset[str] = frozenset()) -> None:
        self.recording, self.live = recording, live
        self.state = 0  # the episode's state-changing requests this replay has repeated
        # (fate, kind, method, host) -> requests: fate answered | refused | live
        self.requests: Counter[tuple[str, str, str, str]] = Counter()
        self.diverged: str | None = None  # the first request that made the replay diverge
        self.refused_gets: list[str] = []
        self._served: Counter[tuple[str, str, int]] = Counter()

    def count(self, fate: str, kind: str, method: str, url: str) -> None:
        self.requests[(fate, kind, method, netloc(url))] += 1

    async def handle(self, route: Route, request: Request) -> None:
        method, url, kind = request.method.upper(), request.url, request.resource_type
        if is_live(url, self.live):
            self.count("live", kind, method, url)
            await route.continue_()
            return
        if method in SAFE_METHODS:
            entry = self._safe(method, url)
            if entry is None and request.is_navigation_request() and self.diverged is None:
                self.diverged = f"{method} {url[:200]} (a page the episode never loaded then)"
            elif entry is None and len(self.refused_gets) < REFUSED_GETS_KEPT:
                self.refused_gets.append(url[:200])
        else:
            cookie = await request.header_value("cookie") or ""
            entry = self._write(method, url, request.post_data_buffer or b"", cookie)
            if entry is None and self.diverged is None:
                self.diverged = (
                    f"{method} {url[:200]}: the episode never made that request with the site's "
                    "state as it was (after the same requests, in the same order)"
                )
        if entry is None:
            self.count("refused", kind, method, url)
            await route.abort("blockedbyclient")
            return
        self.count("answered", kind, method, url)
        await self._answer(route, request, entry)

    async def _answer(self, route: Route, request: Request, entry: Entry) -> None:
        location = next((v for k, v in entry.headers.items() if k.lower() == "location"), "")
        if entry.status in REDIRECTS and location and request.is_navigation_request():
            # Playwright's own (route_from_har's): the frame navigates to the target anew
            impl = getattr(route, "_impl_obj", route)
            redirect = getattr(impl, "_redirect_navigation_request", None)
            if redirect is not None:
                await _add_cookies(request, entry.set_cookies())
                await redirect(urljoin(entry.url, location))
                return
        await route.fulfill(status=entry.status, headers=entry.headers, body=entry.content)

    async def socket(self, socket: WebSocketRoute) -> None:
        """A WebSocket of the replay (`context.route_web_socket`): closed, unless live."""
        if is_live(socket.url, self.live):
            self.count("live", "websocket", "WS", socket.url)
            socket.connect_to_server()  # messages pass both ways as they are
            return
        self.count("refused", "websocket", "WS", socket.url)
        await socket.close(code=1008, reason="datagen replay: answered from a recording")

    def _safe(self, method: str, url: str) -> Entry | None:
        """The response the episode got for this request at this point: at the same state if
        it made the request then (the n-th such request the n-th response, the last repeated),
        else at the latest state before; None when it made it only after a write this replay
        has not repeated, or never."""
        entries = self.recording.safe.get((method, url)) or self.recording.similar(method, url)
        here = [e for e in entries if e.state == self.state]
        if not here:
            before = [e for e in entries if e.state < self.state]
            if not before:
                return None
            here = [before[-1]]
        key = (method, here[0].url, here[0].state)
        entry = here[min(self._served[key], len(here) - 1)]
        self._served[key] += 1
        return entry

    def _write(self, method: str, url: str, body: bytes, cookie: str) -> Entry | None:
        """The episode's next state-changing request, if this one repeats it (same method, URL,
        body, and the site's cookies as they were)."""
        writes = self.recording.writes
        if self.state >= len(writes):
            return None
        entry = writes[self.state]
        if (
            entry.method != method
            or not same_url(entry.url, url)
            or not same_body(entry.body, body)
        ):
            return None
        if self.recording.state(entry.cookie) != self.recording.state(cookie):
            return None
        self.state += 1
        return entry


async def _add_cookies(request: Request, lines: Iterable[str]) -> None:
    """Set a recorded redirect's cookies in the request's context (session cookies)."""
    host = hostname(request.url)
    cookies: list[Any] = []
    for line in lines:
        for name, morsel in parsed_cookies(line).items():
            cookies.append(
                {
                    "name": name,
                    "value": morsel.value,
                    "domain": morsel["domain"] or host,
                    "path": morsel["path"] or "/",
                    "httpOnly": bool(morsel["httponly"]),
                    "secure": bool(morsel["secure"]),
                }
            )
    if cookies:
        await request.frame.page.context.add_cookies(cookies)
