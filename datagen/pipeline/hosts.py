"""Hosts in the pipeline: each episode takes a session on its start URL's host before it opens
a browser session, its page's requests keep the host's pace, and what the host answers
(429/503, failures, a page that loaded) goes back to the run's book (`run.hosts`).

    run_shard ─► HostTurn(task) ─► the host's book (ShardContext.hosts: hostbook.HostBook here,
                 │                  the scheduler's on a cluster)
                 ├─ blocked host / robots.txt cached as disallowing ─► one reject, no session
                 └─ granted ─► the host's pause waited out (a Retry-After) ─► EpisodePool slot
                        ─► run_episode ─► open_start(session): DNS (with the guard) ─►
                        robots.txt (once per host: robots.py) ─► the load's turn ─► start URL
                        ─► "ok" | "failure" to the book
                        every request ─► pace(host) ─► sent;  429/503 ─► "slow" (Retry-After)

The book and what calls it stay Dask-free (`Hosts` protocol, context.py); without a book
(`ShardContext.hosts` None) nothing here waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import time
import uuid
from types import TracebackType
from typing import Any

from playwright.async_api import Request, Response, Route

from datagen.browser.guard import NameNotResolved
from datagen.browser.navigation import NavigationFailed
from datagen.browser.session import Session
from datagen.config.hosts import HostsConfig
from datagen.pipeline.context import Hosts, ShardContext
from datagen.pipeline.hostbook import HostBook
from datagen.pipeline.robots import fetch_robots, robots_allow, robots_detail
from datagen.pipeline.rows import EpisodeOutcome, new_outcome
from datagen.records import RejectReason, TaskSpec
from datagen.url import DEFAULT_PORTS, BadUrl, is_local_host, site_of, split_url

log = logging.getLogger(__name__)
# Start-URL failures that count toward a block: the host, not the task, is at fault.
HOST_FAILURES = (RejectReason.DNS_FAILED, RejectReason.UNREACHABLE)
SLOW_STATUSES = (429, 503)
BLOCKED = "is on the run's blocklist (run.hosts.block_after), first cause: "
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

    async def paused(self, key: str) -> float:
        return self.book.paused(key)

    async def report(
        self, key: str, event: str, detail: str = "", retry_after_s: float = 0
    ) -> None:
        await self.book.report(key, event, detail, retry_after_s)

    async def robots(self, key: str, text: str | None = None) -> str | None:
        return await self.book.robots(key, text)

    async def blocked(self, key: str) -> str | None:
        return self.book.refused(key)

    async def robots_turn(self, key: str) -> str | None:
        state, text = await self.book.robots_turn(key)
        return text if state == "rules" else None

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
            self._end(RejectReason.ROBOTS_DISALLOWED, robots_detail(key, url, text))
            return self
        try:
            cause = await hosts.acquire(key, self.lease)
        except BaseException:
            with contextlib.suppress(Exception):  # a lease granted as it was cancelled
                await asyncio.shield(hosts.release(key, self.lease))
            raise
        if cause is not None:
            self._end(RejectReason.HOST_BLOCKED, f"{key} {BLOCKED}{cause}")
        else:
            self.held = True
            await self._pause(hosts, key)
        return self

    async def _pause(self, hosts: Hosts, key: str) -> None:
        """Wait out the host's pause (a 429/503's Retry-After) before the session opens: no
        browser session or worker slot is held meanwhile, and the start load's own time limit
        never runs while the host asks for quiet. Asked again after each wait: another task's
        429 may have made it longer."""
        while (left := await hosts.paused(key)) > 0:
            await asyncio.sleep(left)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.held and self.ctx.hosts is not None and self.key is not None:
            self.held = False
            with contextlib.suppress(Exception):
                await asyncio.shield(self.ctx.hosts.release(self.key, self.lease))

    def _end(self, reason: RejectReason, detail: str) -> None:
        ctx = self.ctx
        out = new_outcome(ctx.run_id, self.task.id, self.repeat, ctx.host.version)
        out.reject("task", reason, detail)
        self.outcome = out


async def open_start(session: Session, url: str, ctx: ShardContext) -> None:
    """Load the start URL as `session.goto` does, keeping to the host's rules: a name that does
    not resolve fails first (dns_failed, before any request), then robots.txt (fetched once per
    host: robots.py), the start load's turn in the host's pace (waited before the load, so its
    time limit does not run meanwhile), its page's requests paced, and its answer told to the
    book (a failure: DNS, connection, any 5xx; else ok)."""
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
    try:
        if not await _vetted(session, url):
            await session.goto(url)  # the guard refuses it: goto says why, nothing is sent
            return
        if config.respect_robots_txt:
            await _robots(session, url, key, hosts, config)
        await asyncio.sleep(await hosts.pace(key))  # the start load's turn
        await attach(session, hosts, config, paced=True)
        await _not_blocked(hosts, key)  # blocked while this task waited for its turn: no load
        await session.goto(url)
    except NavigationFailed as exc:
        failed = exc.reason is RejectReason.NAVIGATION_FAILED and _status(str(exc)) >= 500
        if exc.reason in HOST_FAILURES or failed:  # not a robots.txt detail naming its 5xx
            await hosts.report(key, "failure", f"{exc.reason.value}: {exc}")
        raise
    await hosts.report(key, "ok")


async def _vetted(session: Session, url: str) -> bool:
    """With the URL guard on: False when it refuses the start URL; NavigationFailed
    (`dns_failed`) when its host name has no address, before anything is sent to it. The
    guard remembers the answer, so the load's own check does not ask DNS again."""
    if session.guard is None:
        return True
    try:
        return await session.guard.check(url, top_level=True) is None
    except BadUrl:
        return False  # goto says so
    except NameNotResolved as exc:
        raise NavigationFailed(f"{exc}: {url[:300]}", RejectReason.DNS_FAILED) from None


async def _not_blocked(hosts: Hosts, key: str) -> None:
    """NavigationFailed (`host_blocked`, a `task` reject) when the host was blocked since this
    task got its session: its session came before the block (`HostTurn`), its load after it.
    Before, with `block_after: 2`, six tasks on a host answering 502 made 4 loads: those
    already holding a session loaded anyway."""
    cause = await hosts.blocked(key)
    if cause is not None:
        raise NavigationFailed(f"{key} {BLOCKED}{cause}", RejectReason.HOST_BLOCKED)


async def _robots(session: Session, url: str, key: str, hosts: Hosts, config: HostsConfig) -> None:
    """The host's robots.txt, fetched (paced) and cached if it is not yet; NavigationFailed
    (`robots_disallowed`) when it disallows the start URL."""
    text = await hosts.robots_turn(key)  # one task fetches it; the others wait for its answer
    if text is None:
        await asyncio.sleep(await hosts.pace(key))  # one request to the host, paced too
        await _not_blocked(hosts, key)
        found = await fetch_robots(session, url, config.robots_timeout_s)
        pause = retry_after(found.retry_after)
        if found.status in SLOW_STATUSES and pause:
            await hosts.report(key, "slow", f"{found.status} (robots.txt)", pause)
        text = await hosts.robots(key, found.text)  # the first fetch's, if two raced
        text = found.text if text is None else text
    if not robots_allow(text, url, config):
        raise NavigationFailed(robots_detail(key, url, text), RejectReason.ROBOTS_DISALLOWED)


async def attach(session: Session, hosts: Hosts, config: HostsConfig, paced: bool = False) -> None:
    """The session's requests keep their hosts' pace; its 429/503 answers slow them down.
    `paced`: the page's first load has had its turn already (open_start waited for it)."""
    pending: set[asyncio.Task[None]] = set()
    turn_taken = [paced]

    async def on_route(route: Route, request: Request) -> None:
        key = host_key(request.url, config)
        if turn_taken and request.is_navigation_request():
            turn_taken.clear()  # the start load: its turn was waited for before goto began
        elif key is not None:
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
