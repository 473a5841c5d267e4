"""The URL guard: what a browser of ours may load.

Task lists come from users and the open web, and a page can point the browser anywhere: at
the cluster's own services, at the cloud metadata endpoint, at local files. By default the
guard blocks, for the URLs a browser is told to load (start URLs, gotos: `check`) and, in the
egress proxy (egress.py), for every connection a page makes (navigations, frames, fetch/XHR,
images, redirect hops, WebSockets: `vet`):

- schemes other than http(s)/ws(s) — `file:`, `javascript:`, `chrome:`, … — and `data:` as a
  top-level navigation (a data: image inside a page is fine);
- any address that is not globally routable: loopback, private, link-local (169.254.169.254,
  the metadata endpoint), carrier-grade NAT, multicast, reserved, IPv6 site-local (fec0::/10)
  and NAT64's local-use prefix (64:ff9b:1::/48); host names are resolved first, and blocked if
  any address they resolve to is;
- an IPv6 address that carries an IPv4 one counts by the IPv4 it carries (blocked when that is
  not public, whatever the IPv6 prefix says): IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
  (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::a.b.c.d), 6to4
  (2002:AABB:CCDD::) and Teredo (2001:0::/32, whose client address is stored inverted).

`allow` entries open what a pipeline needs: `host`, `host:port`, or a CIDR (`10.0.0.0/8`).
The bundled sites are served on loopback and allowed through this same list. `localhost`,
`127.0.0.1` and `::1` name one machine: an entry with one of them covers the others.

A name that does not resolve is no decision of the guard's: `check` and `vet` raise
`NameNotResolved`, and callers report it as a DNS failure (`dns_failed`), never as a block.
Nor is a URL that does not parse (an unclosed `[`, a port out of range or not a number):
`check` and `datagen.url.split_url` raise `BadUrl` (a `bad_url` reject, or an action error for
a goto); `check_static` returns why.

DNS rebinding: the egress proxy resolves a name once, vets the addresses and dials the one it
vetted, so a DNS answer that changes between a check and the load cannot reach an address the
guard refuses. Still, run untrusted task lists on workers whose network cannot reach internal
services: the guard is one layer, not the network's own.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from dataclasses import dataclass, field

from datagen.config.allow import parse_allow_entry
from datagen.url import DEFAULT_PORTS, WEB_SCHEMES, BadUrl, split_url

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
        """Allow `host`, `host:port` or a CIDR network (localhost and loopback: all its names).
        The entry is parsed as the config checks it (`parse_allow_entry`); ValueError for one
        the config would refuse."""
        parsed = parse_allow_entry(entry)
        network = parsed.network
        if network is not None:
            self._networks.append(network)
            if any(ipaddress.ip_address(name) in network for name in LOOPBACK_NAMES[1:]):
                self._hosts.update(LOOPBACK_NAMES)
        elif parsed.port is not None:
            for alias in _aliases(parsed.host):  # host:port or [v6]:port
                self._host_ports.add((alias, parsed.port))
        else:
            self._hosts.update(_aliases(parsed.host))

    async def check(self, url: str, top_level: bool) -> str | None:
        """None when the URL may load, else the reason it may not; `NameNotResolved` when its
        host has no address (nothing to judge)."""
        if url in HARMLESS:
            return None
        scheme, host, port = split_url(url)
        if scheme == "data":
            return "data: URL as a top-level navigation" if top_level else None
        if scheme == "blob":
            return None  # same-origin object URLs of an allowed page
        if scheme not in WEB_SCHEMES:
            return f"scheme {scheme or '(none)'}: is not allowed"
        if not host:
            return "no host"
        reason, _ = await self.vet(host, port or DEFAULT_PORTS[scheme])
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
            return f"{_shown(host, address)} is not a public address ({_fix(host, port)})", []
        return None, addresses

    def check_static(self, url: str) -> str | None:
        """`check` of a top-level URL without DNS: the reason it would be blocked, or None when
        it would load or only DNS could tell (host names other than `localhost`). For warnings
        before a run and for choosing which links to follow."""
        if url in HARMLESS:
            return None
        try:
            scheme, host, given = split_url(url)
        except BadUrl as exc:
            return str(exc)
        if scheme == "data":
            return "data: URL as a top-level navigation"
        if scheme not in WEB_SCHEMES:
            return f"scheme {scheme or '(none)'}: is not allowed"
        port = given or DEFAULT_PORTS[scheme]
        if not host:
            return "no host"
        if host in self._hosts or (host, port) in self._host_ports:
            return None
        literal = literal_address(host)
        name = host.removesuffix(".")  # `localhost.` is localhost to Chromium too
        if name == "localhost" or name.endswith(".localhost"):
            address: IpAddress = ipaddress.ip_address("127.0.0.1")
        elif literal is not None:
            address = literal
        else:
            return None  # a name: only DNS can tell
        if self._allowed(address, port) or _public(address):
            return None
        return f"{_shown(host, address)} is not a public address ({_fix(host, port)})"

    def _allowed(self, address: IpAddress, port: int) -> bool:
        text = str(address)
        return (
            text in self._hosts
            or (text, port) in self._host_ports
            or any(address in n for n in self._networks)
        )

    async def _resolve(self, host: str) -> list[IpAddress]:
        literal = literal_address(host)
        if literal is not None:
            return [literal]
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


NUMERIC_HOST = set("0123456789abcdefx.")


def literal_address(host: str) -> IpAddress | None:
    """The address a host names by itself, as the browser and the resolver read it, for the
    guard's run-time and static checks alike: IPv6, dotted IPv4, and IPv4's other numeric
    forms (one number `2852039166`, hex `0xa9fea9fe`, octal, fewer parts `10.1`); None for a
    name. Before, the static check read only dotted IPv4: `validate` let those forms through
    while the run-time guard (through the resolver, which reads them) blocked them."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and host[0].isdigit() and set(host.lower()) <= NUMERIC_HOST:
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _aliases(host: str) -> tuple[str, ...]:
    """The names an allow entry for `host` covers: all of the loopback names for any one."""
    return LOOPBACK_NAMES if host in LOOPBACK_NAMES else (host,)


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix: IPv4 in the last 32
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: a network's own translator
TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 (SIIT) IPv4-translated
COMPATIBLE = ipaddress.IPv6Network("::/96")  # RFC 4291 IPv4-compatible (deprecated)


