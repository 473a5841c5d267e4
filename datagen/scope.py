"""An episode's scope: which pages count as on task, and what a page that is not looks like.

    run.scope + the start URL ─► Scope.for_task() ─► Scope.contains(url)
    page URL + its document's HTTP status ─► page_problem() ─► Stray | None

Pure: no browser, no network. The pipeline drops observations of pages with a problem (a
reject row, then it goes back) and the explore policy prefers links inside the scope.

`run.scope`:

- `site` (default): for a named host, the start URL's registrable domain (`example.com` for
  `https://app.example.com:8443/x`), any scheme and port. For a local start URL (a loopback,
  IP-literal or one-label host: `127.0.0.1`, `[::1]`, `10.0.0.5`, `localhost`, `intranet`,
  `app.localhost`), the start URL's origin and its path's directory:
  `http://127.0.0.1:8000/todo/index.html` → pages under `http://127.0.0.1:8000/todo/`. Such a
  host often serves several apps (a dev server's paths, the bundled sites' folders on one
  port): its whole host would credit work done in another app. A start without a trailing slash
  (`/todo`) names a file in `/`: the whole origin. For the whole host, list it (`[localhost]`).
- `origin`: the start URL's scheme, host and port.
- `anywhere`: any web page the URL guard lets through.
- a list of entries: `host` (that host and its subdomains, any scheme and port), `host:port`,
  an origin `https://host[:port]`, or a URL prefix `https://host/path/`.

The start page itself (and the page it redirected to) is always in scope: a task whose start
lies outside its own list would otherwise record nothing.

The registrable domain is found without the Public Suffix List (no download, no dependency): the
last two labels, or three when the second-to-last is a common second level under a two-letter
country code (`co.uk`, `com.au`) or the host is under a shared hosting suffix (`github.io`,
`vercel.app`: each tenant is its own site). A public suffix outside those lists (`k12.ca.us`)
makes the site wider than its registrable domain: list the hosts when that matters.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import urlsplit

from datagen.browser.guard import BadUrl, split_url
from datagen.config.scope import (
    SCOPE_KEYWORDS,
    bad_scope_keyword,
    is_local_host,
    read_scope_entry,
    url_directory,
)
from datagen.records import RejectReason

WEB = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
# Second levels under two-letter country codes that are public suffixes themselves.
# fmt: off
COUNTRY_SECOND_LEVELS = frozenset({
    "ac", "co", "com", "edu", "gob", "gov", "govt", "gv", "ltd", "mil", "ne", "net", "nhs",
    "nic", "nom", "or", "org", "plc", "sch",
})
# Suffixes under which every subdomain belongs to someone else (the PSL's private section).
SHARED_SUFFIXES = frozenset({
    "appspot.com", "azurewebsites.net", "blogspot.com", "cloudfront.net", "firebaseapp.com",
    "fly.dev", "github.io", "gitlab.io", "glitch.me", "herokuapp.com", "netlify.app",
    "ngrok-free.app", "ngrok.io", "onrender.com", "pages.dev", "repl.co", "s3.amazonaws.com",
    "trycloudflare.com", "vercel.app", "web.app", "workers.dev",
})
# fmt: on


class Entry(NamedTuple):
    """One entry of a `run.scope` list."""

    kind: str  # host | host_port | origin | prefix
    host: str = ""
    port: int = 0
    scheme: str = ""
    prefix: str = ""


class Stray(NamedTuple):
    """A page that must not become data: why, where, and what happened."""

    reason: RejectReason
    url: str
    detail: str


@dataclass(frozen=True)
class Scope:
    """Where an episode may go. Build with `Scope.for_task`."""

    kind: str  # site | origin | anywhere | list
    start: str  # the start URL as opened (resolved)
    sites: frozenset[str] = frozenset()
    origins: frozenset[tuple[str, str, int]] = frozenset()
    hosts: frozenset[str] = frozenset()
    host_ports: frozenset[tuple[str, int]] = frozenset()
    prefixes: tuple[str, ...] = ()
    pages: frozenset[str] = frozenset()  # start pages, always in scope
    blocked: Callable[[str], str | None] | None = field(default=None, compare=False)

    @classmethod
    def for_task(
        cls,
        setting: str | Iterable[str],
        start_url: str,
        *also: str,
        blocked: Callable[[str], str | None] | None = None,
    ) -> Scope:
        """The scope of an episode starting at `start_url` (and of the pages in `also`, e.g.
        where the start URL redirected to). `blocked` says why the URL guard would refuse a URL
        (None: it would not), without DNS."""
        starts = [u for u in (start_url, *also) if _web(u)]
        pages = frozenset(_page(u) for u in starts)
        if isinstance(setting, str):
            if setting not in SCOPE_KEYWORDS:
                raise ValueError(bad_scope_keyword(setting))
            site = setting == "site"
            local = [u for u in starts if site and is_local_host(_host(u))]
            return cls(
                kind=setting,
                start=start_url,
                sites=frozenset(site_of(_host(u)) for u in starts if site and u not in local),
                origins=frozenset(_origin(u) for u in starts if setting == "origin"),
                prefixes=tuple(sorted({directory_of(u) for u in local})),
                pages=pages,
                blocked=blocked,
            )
        entries = [parse_entry(e) for e in setting]
        return cls(
            kind="list",
            start=start_url,
            hosts=frozenset(e.host for e in entries if e.kind == "host"),
            host_ports=frozenset((e.host, e.port) for e in entries if e.kind == "host_port"),
            origins=frozenset((e.scheme, e.host, e.port) for e in entries if e.kind == "origin"),
            prefixes=tuple(e.prefix for e in entries if e.kind == "prefix"),
            pages=pages,
            blocked=blocked,
        )

    def contains(self, url: str, guarded: bool = True) -> bool:
        """Is this URL a page of the episode's scope (and, when `guarded`, one the URL guard
        would load: a link worth following)?"""
        if url.startswith("blob:"):
            url = url[len("blob:") :]  # an object URL belongs to the page that made it
        if not _web(url):
            return False
        if guarded and self.blocked is not None and self.blocked(url) is not None:
            return False
        if _page(url) in self.pages or self.kind == "anywhere":
            return True
        host = _host(url)
        if self.kind == "site":
            return site_of(host) in self.sites or _under(url, self.prefixes)
        if _origin(url) in self.origins:
            return True
        if self.kind == "origin":
            return False
        return (
            any(host == h or host.endswith("." + h) for h in self.hosts)
            or (host, _origin(url)[2]) in self.host_ports
            or _under(url, self.prefixes)
        )

    def is_start(self, url: str) -> bool:
        """Is this the page the episode started on (going back from it leaves the task)?"""
        return _page(url) in self.pages

    def describe(self) -> str:
        """For reject details: "site example.com", "site http://127.0.0.1:8000/todo/",
        "origin http://127.0.0.1:8000"."""
        if self.kind == "site":
            return "site " + ", ".join([*sorted(self.sites), *self.prefixes])
        if self.kind == "origin":
            return "origin " + ", ".join(sorted(f"{s}://{h}:{p}" for s, h, p in self.origins))
        if self.kind == "anywhere":
            return "anywhere the URL guard allows"
        shown = sorted(
            [*self.hosts, *(f"{h}:{p}" for h, p in self.host_ports), *self.prefixes]
            + [f"{s}://{h}:{p}" for s, h, p in self.origins]
        )
        return "the list " + ", ".join(shown)


def page_problem(
    url: str, scope: Scope, status: int | None = None, requested: str = ""
) -> Stray | None:
    """Why a page showing `url` must not become data, or None when it may.

    `status` is the HTTP status of the document on show (None: unknown, e.g. after a
    same-document navigation); `requested` the URL the main frame last asked for (what an
    error page failed to load). A navigation the egress proxy refused shows its 403 page (an
    https one Chromium's error page): an error_page when its URL is in scope, else off_scope.
    """
    if url.startswith("chrome-error:"):
        failed = requested or url
        if requested and _web(requested) and not scope.contains(requested, guarded=False):
            return Stray(
                RejectReason.OFF_SCOPE,
                failed,
                f"{failed[:300]} is outside the episode's scope ({scope.describe()}); "
                f"the browser showed its error page ({url})",
            )
        return Stray(
            RejectReason.ERROR_PAGE,
            failed,
            f"loading {failed[:300]} failed: the browser showed its error page ({url})",
        )
    if not url or url.startswith(("about:", "data:")):
        return Stray(RejectReason.BLANK_PAGE, url, f"a blank page ({url[:100] or 'no URL'})")
    if not scope.contains(url, guarded=False):
        return Stray(
            RejectReason.OFF_SCOPE,
            url,
            f"{url[:300]} is outside the episode's scope ({scope.describe()})",
        )
    if status is not None and status >= 400:
        return Stray(RejectReason.ERROR_PAGE, url, f"{url[:300]} answered HTTP {status}")
    return None


def same_document(a: str, b: str) -> bool:
    """Do two URLs name the same document (they may differ in the fragment only)?"""
    return bool(a) and _page(a) == _page(b)


def parse_entry(entry: str) -> Entry:
    """One `run.scope` list entry, normalized (its grammar: `datagen.config.scope`); ValueError
    says how to write it."""
    written = read_scope_entry(entry)
    if written.kind == "origin":
        scheme, host, port = _origin(written.text)
        return Entry("origin", host=host, port=port, scheme=scheme)
    if written.kind == "prefix":
        return Entry("prefix", prefix=_page(written.text))
    return Entry(written.kind, host=written.text, port=written.port)


def directory_of(url: str) -> str:
    """A URL's origin and its path's directory, normalized as `_page` forms are (what a local
    start URL's `site` scope holds): `http://127.0.0.1:80/todo/a.html?b` → `http://127.0.0.1/todo/`.
    """
    return url_directory(_page(url))


def site_of(host: str) -> str:
    """The registrable domain of a host (see the module docstring); IPs and one-label hosts
    are their own site."""
    host = host.lower().strip("[]").rstrip(".")
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    labels = host.split(".")
    if len(labels) <= 2:
        return host
    for suffix in SHARED_SUFFIXES:
        if host.endswith("." + suffix):
            return ".".join(labels[-(suffix.count(".") + 2) :])
    if len(labels[-1]) == 2 and labels[-2] in COUNTRY_SECOND_LEVELS:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def _under(url: str, prefixes: Iterable[str]) -> bool:
    page = _page(url)
    return any(page.startswith(p) for p in prefixes)


def _web(url: str) -> bool:
    """An http(s) URL that parses: one that does not (a bad port, an unclosed `[`, as a
    model's goto or a page's href may have) is no page of any scope."""
    try:
        return split_url(url)[0] in WEB
    except BadUrl:
        return False


def _host(url: str) -> str:
    return _origin(url)[1]


def _origin(url: str) -> tuple[str, str, int]:
    try:
        scheme, host, port = split_url(url)
    except BadUrl:
        return "", "", 0
    return scheme, host.rstrip("."), port or DEFAULT_PORTS.get(scheme, 0)


def _page(url: str) -> str:
    """A URL without its fragment, with an explicit path and the default port left out:
    `http://A:80` and `http://a/#x` are the same page. One that does not parse: itself."""
    if not _web(url):
        return url.partition("#")[0]
    parts = urlsplit(url)
    scheme, host, port = _origin(url)
    shown = host if port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    if ":" in host:
        shown = f"[{host}]" if port == DEFAULT_PORTS.get(scheme) else f"[{host}]:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{shown}{parts.path or '/'}{query}"
