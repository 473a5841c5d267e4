"""`browser.allow` entries, parsed once: the config checks them with this parse and the URL
guard (`datagen/browser/guard.py`) builds its allow list from it.

    browser.allow: ["intranet:8080", "10.1.0.0/16"] ─► parse_allow_entry() ─► AllowEntry
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

HOST_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


@dataclass(frozen=True)
class AllowEntry:
    """What one entry lets through: a network (CIDR or a bare address), or a host (a name or
    an address, IPv6 without brackets) on one port or, when `port` is None, on any."""

    network: Network | None = None
    host: str = ""
    port: int | None = None


def parse_allow_entry(entry: str) -> AllowEntry:
    """The entry, lower-cased; ValueError saying why it names nothing the guard can match."""
    text = entry.strip().lower()
    if not text:
        raise ValueError("empty")
    if "[" not in text and (network := _network(text)) is not None:
        return AllowEntry(network=network)
    if "/" in text:
        raise ValueError("a URL or path, not a host")
    if text.startswith("["):
        return _bracketed(text)
    if text.count(":") > 1:
        raise ValueError("neither an address nor host:port (write IPv6 as [addr]:port or a CIDR)")
    host, colon, port = text.partition(":")
    number = _port(port) if colon else None
    if "*" in host:
        raise ValueError(
            "wildcards are not supported; list each host (a host covers no subdomains)"
        )
    if not all(HOST_LABEL.match(label) for label in host.rstrip(".").split(".")):
        raise ValueError("not a valid host name")
    return AllowEntry(host=host, port=number)


def allow_entry_problem(entry: str) -> str:
    """Why a `browser.allow` entry names nothing the guard can match ("" when it is fine)."""
    try:
        parse_allow_entry(entry)
    except ValueError as exc:
        return str(exc)
    return ""


def _bracketed(text: str) -> AllowEntry:
    """`[v6]` (a network of one address) or `[v6]:port`."""
    inside, closed, rest = text[1:].partition("]")
    network = _network(inside) if closed else None
    if network is None:
        raise ValueError("not an IPv6 address inside [ ]")
    if not rest:
        return AllowEntry(network=network)
    if not rest.startswith(":"):
        raise ValueError("text after ']'")
    return AllowEntry(host=inside, port=_port(rest[1:]))


def _port(port: str) -> int:
    if port.isdigit() and 0 < int(port) < 65536:
        return int(port)
    raise ValueError(f"port {port!r} is not 1-65535")


def _network(text: str) -> Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None
