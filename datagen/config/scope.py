"""`run.scope`: what may be written there, checked when the file is read, and which start URLs
`site` reads as a folder, not a domain. `datagen/scope.py` turns a checked setting into an
episode's `Scope` (normalized hosts, origins, pages).

    run.scope: ["example.com", "https://app.example.com/x/"] ─► read_scope_entry() ─► ScopeEntry
    a start URL's host ─► is_local_host() ─► `site`: url_directory(start URL), not a domain

`is_local_host` and `url_directory` live in `datagen.url` (re-exported here).
"""

from __future__ import annotations

from typing import NamedTuple

from datagen.url import WEB, BadUrl, split
from datagen.url import is_local_host as is_local_host
from datagen.url import url_directory as url_directory

SCOPE_KEYWORDS = ("site", "origin", "anywhere")


class ScopeEntry(NamedTuple):
    """One `run.scope` list entry as written, by kind; not yet normalized."""

    kind: str  # host | host_port | origin | prefix
    text: str  # origin, prefix: the URL; host, host_port: the host (lower case, no brackets)
    port: int = 0


def read_scope_entry(entry: str) -> ScopeEntry:
    """One `run.scope` list entry; ValueError says how to write it."""
    text = entry.strip()
    if not text:
        raise ValueError("an empty scope entry; fix: remove it")
    if "://" in text:
        try:
            parts = split(text)
        except BadUrl as exc:
            raise ValueError(
                f"scope entry {entry!r} does not parse ({exc}); "
                'fix: write it like "https://example.com:8443" or "https://example.com/app/"'
            ) from None
        if parts.scheme.lower() not in WEB or not parts.hostname:
            raise ValueError(
                f"scope entry {entry!r}: only http(s) origins and URL prefixes are allowed; "
                'fix: write it like "https://example.com" or "https://example.com/app/"'
            )
        kind = "origin" if parts.path in ("", "/") and not parts.query else "prefix"
        return ScopeEntry(kind, text)
    text = text.lower().removeprefix("*.")  # "*.example.com": a host has its subdomains anyway
    if "/" in text or " " in text or text.startswith("."):
        raise ValueError(
            f"scope entry {entry!r} is not a host, host:port, origin or URL prefix; "
            'fix: write "example.com", "example.com:8080" or "https://example.com/app/"'
        )
    host, sep, digits = text.rpartition(":")
    if sep and (host.startswith("[") or ":" not in host):  # host:port or [v6]:port
        if not digits.isdigit() or not 0 < int(digits) < 65536:
            raise ValueError(f"scope entry {entry!r}: bad port {digits!r}; fix: a port in 1-65535")
        return ScopeEntry("host_port", host.strip("[]"), int(digits))
    return ScopeEntry("host", text.strip("[]").rstrip("."))


def check_scope(setting: str | list[str]) -> str | list[str]:
    """Validate a `run.scope` value (for the config model); returns it unchanged."""
    if isinstance(setting, str):
        if setting not in SCOPE_KEYWORDS:
            raise ValueError(bad_scope_keyword(setting))
        return setting
    if not setting:
        raise ValueError(
            'an empty list leaves every page out of scope; fix: list hosts, or use "site"'
        )
    for entry in setting:
        read_scope_entry(entry)
    return setting


def bad_scope_keyword(setting: str) -> str:
    """The error for a `run.scope` word that is none of the keywords."""
    return (
        f"{setting!r} is not a scope; fix: use site, origin or anywhere, or a list of hosts, "
        f'host:port, origins or URL prefixes (e.g. ["{setting}"])'
    )
