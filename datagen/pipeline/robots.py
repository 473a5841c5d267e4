"""robots.txt for the hosts' rules (`run.hosts.respect_robots_txt`): fetched once per host and
run by the first episode of the host, within a time and a byte limit, read as RFC 9309 says.

    open_start (hosts.py) ─► fetch_robots(session, start URL) ─► the text the book caches
                          ─► robots_allow(text, start URL) ─► go on | robots_disallowed

What an answer means (RFC 9309 2.3.1):
- 2xx: its rules, the first ROBOTS_MAX_BYTES of it (2.5: a parsing limit of at least 500 KiB;
  the rest is never downloaded: the fetch is cut there);
- 3xx: followed, up to ROBOTS_REDIRECTS hops (2.3.1.2), beyond that "unavailable";
- 4xx ("unavailable", 2.3.1.3): everything allowed, but 429, which asks the crawler to slow
  down: read as unreachable (as Google's crawler does) and told to the book as a slow answer;
- 5xx, a connection cut or an answer that does not come within `robots_timeout_s`
  ("unreachable", 2.3.1.4): "the crawler MUST assume complete disallow". Cached like any
  answer, for the run (2.4 lets a crawler keep an unreachable host's rules): the host's tasks
  end as robots_disallowed, their detail saying why, without a request more.
- the host never reached (its name does not resolve, the connection refused): no robots.txt
  at all, and the start URL would fail the same way. That is the host's failure, not a rule:
  NavigationFailed with `dns_failed` or `unreachable`, which counts toward `block_after`, and
  nothing cached (a host back within the run is served then).

The fetch is the browser's, on the episode's page before its start URL loads (so the egress
proxy vets it, and the User-Agent and DNS are the page's): an in-page `fetch` of the
robots.txt URL, held by CDP `Fetch` at its response and its body read from a stream up to the
limit, then cancelled. It makes no navigation (no history entry, no error page). CDP's
`Network.loadNetworkResource`, used before, downloads the whole body before it answers and has
no time limit.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib import robotparser

from datagen.browser.egress import REASON_HEADER
from datagen.browser.navigation import NavigationFailed
from datagen.browser.session import Session
from datagen.config.hosts import HostsConfig
from datagen.records import RejectReason

log = logging.getLogger(__name__)
ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309 2.5: at least 500 KiB parsed
ROBOTS_REDIRECTS = 5  # RFC 9309 2.3.1.2: at least five consecutive redirects followed
READ_CHUNK = 64 * 1024
DISALLOW_ALL = "User-agent: *\nDisallow: /\n"
UNREACHABLE = "# datagen: unreachable: "  # the first line of the rules cached for one
# Chromium's network errors (CDP Fetch.ErrorReason) that say the host was never reached
NOT_REACHED = {
    "NameNotResolved": RejectReason.DNS_FAILED,
    "ConnectionRefused": RejectReason.UNREACHABLE,
    "ConnectionFailed": RejectReason.UNREACHABLE,
    "AddressUnreachable": RejectReason.UNREACHABLE,
    "InternetDisconnected": RejectReason.UNREACHABLE,
}
# The page's request: no cookies, no referrer, nothing cached; no-cors, since about:blank is
# of no origin (the body is read through CDP, never by the page). Not awaited: CDP holds it.
FETCH_JS = """url => { fetch(url, {mode: 'no-cors', credentials: 'omit', cache: 'no-store',
  referrerPolicy: 'no-referrer'}).catch(() => {}); return true; }"""


@dataclass(frozen=True)
class Robots:
    """A robots.txt fetch's outcome: the rules to cache, and the status of its last answer
    (0: none) with its Retry-After header (a 429/503 that asks for a pause)."""

    text: str
    status: int = 0
    retry_after: str | None = None


def unreachable(why: str) -> str:
    """The rules cached for a robots.txt that could not be fetched: everything disallowed."""
    return f"{UNREACHABLE}{why}\n{DISALLOW_ALL}"


def robots_url(url: str) -> str:
    """The robots.txt of `url`'s origin."""
    scheme, rest = url.split("://", 1)
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{authority.rsplit('@', 1)[-1]}/robots.txt"  # no user:password@


def robots_agent(config: HostsConfig) -> str:
    """The agent robots.txt rules are read for: the User-Agent's first word, else datagen."""
    if config.user_agent:
        return config.user_agent.split("/", 1)[0].split()[0] or "datagen"
    return "datagen"


def robots_allow(text: str, url: str, config: HostsConfig) -> bool:
    parser = robotparser.RobotFileParser()
    parser.parse(text.splitlines())
    return parser.can_fetch(robots_agent(config), url)


