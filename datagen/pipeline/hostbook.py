"""The per-host rules of a run (`run.hosts`), kept in one place: session leases, the request
pace, back-off after 429/503, the blocklist, the robots.txt cache, and the figures.

    pipeline (hosts.py) ─► Hosts protocol (context.py) ─► HostBook   (a shard run alone)
    worker ─► RPC ─► scheduler plugin (runtime/hosts.py) ─► HostBook (one per run, cluster-wide)

Pure asyncio, no Dask and no browser: the same object enforces the limits in a test's process
and, on the scheduler, for every worker of the cluster. Times are the book's own clock
(`time.monotonic`), except a block's end, which outlives the run in `_hosts.json` and so is
wall-clock (`time.time`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from datagen.config.hosts import CAUSE_MAX, HostsConfig

RATE_WINDOW_S = 10.0  # req/s on the dashboard: requests sent in the last 10 s
MIN_RATE = 0.05  # a host answering 429 to everything still gets a request every 20 s
RECOVER_S = 60.0  # after this long without a 429/503, the rate doubles back toward its limit
RETRY_AFTER_CAP_S = 600.0  # a Retry-After beyond this is a host asking for a block, not a pause
ABANDONED_KEPT = 10_000
# A task fetching robots.txt is waited for this much longer than the fetch's own limit (its
# turn in the host's pace comes first); past that, its claim is taken as given up (cancelled).
ROBOTS_CLAIM_MARGIN_S = 30.0


@dataclass
class HostState:
    """One host's figures and limits in a run."""

    rate: float  # requests/s allowed now (the limit, or less after a 429/503)
    sessions: dict[str, str] = field(default_factory=dict)  # lease → owner (a worker)
    peak_sessions: int = 0
    waits: int = 0  # session requests that had to wait for a free session
    wait_s: float = 0.0
    requests: int = 0
    paced_s: float = 0.0  # time requests were held back by the rate
    dropped: int = 0  # sub-resource requests not sent: the host's queue was too long
    recent: deque[float] = field(default_factory=deque)  # when the last requests go out
    next_at: float = 0.0  # the earliest moment the next request may go
    paused_until: float = 0.0  # the end of the last Retry-After the host asked for
    slowed: int = 0  # 429/503 answers seen
    slowed_at: float = -1e9
    streak: int = 0  # failures in a row
    cause: str = ""  # the first failure of the streak (the block's cause)
    blocked_until: float = 0.0  # wall clock
    rejected: int = 0  # tasks ended as host_blocked
    robots: str | None = None  # robots.txt as fetched ("" when none)
    robots_claimed: float = -1e9  # when a task took the turn to fetch robots.txt


class HostBook:
    """The run's hosts. Every method runs on one event loop (the scheduler's, or a test's)."""

    def __init__(self, config: HostsConfig) -> None:
        self.config = config
        self.hosts: dict[str, HostState] = {}
        self._changed: asyncio.Condition | None = None
        self._abandoned: OrderedDict[str, None] = OrderedDict()  # released before granted

    def _host(self, key: str) -> HostState:
        if key not in self.hosts:
            self.hosts[key] = HostState(rate=self.config.max_requests_per_second)
        return self.hosts[key]

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def blocked(self, key: str) -> str | None:
        """The cause of the host's block, while it lasts."""
        host = self.hosts.get(key)
        if host is None or host.blocked_until <= time.time():
            return None
        return host.cause or "failed repeatedly"

    def refused(self, key: str) -> str | None:
        """`blocked`, asked by a task about to load a page of `key` (it holds a session, taken
        before the block began): the cause, and the task counted among the host's
        `host_blocked` rejects; None when no block is in force."""
        cause = self.blocked(key)
        if cause is not None:
            self._host(key).rejected += 1
        return cause

    async def acquire(
        self, key: str, lease: str, owner: str = "", timeout_s: float | None = None
    ) -> tuple[str, str]:
        """A session on `key`: ("granted", ""), ("blocked", cause) with no session held, or
        ("wait", "") when `timeout_s` passed first (the caller asks again)."""
        host, changed = self._host(key), self._condition()
        began = time.monotonic()
        waited = False
        async with changed:
            while True:
                if lease in self._abandoned:  # its asker gave up while this waited
                    self._abandoned.pop(lease)
                    return "wait", ""
                cause = self.blocked(key)
                if cause is not None:
                    host.rejected += 1
                    return "blocked", cause
                if len(host.sessions) < self.config.max_sessions_per_host:
                    host.sessions[lease] = owner
                    host.peak_sessions = max(host.peak_sessions, len(host.sessions))
                    if waited:
                        host.wait_s += time.monotonic() - began
                    return "granted", ""
                if not waited:
                    host.waits += 1
                    waited = True
                left = None if timeout_s is None else timeout_s - (time.monotonic() - began)
                if left is not None and left <= 0:
                    host.wait_s += time.monotonic() - began
                    return "wait", ""
                # woken by a release or a block; a block's end needs no wake-up (checked)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), left)

    async def release(self, key: str, lease: str) -> None:
        """End a session (or give up waiting for it: a later grant of `lease` is refused)."""
        host, changed = self._host(key), self._condition()
        async with changed:
            if host.sessions.pop(lease, None) is None:
                self._abandoned[lease] = None
                while len(self._abandoned) > ABANDONED_KEPT:
                    self._abandoned.popitem(last=False)
            changed.notify_all()

    async def drop_owner(self, owner: str) -> int:
        """Free the sessions of a worker that left (lost with its leases); how many."""
        changed = self._condition()
        dropped = 0
        async with changed:
            for host in self.hosts.values():
                for lease in [k for k, v in host.sessions.items() if v == owner]:
                    del host.sessions[lease]
                    dropped += 1
            changed.notify_all()
        return dropped

    def pace(self, key: str, max_wait_s: float = 0) -> float:
        """Reserve the host's next request moment; seconds the caller waits before sending.
        Requests are spaced 1/rate apart, so no window of the host's traffic goes above it.
        With `max_wait_s` (> 0), a moment further off is not reserved: -1 (a page's polls and
        sub-resources are dropped then, rather than queue without end behind a slow host)."""
        host, now = self._host(key), time.monotonic()
        limit = self.config.max_requests_per_second
        if host.rate < limit and now - host.slowed_at > RECOVER_S:
            host.rate, host.slowed_at = min(limit, host.rate * 2), now
        at = max(now, host.next_at)
        if max_wait_s > 0 and at - now > max_wait_s:
            host.dropped += 1
            return -1.0
        host.next_at = at + 1.0 / host.rate
        host.requests += 1
        host.paced_s += at - now
        host.recent.append(at)
        while host.recent and host.recent[0] < now - RATE_WINDOW_S:
            host.recent.popleft()
        return at - now

    def paused(self, key: str) -> float:
        """Seconds left of the host's pause (the Retry-After of its last 429/503), 0 when none:
        a task of the host waits this long before it opens a browser session."""
        host = self.hosts.get(key)
        return 0.0 if host is None else max(0.0, host.paused_until - time.monotonic())

    async def report(
        self, key: str, event: str, detail: str = "", retry_after_s: float = 0
    ) -> None:
        """What a host answered: "slow" (429/503, with its Retry-After: the host's rate halves
        and it is paused that long), "failure" (DNS, connection, any 5xx: `detail` says
        which), "ok" (a page loaded: the streak ends)."""
        host, now = self._host(key), time.monotonic()
        if event == "slow":
            host.slowed += 1
            host.rate = max(MIN_RATE, host.rate / 2)
            host.slowed_at = now
            pause = min(max(retry_after_s, 0.0), RETRY_AFTER_CAP_S)
            host.next_at = max(host.next_at, now + pause)
            host.paused_until = max(host.paused_until, now + pause)
        elif event == "failure":
            if host.robots is None and host.robots_claimed > -1e9:  # robots.txt's fetcher
                host.robots_claimed = -1e9  # failed for the host: the next task fetches it
                changed = self._condition()
                async with changed:
                    changed.notify_all()
            host.streak += 1
            host.cause = host.cause or detail[:CAUSE_MAX]
            if host.streak >= self.config.block_after and self.blocked(key) is None:
                host.blocked_until = time.time() + self.config.block_ttl_s
                changed = self._condition()
                async with changed:  # the tasks waiting for a session end now
                    changed.notify_all()
        elif event == "ok" and self.blocked(key) is None:
            host.streak, host.cause = 0, ""

    async def robots(self, key: str, text: str | None = None) -> str | None:
        """The host's robots.txt as cached (None: not fetched yet); given `text`, cache it (the
        first fetch's stays) and wake the tasks waiting for it."""
        host = self._host(key)
        if text is not None and host.robots is None:
            host.robots = text
            changed = self._condition()
            async with changed:
                changed.notify_all()
        return host.robots

    async def robots_turn(self, key: str, timeout_s: float | None = None) -> tuple[str, str]:
        """For a task about to load a page of `key`: ("rules", the cached robots.txt), or
        ("fetch", "") when the caller is to fetch it: no other task is (one fetch per host and
        run, however many tasks start at once), or the one that was has given up (a host
        failure reported) or run past ROBOTS_CLAIM_S. Waits while another task fetches;
        ("wait", "") when `timeout_s` passed first (the caller asks again)."""
        host, changed = self._host(key), self._condition()
        began = time.monotonic()
        claim_s = self.config.robots_timeout_s + ROBOTS_CLAIM_MARGIN_S
        async with changed:
            while host.robots is None:
                now = time.monotonic()
                if now - host.robots_claimed > claim_s:
                    host.robots_claimed = now
                    return "fetch", ""
                wait = host.robots_claimed + claim_s - now
                if timeout_s is not None:
                    left = timeout_s - (now - began)
                    if left <= 0:
                        return "wait", ""
                    wait = min(wait, left)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), wait)
            return "rules", host.robots

    def restore(self, blocks: dict[str, dict[str, Any]]) -> None:
        """Blocks of an earlier run (`_hosts.json`) still in force. A block ends no later than
        this run's `block_ttl_s` from now (a file edited to block for ever, or written under a
        longer TTL, does not outlast it); its cause is cut to CAUSE_MAX characters."""
        now = time.time()
        for key, block in blocks.items():
            try:
                until = float(block.get("blocked_until") or 0)
            except (TypeError, ValueError):
                continue
            if not math.isfinite(until) or until <= now:  # NaN compares false: never in force
                continue
            host = self._host(key)
            host.blocked_until = min(until, now + self.config.block_ttl_s)
            host.cause = str(block.get("cause") or "")[:CAUSE_MAX]
            host.streak = self.config.block_after

    def figures(self) -> dict[str, dict[str, Any]]:
        """Per host: sessions now and at most, req/s over the last RATE_WINDOW_S, waits,
        the rate allowed now, 429/503s, the block (until when, why) and its rejects."""
        now, wall = time.monotonic(), time.time()
        out: dict[str, dict[str, Any]] = {}
        for key, host in sorted(self.hosts.items()):
            sent = sum(1 for t in host.recent if now - RATE_WINDOW_S <= t <= now)
            out[key] = {
                "sessions": len(host.sessions),
                "peak_sessions": host.peak_sessions,
                "requests": host.requests,
                "requests_per_s": round(sent / RATE_WINDOW_S, 2),
                "rate_limit": round(host.rate, 3),
                "waits": host.waits,
                "wait_s": round(host.wait_s, 2),
                "paced_s": round(host.paced_s, 2),
                "dropped": host.dropped,
                "slowed": host.slowed,
                "failures_in_a_row": host.streak,
                "blocked": host.blocked_until > wall,
                "blocked_until": round(host.blocked_until, 3) if host.blocked_until else None,
                "cause": host.cause,
                "host_blocked_rejects": host.rejected,
            }
        return out
