"""Hosts in the pipeline: each episode takes a session on its start URL's host before it opens
a browser session, its page's requests keep the host's pace, and what the host answers
(429/503, failures, a page that loaded) goes back to the run's book (`run.hosts`).

    run_shard ─► HostTurn(task) ─► the host's book (ShardContext.hosts: hostbook.HostBook here,
                 │                  the scheduler's on a cluster)
                 ├─ blocked host / robots.txt cached as disallowing ─► one reject, no session
                 └─ granted ─► EpisodePool slot ─► run_episode ─► open_start(session):
                        robots.txt (once per host) ─► start URL ─► "ok" | "failure" to the book
                        every request ─► pace(host) ─► sent;  429/503 ─► "slow" (Retry-After)

The book and what calls it stay Dask-free (`Hosts` protocol, context.py); without a book
(`ShardContext.hosts` None) nothing here waits.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import logging
import time
import uuid
from types import TracebackType
from typing import Any
from urllib import robotparser

from playwright.async_api import Request, Response, Route

from datagen.browser.guard import DEFAULT_PORTS, BadUrl, split_url
from datagen.browser.navigation import NavigationFailed
from datagen.browser.session import Session
from datagen.config.hosts import HostsConfig
from datagen.config.scope import is_local_host
from datagen.pipeline.context import Hosts, ShardContext
from datagen.pipeline.hostbook import HostBook
from datagen.pipeline.rows import EpisodeOutcome
from datagen.records import RejectReason, TaskSpec
from datagen.scope import site_of

log = logging.getLogger(__name__)
# Start-URL failures that count toward a block: the host, not the task, is at fault.
HOST_FAILURES = (RejectReason.DNS_FAILED, RejectReason.UNREACHABLE)
SLOW_STATUSES = (429, 503)
SUBRESOURCE_MAX_WAIT_S = 2.0  # a page's own requests wait this long for the host's pace at most


class LocalHosts:
    """The `Hosts` protocol on a book in this process (a shard run alone, tests)."""

    def __init__(self, config: HostsConfig) -> None:
        self.book = HostBook(config)

    async def acquire(self, key: str, lease: str) -> str | None:
        state, cause = await self.book.acquire(key, lease)
        return cause if state == "blocked" else None

    async def release(self, key: str, lease: str) -> None:
        await self.book.release(key, lease)

    async def pace(self, key: str, max_wait_s: float = 0) -> float:
        return self.book.pace(key, max_wait_s)

    async def report(
        self, key: str, event: str, detail: str = "", retry_after_s: float = 0
    ) -> None:
        await self.book.report(key, event, detail, retry_after_s)

    async def robots(self, key: str, text: str | None = None) -> str | None:
        return self.book.robots(key, text)

    def figures(self) -> dict[str, dict[str, Any]]:
        return self.book.figures()


def host_key(url: str, config: HostsConfig, own: str = "") -> str | None:
    """The host a URL counts against: its registrable domain, or host:port for an IP or
    one-label host. None: not limited (not http(s), `exempt`, or the bundled sites' `own`
    origin)."""
    try:
        scheme, host, port = split_url(url)
    except BadUrl:
        return None
    if scheme not in DEFAULT_PORTS or not host:
        return None
    host = host.lower().strip("[]").rstrip(".")
    port = port or DEFAULT_PORTS[scheme]
    if host in config.exempt or (own and own == f"{host}:{port}"):
        return None
    return f"{host}:{port}" if is_local_host(host) else site_of(host)


def retry_after(value: str | None) -> float:
    """Seconds a Retry-After header asks for (delay-seconds or an HTTP date); 0 when absent."""
    if not value:
        return 0.0
    value = value.strip()
    if value.isdigit():
        return float(value)
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    return 0.0


def robots_agent(config: HostsConfig) -> str:
    """The agent robots.txt rules are read for: the User-Agent's first word, else datagen."""
    if config.user_agent:
        return config.user_agent.split("/", 1)[0].split()[0] or "datagen"
    return "datagen"


