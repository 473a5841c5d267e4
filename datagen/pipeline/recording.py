"""An episode's own traffic, recorded, and replays answered from it (replay verification).

    Episode: browser context with Playwright's HAR recording (record_har_path, minimal, bodies
             embedded) ─► <episode>.har when its context closes
    verify.py: Recording.load(har) ─► one ReplayRouter per replay (context.route "**/*")

A replay is an experiment on our side only: nothing that can change a site's state is sent
twice. Each request of a replay is answered by the router:

- a safe method (GET, HEAD, OPTIONS) the episode made: its recorded response, the one it got at
  the same point of the episode (after as many state-changing requests as the replay has sent);
  one the episode never made goes to the network (counted by method and host: `network`);
- any other method (a form's POST, a fetch's PUT or DELETE) is answered only when it repeats one
  the episode made: same method, URL and body, each recorded one answered once, and the same
  state on the server's side: the cookies the site set (Set-Cookie in the recording) as the
  episode's request carried them. "Buy" replayed without "Add to cart" lacks the cart cookie
  the episode's "Buy" carried: the site would have met a state nobody observed, so it is
  aborted and the replay does not reproduce (`diverged` says which request);
- a WebSocket never reaches the site (its messages cannot be answered from a recording, and
  may change state): it is closed at once (counted with the refused requests, `WS host`);
- a host the operator owns and lets replays reach (`annotation.verify.live`) goes to the network
  whatever the method, WebSockets included (counted too).

Why Playwright's HAR recording and a router of our own, not `route_from_har`: the recording is
made by Playwright's driver (no per-request work on the browser loop's Python side: ordinary
episodes pay only the driver's copy of each response). `route_from_har` answers a POST by URL
and body alone, whatever came before it: "Buy" replayed without "Add to cart" got the recorded
"Order placed" page and verification kept "Buy" alone as the task's path. Its redirects are
followed as new navigations too, so the cookies a recorded 303 set were lost. A redirect is
followed here the same way (Chromium does not intercept the hop after a fulfilled 3xx: it would
reach the site), with the redirect's cookies set first.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from playwright.async_api import Request, Route, WebSocketRoute

from datagen.config import PipelineConfig
from datagen.pipeline.rows import EpisodeOutcome
from datagen.records import TaskSpec
from datagen.url import hostname, netloc

log = logging.getLogger(__name__)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Response headers never replayed: the body is already decoded and its length may differ
DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Entry:
    """One recorded request and its response; `state`: the episode's state-changing requests
    sent before it."""

    method: str
    url: str
    body: bytes
    state: int
    status: int
    headers: dict[str, str]
    content: bytes
    cookie: str = ""  # the request's Cookie header

    def set_cookies(self) -> list[str]:
        """The response's Set-Cookie headers."""
        return [
            line
            for name, value in self.headers.items()
            if name.lower() == "set-cookie"
            for line in value.split("\n")
        ]