def robots_detail(key: str, url: str, text: str) -> str:
    """A robots_disallowed reject's detail: the rules', or why robots.txt counts as disallowing
    everything (unreachable)."""
    if text.startswith(UNREACHABLE):
        why = text[len(UNREACHABLE) :].split("\n", 1)[0]
        return (
            f"{key}'s robots.txt is unreachable ({why}): RFC 9309 2.3.1.4 reads that as "
            f"disallowing everything, for the run (run.hosts.respect_robots_txt)"
        )
    return f"{key}'s robots.txt disallows {url[:300]} (run.hosts.respect_robots_txt)"


async def fetch_robots(session: Session, url: str, timeout_s: float) -> Robots:
    """The robots.txt of `url`'s host, read as the module docstring says; NavigationFailed
    (`dns_failed`, `unreachable`) when the host was not reached at all."""
    target = robots_url(url)
    paused: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    held: list[str] = []  # the request CDP holds, to cancel if the time runs out
    cdp, listener = session.cdp, paused.put_nowait
    cdp.on("Fetch.requestPaused", listener)
    began = time.monotonic()
    try:
        await cdp.send(
            "Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Response"}]}
        )
        await session.page.evaluate(FETCH_JS, target)
        async with asyncio.timeout(timeout_s):
            return await _answer(session, paused, held, began)
    except TimeoutError:
        return Robots(unreachable(f"no answer within {timeout_s:g} s (run.hosts.robots_timeout_s)"))
    finally:
        cdp.remove_listener("Fetch.requestPaused", listener)
        for request in held:  # a body still coming: cut, so the host sends no more of it
            with contextlib.suppress(Exception):
                await cdp.send(
                    "Fetch.failRequest", {"requestId": request, "errorReason": "Aborted"}
                )
        with contextlib.suppress(Exception):
            await cdp.send("Fetch.disable")


async def _answer(
    session: Session, paused: asyncio.Queue[dict[str, Any]], held: list[str], began: float
) -> Robots:
    """Follow the held robots.txt request's answers (redirects) to its rules."""
    for _ in range(ROBOTS_REDIRECTS + 1):
        event = await paused.get()
        request = event["requestId"]
        held[:] = [request]
        error = event.get("responseErrorReason")
        if error:
            reason = NOT_REACHED.get(error)
            if reason is not None:
                raise NavigationFailed(f"{event['request']['url'][:300]}: net::{error}", reason)
            return Robots(unreachable(f"the fetch failed: {error}"))
        status = int(event.get("responseStatusCode") or 0)
        headers = {h["name"].lower(): h["value"] for h in event.get("responseHeaders") or []}
        proxied = _proxy_refusal(session, event["request"]["url"], headers, began)
        if proxied is not None:
            raise proxied
        if 300 <= status < 400 and headers.get("location"):
            held.clear()
            await session.cdp.send("Fetch.continueRequest", {"requestId": request})
            continue
        if status == 429 or status >= 500:
            return Robots(unreachable(f"HTTP {status}"), status, headers.get("retry-after"))
        if status >= 300:  # 4xx (or a 3xx without a Location): unavailable, all allowed
            return Robots("", status)
        return Robots(await _body(session, request), status)
    return Robots("")  # over ROBOTS_REDIRECTS redirects: 2.3.1.2 lets it count as unavailable


def _proxy_refusal(
    session: Session, url: str, headers: dict[str, str], began: float
) -> NavigationFailed | None:
    """The egress proxy's answer that the host was not reached (its 502 for a name without
    addresses or a refused connection), checked with the proxy itself: a site could send the
    header too."""
    if session.egress is None or REASON_HEADER.lower() not in headers:
        return None
    refusal = session.egress.refusal(url, since=began)
    if refusal is None or refusal.reason not in NOT_REACHED.values():
        return None
    return NavigationFailed(f"{url[:300]}: {refusal.detail}", refusal.reason)


async def _body(session: Session, request: str) -> str:
    """The held response's body, its first ROBOTS_MAX_BYTES (read from a stream: Chromium
    reads from the host only as fast as this does, and the rest is never asked for)."""
    cdp = session.cdp
    stream = (await cdp.send("Fetch.takeResponseBodyAsStream", {"requestId": request}))["stream"]
    data = b""
    try:
        while len(data) < ROBOTS_MAX_BYTES:
            chunk = await cdp.send("IO.read", {"handle": stream, "size": READ_CHUNK})
            piece = chunk.get("data", "")
            data += base64.b64decode(piece) if chunk.get("base64Encoded") else piece.encode()
            if chunk.get("eof"):
                break
    finally:
        with contextlib.suppress(Exception):
            await cdp.send("IO.close", {"handle": stream})
    return data[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
