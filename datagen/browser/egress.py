"""The egress proxy: every connection Chromium makes goes through here and is vetted by the
URL guard on the address actually dialled.

This is the guard of everything a page loads: frames, fetch/XHR, images, WebSockets, redirect
hops. Route interception (Playwright's `route`) sees requests, not connections: a redirect hop
of a sub-request is followed inside Chromium's network stack without reaching a route handler,
and a name may resolve differently for the browser than for a check made before. So the browser
is launched with this proxy (Playwright forces loopback through it as well), and the proxy
resolves each host once, refuses non-public addresses not in the allow list, and connects to
the address it vetted. Until issue 26 a route handler vetted every request as well; it saw
nothing the proxy does not (Chromium itself refuses web pages `file:`, `chrome:` and top-level
`data:` loads; the session vets the URLs it is told to load), and it and its WebSocket twin
cost 6.7 ms of CPU a step (`bench/browser_loop.py`, 10-step episodes).

    Chromium ─► CONNECT host:port (https, ws, wss) ─► vet ─► tunnel to the vetted address
             ─► GET http://host:port/path      ─► vet ─► forward, one request per connection

What it cannot do it answers itself, and remembers per host:port (`refusal`), with the reject
reason a start page would get: 403 for an address the guard refuses (`blocked_url`), 502 for
a name without addresses (`dns_failed`) or a host that does not take the connection
(`unreachable`), 400 for a target that does not parse (`bad_url`). Chromium shows a refused
CONNECT only as ERR_TUNNEL_CONNECTION_FAILED; the session asks the proxy why. Its own answers
carry the reason in `X-Datagen-Egress`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Protocol

from datagen.browser.guard import IpAddress, NameNotResolved
from datagen.records import RejectReason
from datagen.url import DEFAULT_PORTS, BadUrl, split_url

log = logging.getLogger(__name__)
HEADER_LIMIT = 64 * 1024
REASON_HEADER = "x-datagen-egress"  # on the proxy's own answers: the reject reason
REFUSALS_KEPT = 200
STATUS = {RejectReason.BLOCKED_URL: "403 Forbidden", RejectReason.BAD_URL: "400 Bad Request"}


class Vetter(Protocol):
    """What the proxy asks before it connects (UrlGuard; a replay's seal, browser/seal.py)."""

    async def vet(self, host: str, port: int) -> tuple[str | None, list[IpAddress]]: ...


@dataclass(frozen=True)
class Refusal:
    """Why the proxy did not connect a host:port, and when."""

    reason: RejectReason
    detail: str
    at: float  # time.monotonic()


class EgressProxy:
    """An HTTP proxy on 127.0.0.1 that enforces a UrlGuard. Start and stop on one loop."""

    def __init__(self, guard: Vetter) -> None:
        self.guard = guard
        self.blocked: deque[str] = deque(maxlen=200)
        self.blocked_total = 0
        self._refusals: OrderedDict[tuple[str, int], Refusal] = OrderedDict()
        self._server: asyncio.Server | None = None

    def refusal(self, url: str, since: float) -> Refusal | None:
        """Why the proxy last refused `url`'s host:port, if it did at or after `since`."""
        try:
            scheme, host, port = split_url(url)
        except BadUrl:
            return None
        found = self._refusals.get((host, port or DEFAULT_PORTS.get(scheme, 80)))
        return found if found is not None and found.at >= since else None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0, limit=HEADER_LIMIT)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            if method == "CONNECT":
                await self._tunnel(target, reader, writer)
            else:
                await self._forward(method, target, head, reader, writer)
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ConnectionError,
            ValueError,
        ):
            pass
        finally:
            writer.close()

    async def _open(
        self, host: str, port: int, shown: str, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        host = host.lower().strip("[]")
        try:
            reason, addresses = await self.guard.vet(host, port)
        except NameNotResolved as exc:
            await self._refuse(writer, host, port, RejectReason.DNS_FAILED, str(exc))
            return None
        if reason is not None:
            self.blocked_total += 1
            self.blocked.append(f"{reason}: {shown}")
            await self._refuse(writer, host, port, RejectReason.BLOCKED_URL, reason)
            return None
        try:
            # by name only for a host the allow list names (the guard found no address for it)
            return await asyncio.open_connection(str(addresses[0]) if addresses else host, port)
        except socket.gaierror:
            detail = f"cannot resolve {host}"
            await self._refuse(writer, host, port, RejectReason.DNS_FAILED, detail)
            return None
        except OSError as exc:
            why = os.strerror(exc.errno) if exc.errno else str(exc)  # "Connection refused"
            detail = f"cannot connect to {host}:{port}: {why}"
            await self._refuse(writer, host, port, RejectReason.UNREACHABLE, detail)
            return None

    async def _refuse(
        self,
        writer: asyncio.StreamWriter,
        host: str,
        port: int,
        reason: RejectReason,
        detail: str,
    ) -> None:
        """Answer in the proxy's name, and remember why for the session that asks."""
        self._refusals[(host, port)] = Refusal(reason, detail, time.monotonic())
        self._refusals.move_to_end((host, port))
        while len(self._refusals) > REFUSALS_KEPT:
            self._refusals.popitem(last=False)
        await _answer(writer, reason, detail)

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            host, port = _authority(target, None)
        except BadUrl as exc:
            await _answer(writer, RejectReason.BAD_URL, str(exc))
            return
        upstream = await self._open(host, port, f"CONNECT {target}", writer)
        if upstream is None:
            return
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        await _pipe_both(reader, writer, *upstream)

    async def _forward(
        self,
        method: str,
        target: str,
        head: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        if not target.startswith("http://"):
            raise ValueError("not a proxy request")
        authority, _, path = target[len("http://") :].partition("/")
        try:
            host, port = _authority(authority, 80)
        except BadUrl as exc:
            await _answer(writer, RejectReason.BAD_URL, str(exc))
            return
        upstream = await self._open(host, port, f"{method} {target}", writer)
        if upstream is None:
            return
        up_reader, up_writer = upstream
        lines = head.decode("latin-1").split("\r\n")
        kept = [
            line
            for line in lines[1:]
            if line
            and not line.lower().startswith(("connection:", "proxy-connection:", "keep-alive:"))
        ]
        # One request per connection: Chromium may send the next request on a kept-alive proxy
        # connection to another host, which a plain pipe would deliver to the wrong server.
        request = [f"{method} /{path} HTTP/1.1", *kept, "Connection: close", "", ""]
        up_writer.write("\r\n".join(request).encode("latin-1"))
        await _pipe_both(reader, writer, up_reader, up_writer)


def _authority(authority: str, default_port: int | None) -> tuple[str, int]:
    """host and port of `host[:port]` or `[v6][:port]` (userinfo dropped); `BadUrl` when it does
    not parse, or names no port where one is needed (CONNECT)."""
    _, host, port = split_url(f"http://{authority}")
    if not host or (port is None and default_port is None):
        raise BadUrl(f"cannot parse the proxy target {authority[:300]!r}")
    return host, port if port is not None else default_port or 80


async def _answer(writer: asyncio.StreamWriter, reason: RejectReason, detail: str) -> None:
    """The proxy's own answer: its status, and the reject reason in `X-Datagen-Egress`."""
    status = STATUS.get(reason, "502 Bad Gateway")
    body = f"datagen egress proxy: {detail}".encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\n{REASON_HEADER}: {reason.value}"
        f"\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode("latin-1") + body)
    await writer.drain()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            sink.close()


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