def carried_ipv4(address: IpAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, compatible, translated, NAT64, 6to4,
    Teredo's client), or None. A translator or tunnel on the way delivers to that IPv4."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # (server, client): the client, already un-inverted
    if any(address in net for net in (NAT64, TRANSLATED, COMPATIBLE)):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _public(address: IpAddress) -> bool:
    """Globally routable and unicast; an IPv6 address carrying an IPv4 one only when that is too
    (an IPv4-mapped one by its IPv4 alone: its prefix is never global by itself)."""
    carried = carried_ipv4(address)
    if carried is not None and not _public(carried):
        return False
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return True  # by the IPv4 it carries, judged above
        if address.is_site_local or address in NAT64_LOCAL:
            return False  # deprecated site-local, local-use NAT64: never the open internet
    return address.is_global and not address.is_multicast


def _fix(host: str, port: int) -> str:
    """The browser.allow entry that lets this host and port in (an allowed host on another
    port is not this one: the fix names the port)."""
    entry = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f'fix: add "{entry}" to browser.allow'


def _shown(host: str, address: IpAddress) -> str:
    """How a refused address is named: `host (address)`, and the IPv4 it carries."""
    shown = host if host == str(address) else f"{host} ({address})"
    carried = carried_ipv4(address)
    return f"{shown}, which carries {carried}," if carried is not None else shown