def robots_allow(text: str, url: str, config: HostsConfig) -> bool:
    parser = robotparser.RobotFileParser()
    parser.parse(text.splitlines())
    return parser.can_fetch(robots_agent(config), url)


def _own_origin(task: TaskSpec, ctx: ShardContext) -> str:
    """The bundled sites' host:port, when the task is one of them (their server is ours)."""
    resolved = ctx.resolve_url(task.start_url)
    if resolved == task.start_url:
        return ""
    try:
        scheme, host, port = split_url(resolved)
    except BadUrl:
        return ""
    return f"{host}:{port or DEFAULT_PORTS.get(scheme, 80)}"


class HostTurn:
    """One task's turn on its host: `async with HostTurn(...) as turn`. `turn.outcome` is set
    on entry when the task ends before any session (a blocked host, robots.txt); else the
    caller runs the episode inside and sets it. The host's session is held until exit."""

    def __init__(self, task: TaskSpec, repeat: int, ctx: ShardContext) -> None:
        self.task, self.repeat, self.ctx = task, repeat, ctx
        self.outcome: EpisodeOutcome | None = None
        config = ctx.config.run.hosts
        self.key = host_key(ctx.resolve_url(task.start_url), config, _own_origin(task, ctx))
        self.lease = uuid.uuid4().hex
        self.held = False

    async def __aenter__(self) -> HostTurn:
        hosts, key = self.ctx.hosts, self.key
        if hosts is None or key is None:
            return self
        text = await hosts.robots(key) if self.ctx.config.run.hosts.respect_robots_txt else None
        url = self.ctx.resolve_url(self.task.start_url)
        if text is not None and not robots_allow(text, url, self.ctx.config.run.hosts):
            self._end(RejectReason.ROBOTS_DISALLOWED, robots_detail(key, url))
            return self
        try:
            cause = await hosts.acquire(key, self.lease)
        except BaseException:
            with contextlib.suppress(Exception):  # a lease granted as it was cancelled
                await asyncio.shield(hosts.release(key, self.lease))
            raise
        if cause is not None:
            detail = f"{key} is on the run's blocklist (run.hosts.block_after), first cause: "
            self._end(RejectReason.HOST_BLOCKED, detail + cause)
        else:
            self.held = True
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.held and self.ctx.hosts is not None and self.key is not None:
            self.held = False
            with contextlib.suppress(Exception):
                await asyncio.shield(self.ctx.hosts.release(self.key, self.lease))

    def _end(self, reason: RejectReason, detail: str) -> None:
        from datagen.pipeline.episode import Episode  # episode.py imports this module

        out = Episode(self.task, self.repeat, self.ctx).out
        out.reject("task", reason, detail)
        self.outcome = out


def robots_detail(key: str, url: str) -> str:
    return f"{key}'s robots.txt disallows {url[:300]} (run.hosts.respect_robots_txt)"


async def open_start(session: Session, url: str, ctx: ShardContext) -> None:
    """Load the start URL as `session.goto` does, keeping to the host's rules: its pace on
    every request, robots.txt (fetched once per host), and its answer told to the book."""
    config, hosts = ctx.config.run.hosts, ctx.hosts
    key = host_key(url, config)
    if hosts is None:
        await session.goto(url)
        return
    if config.user_agent:
        await session.cdp.send("Network.setUserAgentOverride", {"userAgent": config.user_agent})
    if key is None:  # an exempt start (loopback, the bundled sites): no route on its requests
        await session.goto(url)
        return
    await attach(session, hosts, config)
    if config.respect_robots_txt:
        text = await hosts.robots(key)
        if text is None:
            await asyncio.sleep(await hosts.pace(key))  # one request to the host, paced too
            text = await fetch_robots(session, url)
            await hosts.robots(key, text)
        if not robots_allow(text, url, config):
            raise NavigationFailed(robots_detail(key, url), RejectReason.ROBOTS_DISALLOWED)
    try:
        await session.goto(url)
    except NavigationFailed as exc:
        status = _status(str(exc))
        if exc.reason in HOST_FAILURES or (status >= 500 and status not in SLOW_STATUSES):
            await hosts.report(key, "failure", f"{exc.reason.value}: {exc}")
        raise
    await hosts.report(key, "ok")