@dataclass
class Recording:
    """An episode's recorded traffic (safe requests by (method, URL); the others in order)."""

    safe: dict[tuple[str, str], list[Entry]] = field(default_factory=dict)
    writes: list[Entry] = field(default_factory=list)
    site_cookies: frozenset[str] = frozenset()  # names of the cookies the site set

    @classmethod
    def load(cls, path: Path) -> Recording:
        """Read Playwright's HAR file (an empty recording when there is none)."""
        recording = cls()
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))["log"]["entries"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.info("no usable recording at %s: %s", path, exc)
            return recording
        for raw in entries:
            entry = _entry(raw, len(recording.writes))
            if entry is None:
                continue
            if entry.method in SAFE_METHODS:
                recording.safe.setdefault((entry.method, entry.url), []).append(entry)
            else:
                recording.writes.append(entry)
        everything = [*recording.writes, *(e for es in recording.safe.values() for e in es)]
        names = {m for e in everything for line in e.set_cookies() for m in _parsed(line)}
        recording.site_cookies = frozenset(names)
        return recording

    def state(self, cookie_header: str) -> dict[str, str]:
        """The site's own cookies in a Cookie header: what its server's state hangs on."""
        pairs = (part.strip().partition("=") for part in cookie_header.split(";"))
        return {k: v for k, _, v in pairs if k in self.site_cookies}


def _parsed(line: str) -> dict[str, Any]:
    """A Set-Cookie line's cookies (SimpleCookie morsels by name; none when it does not parse)."""
    cookie: SimpleCookie = SimpleCookie()
    with contextlib.suppress(CookieError):
        cookie.load(line)
    return dict(cookie)


def _entry(raw: dict[str, object], state: int) -> Entry | None:
    """A HAR entry as an Entry; None for a request that got no response (aborted, failed)."""
    request, response = raw.get("request"), raw.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        return None
    status = int(response.get("status") or 0)
    if status <= 0:
        return None
    post = request.get("postData") or {}
    body = str(post.get("text") or "").encode() if isinstance(post, dict) else b""
    content = response.get("content") or {}
    text = str(content.get("text") or "") if isinstance(content, dict) else ""
    encoded = isinstance(content, dict) and content.get("encoding") == "base64"
    cookie = next(
        (str(h["value"]) for h in request.get("headers") or [] if h["name"].lower() == "cookie"),
        "",
    )
    headers: dict[str, str] = {}
    for header in response.get("headers") or []:
        name, value = str(header["name"]), str(header["value"])
        if name.lower() in DROPPED_HEADERS:
            continue
        # several Set-Cookie headers are joined by newlines (Playwright's fulfill splits them)
        headers[name] = f"{headers[name]}\n{value}" if name in headers else value
    return Entry(
        method=str(request.get("method", "GET")).upper(),
        url=str(request.get("url", "")),
        body=body,
        state=state,
        status=status,
        headers=headers,
        content=base64.b64decode(text) if encoded else text.encode(),
        cookie=cookie,
    )


def is_live(url: str, live: frozenset[str]) -> bool:
    """Is `url` on a host the operator lets replays reach (by name, or name:port)?"""
    if not live:
        return False
    where = netloc(url)
    return where in live or where.rsplit(":", 1)[0].strip("[]") in live


class ReplayRouter:
    """Answers one replay's requests (module docstring). Use `handle` as a context route."""

    def __init__(self, recording: Recording, live: frozenset[str] = frozenset()) -> None:
        self.recording, self.live = recording, live
        self.state = 0  # the episode's state-changing requests this replay has repeated
        self.network: Counter[str] = Counter()  # "METHOD host" sent to the network
        self.aborted: Counter[str] = Counter()  # "METHOD host" refused
        self.diverged: str | None = None  # the first state-changing request refused
        self._served: Counter[tuple[str, str, int]] = Counter()
        self._used: set[int] = set()  # recorded state-changing requests answered (by index)

    async def handle(self, route: Route, request: Request) -> None:
        method, url = request.method.upper(), request.url
        if is_live(url, self.live):
            self.network[f"{method} {netloc(url)}"] += 1
            await route.continue_()
            return
        if method in SAFE_METHODS:
            entry = self._safe(method, url)
            if entry is None:
                self.network[f"{method} {netloc(url)}"] += 1
                await route.continue_()
                return
        else:
            cookie = await request.header_value("cookie") or ""
            entry = self._write(method, url, request.post_data_buffer or b"", cookie)
            if entry is None:
                self.aborted[f"{method} {netloc(url)}"] += 1
                if self.diverged is None:
                    self.diverged = f"{method} {url[:200]}"
                await route.abort("blockedbyclient")
                return
        await self._answer(route, request, entry)

    async def _answer(self, route: Route, request: Request, entry: Entry) -> None:
        location = next((v for k, v in entry.headers.items() if k.lower() == "location"), "")
        if entry.status in REDIRECTS and location and request.is_navigation_request():
            # Chromium would send the hop after a fulfilled 3xx to the site unintercepted:
            # the frame is sent there instead (as route_from_har does), its cookies set first
            redirect = getattr(route, "_redirect_navigation_request", None)
            if redirect is not None:
                await _add_cookies(request, entry.set_cookies())
                await redirect(urljoin(entry.url, location))
                return
        await route.fulfill(status=entry.status, headers=entry.headers, body=entry.content)

    async def socket(self, socket: WebSocketRoute) -> None:
        """A WebSocket of the replay (`context.route_web_socket`): closed, unless live."""
        if is_live(socket.url, self.live):
            self.network[f"WS {netloc(socket.url)}"] += 1
            socket.connect_to_server()  # messages pass both ways as they are
            return
        self.aborted[f"WS {netloc(socket.url)}"] += 1
        await socket.close(code=1008, reason="datagen replay: answered from a recording")

    def _safe(self, method: str, url: str) -> Entry | None:
        """The response the episode got for this request at this point: at the same state if
        it made the request then (the n-th such request the n-th response, the last repeated),
        else at the latest state before, else its first."""
        entries = self.recording.safe.get((method, url))
        if not entries:
            return None
        here = [e for e in entries if e.state == self.state]
        if not here:
            before = [e for e in entries if e.state < self.state]
            here = [before[-1]] if before else entries[:1]
        key = (method, url, here[0].state)
        entry = here[min(self._served[key], len(here) - 1)]
        self._served[key] += 1
        return entry

    def _write(self, method: str, url: str, body: bytes, cookie: str) -> Entry | None:
        """The episode's state-changing request this one repeats, with the same site state."""
        state = self.recording.state(cookie)
        for i, entry in enumerate(self.recording.writes):
            if i in self._used or (entry.method, entry.url, entry.body) != (method, url, body):
                continue
            if self.recording.state(entry.cookie) != state:
                continue
            self._used.add(i)
            self.state += 1
            return entry
        return None


async def _add_cookies(request: Request, lines: Iterable[str]) -> None:
    """Set a recorded redirect's cookies in the request's context (session cookies)."""
    host = hostname(request.url)
    cookies: list[Any] = []
    for line in lines:
        for name, morsel in _parsed(line).items():
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


def verifiable(task: TaskSpec, config: PipelineConfig) -> bool:
    """Would a success of this task be verified by replays (annotation.verify)? Only such an
    episode records its traffic: no other pays for it."""
    return config.annotation.verify is not None and task.check is not None


def recording_path() -> Path:
    """Where an episode's traffic is recorded: a file of its own in the temporary folder, that
    Playwright writes when the context closes (a process killed before that leaves nothing)."""
    return Path(tempfile.gettempdir()) / f"datagen-episode-{uuid.uuid4().hex}.har"


def discard_recording(out: EpisodeOutcome) -> None:
    """Remove an episode's recorded traffic (once verified, or when there is nothing to)."""
    if out.recording is not None:
        out.recording.unlink(missing_ok=True)
        out.recording = None
