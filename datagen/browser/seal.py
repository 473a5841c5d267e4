"""A replay's only way out: a proxy of its own that refuses every host but the live ones.

    verify.py ─► async with SealedProxy(live, host.guard) as seal ─► host.session(proxy=seal.url)
              ─► every connection of that context (page, workers, beacons, prefetch, pings,
                 WebSockets) comes here ─► refused and counted (`refused`), or, for a host in
                 `annotation.verify.live`, vetted by the browser's guard and connected

Routes (pipeline/router.py) answer the page's requests from the episode's recording before any
connection is made; what they do not see reaches this proxy: a shared worker's fetch, a beacon
sent while the context closes, a prefetch. Counting here makes "nothing left" a measurement,
not a hope. Chromium sends loopback through it too (`<-loopback>`), so a site on 127.0.0.1 is
sealed like any other. The proxy is closed only after its context: nothing fires past it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from types import TracebackType

from datagen.browser.egress import EgressProxy
from datagen.browser.guard import IpAddress, UrlGuard

SEALED = "sealed replay: not in annotation.verify.live"


class SealedGuard:
    """Lets through only `live` hosts (name, or name:port), vetted by `guard` when there is one."""

    def __init__(self, live: frozenset[str], guard: UrlGuard | None) -> None:
        self.live, self.guard = live, guard

    async def vet(self, host: str, port: int) -> tuple[str | None, list[IpAddress]]:
        host = host.lower().strip("[]")
        if host not in self.live and f"{host}:{port}" not in self.live:
            return SEALED, []
        if self.guard is None:
            return None, []  # no URL guard in this run: dialled by name
        return await self.guard.vet(host, port)


class SealedProxy(EgressProxy):
    """The seal of one replay context; `refused` and `passed` by 'METHOD host:port'."""

    def __init__(self, live: frozenset[str], guard: UrlGuard | None) -> None:
        super().__init__(SealedGuard(live, guard))
        self.refused: Counter[str] = Counter()
        self.passed: Counter[str] = Counter()

    async def _open(
        self, host: str, port: int, shown: str, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        upstream = await super()._open(host, port, shown, writer)
        method = shown.split(" ", 1)[0]  # CONNECT (https, ws, wss) or the method of a plain GET
        where = f"{host.lower().strip('[]')}:{port}"
        (self.refused if upstream is None else self.passed)[f"{method} {where}"] += 1
        return upstream

    def settings(self) -> dict[str, str]:
        """Playwright's per-context `proxy`: every connection here, loopback included."""
        return {"server": self.url, "bypass": "<-loopback>"}

    async def __aenter__(self) -> SealedProxy:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
