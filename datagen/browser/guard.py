"""The URL guard: what a browser of ours may load.

Task lists come from users and the open web, and a page can point the browser anywhere: at
the cluster's own services, at the cloud metadata endpoint, at local files. By default the
guard blocks, for top-level navigations and for every sub-request (frames, fetch/XHR, images,
redirect hops, WebSockets):

- schemes other than http(s)/ws(s) — `file:`, `javascript:`, `chrome:`, … — and `data:` as a
  top-level navigation (a data: image inside a page is fine);
- any address that is not globally routable: loopback, private, link-local (169.254.169.254,
  the metadata endpoint), carrier-grade NAT, multicast, reserved, IPv4-mapped forms of those;
  host names are resolved first, and blocked if any address they resolve to is.

`allow` entries open what a pipeline needs: `host`, `host:port`, or a CIDR (`10.0.0.0/8`).
The bundled sites are served on loopback and allowed through this same list. `localhost`,
`127.0.0.1` and `::1` name one machine: an entry with one of them covers the others.

A name that does not resolve is no decision of the guard's: `check` and `vet` raise
`NameNotResolved`, and callers report it as a DNS failure (`dns_failed`), never as a block.

Known limit: the browser resolves names itself after our check, so a DNS answer that changes
between the two (rebinding) is not caught here; run untrusted task lists on workers whose
network cannot reach internal services.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

WEB_SCHEMES = {"http", "https", "ws", "wss"}
HARMLESS = {"about:blank", "about:srcdoc"}
DNS_TTL_S = 60.0

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")  # one machine, however it is written

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class NameNotResolved(Exception):
    """DNS has no address for the host: the network's answer, not the guard's refusal."""


@dataclass
class UrlGuard:
    """Decides per URL; remembers DNS answers for a minute."""

    allow: list[str] = field(default_factory=list)
    _hosts: set[str] = field(default_factory=set, init=False)
    _host_ports: set[tuple[str, int]] = field(default_factory=set, init=False)
    _networks: list[Network] = field(default_factory=list, init=False)
    _dns: dict[str, tuple[float, list[IpAddress]]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for entry in self.allow:
            self.permit(entry)

    def permit(self, entry: str) -> None:
        """Allow `host`, `host:port` or a CIDR network (localhost and loopback: all its names)."""
        entry = entry.strip().lower()
        try:
            network = ipaddress.ip_network(entry.strip("[]"), strict=False)
        except ValueError:
            pass
        else:
            self._networks.append(network)
            if any(ipaddress.ip_address(name) in network for name in LOOPBACK_NAMES[1:]):
                self._hosts.update(LOOPBACK_NAMES)
            return
        host, sep, port = entry.rpartition(":")
        if sep and port.isdigit() and (host.startswith("[") or ":" not in host):
            for alias in _aliases(host.strip("[]")):  # host:port or [v6]:port
                self._host_ports.add((alias, int(port)))
        else:
            self._hosts.update(_aliases(entry.strip("[]")))

    async def check(self, url: str, top_level: bool) -> str | None:
        """None when the URL may load, else the reason it may not; `NameNotResolved` when its
        host has no address (nothing to judge)."""
        if url in HARMLESS:
            return None
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "data":
            return "data: URL as a top-level navigation" if top_level else None
        if scheme == "blob":
            return None  # same-origin object URLs of an allowed page
        if scheme not in WEB_SCHEMES:
            return f"scheme {scheme or '(none)'}: is not allowed"
        host = (parts.hostname or "").lower()
        if not host:
            return "no host"
        port = parts.port or {"http": 80, "ws": 80, "https": 443, "wss": 443}[scheme]
        reason, _ = await self.vet(host, port)
        return reason

    async def vet(self, host: str, port: int) -> tuple[str | None, list[IpAddress]]:
        """(None, addresses to connect to) when host:port may be reached, else (reason, []).
        Raises `NameNotResolved` for a host without addresses that is not in the allow list
        (an allowed one comes back with none: the caller dials it by name)."""
        host = host.lower().strip("[]")
        addresses = await self._resolve(host)
        if host in self._hosts or (host, port) in self._host_ports:
            return None, addresses
        if not addresses:
            raise NameNotResolved(f"cannot resolve {host}")
        for address in addresses:
            if self._allowed(address, port) or _public(address):
                continue
            shown = host if host == str(address) else f"{host} ({address})"
            return f"{shown} is not a public address (allow it in browser.allow)", []
        return None, addresses

    def check_static(self, url: str) -> str | None:
        """`check` of a top-level URL without DNS: the reason it would be blocked, or None when
        it would load or only DNS could tell (host names other than `localhost`). For warnings
        before a run and for choosing which links to follow."""
        if url in HARMLESS:
            return None
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "data":
            return "data: URL as a top-level navigation"
        if scheme not in WEB_SCHEMES:
            return f"scheme {scheme or '(none)'}: is not allowed"
        host = (parts.hostname or "").lower()
        try:
            port = parts.port or {"http": 80, "ws": 80, "https": 443, "wss": 443}[scheme]
        except ValueError:
            return "bad port"
        if not host:
            return "no host"
        if host in self._hosts or (host, port) in self._host_ports:
            return None
        if host == "localhost" or host.endswith(".localhost"):
            address: IpAddress = ipaddress.ip_address("127.0.0.1")
        else:
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                return None  # a name: only DNS can tell
        if self._allowed(address, port) or _public(address):
            return None
        return f"{host} is not a public address (allow it in browser.allow)"

    def _allowed(self, address: IpAddress, port: int) -> bool:
        text = str(address)
        return (
            text in self._hosts
            or (text, port) in self._host_ports
            or any(address in n for n in self._networks)
        )

    async def _resolve(self, host: str) -> list[IpAddress]:
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        cached = self._dns.get(host)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, None, type=socket.SOCK_STREAM
            )
        except OSError:
            return []
        addresses = sorted(
            {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}, key=str
        )
        self._dns[host] = (time.monotonic() + DNS_TTL_S, addresses)
        return addresses


def _aliases(host: str) -> tuple[str, ...]:
    """The names an allow entry for `host` covers: all of the loopback names for any one."""
    return LOOPBACK_NAMES if host in LOOPBACK_NAMES else (host,)


def _public(address: IpAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast
