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

The registrable domain is the Public Suffix List's, bundled (`datagen.url.site_of`, offline):
`alice.github.io` and `bob.github.io` are two sites, `a.example.co.uk` and `b.example.co.uk`
one, and `x.k12.ca.us` is its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from datagen.config.scope import SCOPE_KEYWORDS, bad_scope_keyword, read_scope_entry
from datagen.records import RejectReason
from datagen.url import (
    is_local_host,
    is_web,
    origin,
    page_of,
    url_directory,
)
from datagen.url import site_of as site_of


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
        starts = [u for u in (start_url, *also) if is_web(u)]
        pages = frozenset(page_of(u) for u in starts)
        if isinstance(setting, str):
            if setting not in SCOPE_KEYWORDS:
                raise ValueError(bad_scope_keyword(setting))
            site = setting == "site"
            local = [u for u in starts if site and is_local_host(origin(u)[1])]
            return cls(
                kind=setting,
                start=start_url,
                sites=frozenset(site_of(origin(u)[1]) for u in starts if site and u not in local),
                origins=frozenset(origin(u) for u in starts if setting == "origin"),
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
        if not is_web(url):
            return False
        if guarded and self.blocked is not None and self.blocked(url) is not None:
            return False
        if page_of(url) in self.pages or self.kind == "anywhere":
            return True
        host = origin(url)[1]
        if self.kind == "site":
            return site_of(host) in self.sites or _under(url, self.prefixes)
        if origin(url) in self.origins:
            return True
        if self.kind == "origin":
            return False
        return (
            any(host == h or host.endswith("." + h) for h in self.hosts)
            or (host, origin(url)[2]) in self.host_ports
            or _under(url, self.prefixes)
        )

    def is_start(self, url: str) -> bool:
        """Is this the page the episode started on (going back from it leaves the task)?"""
        return page_of(url) in self.pages

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
        if requested and is_web(requested) and not scope.contains(requested, guarded=False):
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
    return bool(a) and page_of(a) == page_of(b)


def parse_entry(entry: str) -> Entry:
    """One `run.scope` list entry, normalized (its grammar: `datagen.config.scope`); ValueError
    says how to write it."""
    written = read_scope_entry(entry)
    if written.kind == "origin":
        scheme, host, port = origin(written.text)
        return Entry("origin", host=host, port=port, scheme=scheme)
    if written.kind == "prefix":
        return Entry("prefix", prefix=page_of(written.text))
    return Entry(written.kind, host=written.text, port=written.port)


def directory_of(url: str) -> str:
    """A URL's origin and its path's directory, normalized as `page_of` forms are (what a local
    start URL's `site` scope holds): `http://127.0.0.1:80/todo/a.html?b` → `http://127.0.0.1/todo/`.
    """
    return url_directory(page_of(url))


def _under(url: str, prefixes: Iterable[str]) -> bool:
    page = page_of(url)
    return any(page.startswith(p) for p in prefixes)
