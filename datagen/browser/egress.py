"""The egress proxy: every connection Chromium makes goes through here and is vetted by the
URL guard on the address actually dialled.

Route interception sees requests, not connections: a redirect hop of a sub-request is
followed inside Chromium's network stack without reaching a route handler (seen in the
security tests), and a name may resolve differently for the browser than for a check made
before. So the browser is launched with this proxy (Playwright forces loopback through it as
well), and the proxy resolves each host once, refuses non-public addresses not in the allow
list, and connects to the address it vetted.

    Chromium ─► CONNECT host:port (https, wss) ─► vet ─► tunnel to the vetted address
             ─► GET http://host:port/path      ─► vet ─► forward, one request per connection
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from datagen.browser.guard import UrlGuard

log = logging.getLogger(__name__)
HEADER_LIMIT = 64 * 1024
FORBIDDEN = b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 33\r\n\r\nblocked by datagen's egress guard"


class EgressProxy:
    """An HTTP proxy on 127.0.0.1 that enforces a UrlGuard. Start and stop on one loop."""

    def __init__(self, guard: UrlGuard) -> None:
        self.guard = guard
        self.blocked: deque[str] = deque(maxlen=200)
        self.blocked_total = 0
        self._server: asyncio.Server | None = None

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
        reason, addresses = await self.guard.vet(host, port)
        if reason is not None:
            self.blocked_total += 1
            self.blocked.append(f"{reason}: {shown}")
            writer.write(FORBIDDEN)
            await writer.drain()
            return None
        try:
            return await asyncio.open_connection(str(addresses[0]) if addresses else host, port)
        except OSError:
            writer.write(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            await writer.drain()
            return None

    async def _tunnel(
        self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, _, port = target.rpartition(":")
        upstream = await self._open(host, int(port), f"CONNECT {target}", writer)
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
        host, _, port = (
            authority.rpartition(":")
            if authority.rpartition(":")[2].isdigit()
            else (authority, "", "80")
        )
        upstream = await self._open(host, int(port), target, writer)
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