async def fetch_robots(session: Session, url: str) -> str:
    """The host's /robots.txt, fetched by the browser's network stack for the episode's page
    (CDP `Network.loadNetworkResource`: no navigation, so no history entry and no error page):
    the text when 2xx, "" (all allowed) for a 4xx or a failed fetch, "Disallow: /" for a 5xx
    (RFC 9309 2.3.1.4: an unreachable robots.txt disallows everything)."""
    scheme, rest = url.split("://", 1)
    robots = f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]}/robots.txt"
    try:
        tree = await session.cdp.send("Page.getFrameTree")
        options = {"disableCache": False, "includeCredentials": False}
        args = {"frameId": tree["frameTree"]["frame"]["id"], "url": robots, "options": options}
        found = (await session.cdp.send("Network.loadNetworkResource", args))["resource"]
        status = int(found.get("httpStatusCode") or 0)
        if status >= 500 and status not in SLOW_STATUSES:
            return "User-agent: *\nDisallow: /\n"
        if not found.get("success") or not found.get("stream"):
            return ""
        return await _read_stream(session, found["stream"])
    except Exception as exc:  # the start URL's own load says what is wrong with the host
        log.debug("robots.txt of %s not fetched: %s", url[:200], exc)
        return ""


async def _read_stream(session: Session, handle: str, limit: int = 512 * 1024) -> str:
    """A CDP IO stream's text, up to `limit` bytes (RFC 9309 asks crawlers to read 500 KiB)."""
    data = b""
    try:
        while len(data) < limit:
            chunk = await session.cdp.send("IO.read", {"handle": handle})
            piece = chunk.get("data", "")
            data += base64.b64decode(piece) if chunk.get("base64Encoded") else piece.encode()
            if chunk.get("eof"):
                break
    finally:
        with contextlib.suppress(Exception):
            await session.cdp.send("IO.close", {"handle": handle})
    return data[:limit].decode("utf-8", "replace")


async def attach(session: Session, hosts: Hosts, config: HostsConfig) -> None:
    """The session's requests keep their hosts' pace; its 429/503 answers slow them down."""
    pending: set[asyncio.Task[None]] = set()

    async def on_route(route: Route, request: Request) -> None:
        key = host_key(request.url, config)
        if key is not None:
            # A page load waits its turn however long; a poll or sub-resource only so long.
            bound = 0 if request.is_navigation_request() else SUBRESOURCE_MAX_WAIT_S
            wait = await hosts.pace(key, bound)
            if wait < 0:
                await route.abort("timedout")
                return
            await asyncio.sleep(wait)
        await route.continue_()

    def on_response(response: Response) -> None:
        key = host_key(response.url, config)
        if key is None or response.status not in SLOW_STATUSES:
            return
        after = retry_after(response.headers.get("retry-after"))
        if response.status == 503 and not after:
            return  # a 503 without Retry-After is a failure, told by the start URL's load
        task = asyncio.ensure_future(hosts.report(key, "slow", str(response.status), after))
        pending.add(task)
        task.add_done_callback(pending.discard)

    await session.context.route("**/*", on_route)
    session.context.on("response", on_response)


def _status(detail: str) -> int:
    """The HTTP status a NavigationFailed names ("…: HTTP 502"), 0 when none."""
    _, sep, tail = detail.rpartition("HTTP ")
    digits = tail[:3]
    return int(digits) if sep and digits.isdigit() else 0
