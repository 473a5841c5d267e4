"""URLs, one module for the whole package: parsing, default ports, origins, the page a URL
names, credentials, and the registrable domain ("site") of a host.

    url ─► split_url() ─► (scheme, host, port | None)      BadUrl when it does not parse
        ─► origin() ─► (scheme, host, port)                the port spelled out
        ─► page_of() ─► scheme://host[:port]/path?query    fragment and default port left out
    host ─► site_of() ─► registrable domain                 the Public Suffix List's
         ─► is_local_host() ─► loopback, IP literal, one label: told apart by port and path

The ground floor: it imports the standard library and `publicsuffixlist` only, never another
datagen module, so every layer may use it.

The registrable domain comes from the Public Suffix List as the `publicsuffixlist` package
bundles it (ICANN and private sections: `alice.github.io` and `bob.github.io` are two sites,
`a.example.co.uk` and `b.example.co.uk` one, `x.k12.ca.us` its own). That package, not
`tldextract`: it has no dependencies, ships type hints, reads its bundled copy of the list from
its own folder and has no code path that downloads anything when used (updating the list is a
separate command, `python -m publicsuffixlist.update`, that datagen never runs); `tldextract`
downloads the list and writes a cache unless told not to, and pulls in `requests`. The list
is as fresh as the installed package (its version carries the list's date). A host whose last
label the list does not know (`intranet.corp`) is treated as under an unknown TLD, the last
two labels; an IP address or a one-label host is its own site.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from string import hexdigits
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

from publicsuffixlist import PublicSuffixList

WEB = ("http", "https")  # what a page, a scope and a start URL may be
WEB_SCHEMES = frozenset({"http", "https", "ws", "wss"})  # what a browser of ours may connect to
DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
FORBIDDEN_HOST = frozenset("<>\\^|") | {chr(c) for c in range(0x20)} | {"\x7f"}
USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/\s?#@]*@")


class BadUrl(ValueError):
    """A URL that does not parse: the task's or the model's mistake, not the guard's refusal."""


def split(url: str) -> SplitResult:
    """`urlsplit`, its port read too: `BadUrl` for an unclosed `[` or a port out of range or
    not a number (Python raises those lazily, on `.port`). The error names the problem, not
    the URL (which may carry credentials)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises for a bad port
    except ValueError as exc:
        raise BadUrl(str(exc)) from None
    return parts


def split_url(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, lower-cased, the host without IPv6 brackets, the port None
    when the URL names none. `BadUrl` when it does not parse: `urlsplit` raises ValueError
    for an unclosed `[`, and `.port` for a port out of range or not a number; and for a host
    Chromium's parser refuses that Python's lets through (see `_host_problem`)."""
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError as exc:
        raise BadUrl(f"cannot parse {url[:300]!r}: {exc}") from None
    problem = _host_problem(host) if scheme in WEB_SCHEMES else None
    if problem is not None:
        raise BadUrl(f"cannot parse {url[:300]!r}: {problem}")
    return scheme, host, port


def _host_problem(host: str) -> str | None:
    """Why the URL Standard (Chromium) refuses a host Python accepts: a forbidden code point,
    or a last label that is a number when the whole is no IPv4 address (`999.1.1.1`,
    `1.2.3.4.5`). IPv6 hosts were checked by `urlsplit` already."""
    if ":" in host:
        return None
    if any(c in FORBIDDEN_HOST for c in host):
        return "a forbidden character in the host"
    last = host.removesuffix(".").rpartition(".")[2]
    numeric = last.isdigit() or (last[:2] == "0x" and all(c in hexdigits for c in last[2:]))
    if last.isascii() and numeric:
        try:
            socket.inet_aton(host.removesuffix("."))  # the URL Standard's IPv4 forms, and C's
        except OSError:
            return "not an IPv4 address, though it ends in a number"
    return None


def is_web(url: str) -> bool:
    """An http(s) URL that parses: one that does not (a bad port, an unclosed `[`, as a
    model's goto or a page's href may have) is no page."""
    try:
        return split_url(url)[0] in WEB
    except BadUrl:
        return False


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, the port spelled out (`http://h` and `http://h:80/x`
    agree; 0 for a scheme without a default) and the host without a trailing dot;
    ("", "", 0) for a URL that does not parse."""
    try:
        scheme, host, port = split_url(url)
    except BadUrl:
        return "", "", 0
    return scheme, host.rstrip("."), port or DEFAULT_PORTS.get(scheme, 0)


def netloc(url: str) -> str:
    """host[:port] of a URL as written, lower-cased and without `user:password@` ("" when it has
    none or does not parse)."""
    try:
        return urlsplit(url).netloc.rpartition("@")[2].lower()
    except ValueError:
        return ""


def hostname(url: str) -> str:
    """The host of a URL, lower-cased, without IPv6 brackets ("" when none or it does not
    parse)."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def path_of(url: str) -> str:
    """The path of a URL ("" when it has none or does not parse)."""
    try:
        return urlsplit(url).path
    except ValueError:
        return ""


def origin_text(url: str) -> str:
    """`scheme://netloc` of a URL as written (the whole text for one that does not parse)."""
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"
    except ValueError:
        return url


def page_of(url: str) -> str:
    """A URL without its fragment, with an explicit path and the default port left out:
    `http://A:80` and `http://a/#x` are the same page. One that is no http(s) URL or does not
    parse: itself, less its fragment."""
    if not is_web(url):
        return url.partition("#")[0]
    parts = urlsplit(url)
    scheme, host, port = origin(url)
    shown = host if port == DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    if ":" in host:
        shown = f"[{host}]" if port == DEFAULT_PORTS.get(scheme) else f"[{host}]:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{shown}{parts.path or '/'}{query}"


def url_directory(url: str) -> str:
    """A URL up to its path's last `/`, without query or fragment (no other normalization):
    `http://127.0.0.1:8000/todo/index.html?x#y` → `http://127.0.0.1:8000/todo/`; a path
    without a trailing slash names a file: `http://h/todo` → `http://h/`."""
    head = url.partition("#")[0].partition("?")[0]
    if "/" not in head.partition("://")[2]:
        return head + "/"
    return head[: head.rindex("/") + 1]


def is_ip(host: str) -> bool:
    """An IPv4 or IPv6 address (brackets and a trailing dot allowed)."""
    try:
        ipaddress.ip_address(host.strip("[]").rstrip("."))
    except ValueError:
        return False
    return True


def is_local_host(host: str) -> bool:
    """A loopback, IP-literal or one-label host (`127.0.0.1`, `::1`, `10.0.0.5`, `localhost`,
    `app.localhost`, `intranet`): one that often serves several apps told apart by port or
    path (a dev server, the bundled sites), so it is no registrable domain: scope and host
    limits tell it apart by origin (or folder), not by site."""
    host = host.lower().strip("[]").rstrip(".")
    return is_ip(host) or "." not in host or host.endswith(".localhost")


@functools.cache
def _suffix_list() -> PublicSuffixList:
    """The bundled Public Suffix List, parsed once per process (about 10k rules). No argument
    reads the copy shipped inside the package; nothing is fetched."""
    return PublicSuffixList(accept_unknown=True, only_icann=False)


@functools.lru_cache(maxsize=4096)
def site_of(host: str) -> str:
    """The registrable domain of a host by the Public Suffix List, ICANN and private sections
    (`app.example.com` → `example.com`, `alice.github.io` → itself, `a.example.co.uk` →
    `example.co.uk`). An IP address, a one-label host, or a host that is itself a public
    suffix (`co.uk`, `github.io`) is its own site."""
    host = host.lower().strip("[]").rstrip(".")
    if is_ip(host) or "." not in host:
        return host
    return _suffix_list().privatesuffix(host) or host


def redact_url(url: str) -> str:
    """The URL without its user:password part: what may be printed, logged or written."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.rsplit("@", 1)[-1] if "@" in url else url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def strip_credentials(text: str) -> str:
    """`text` with the `user:password@` of every URL in it replaced by `***@` (errors and
    details quote URLs, Playwright's messages too): what may be printed, logged or kept."""
    return USERINFO.sub(r"\1***@", text)


def has_userinfo(url: str | None) -> bool:
    """Does the URL carry `user:password@` (sent as basic auth)?"""
    return bool(url) and "@" in urlsplit(url or "").netloc


def without_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """(the URL without `user:password@`, the user, the password), the last two percent-encoded
    as written and None when absent."""
    parts = urlsplit(url)
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))
    return bare, parts.username, parts.password


def query_pairs(url: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(scheme://netloc/path, the query's key-value pairs in order) of a URL with a query;
    None for one without, or one that does not parse (replays match cache-busters by it)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if not parts.query:
        return None
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    return f"{parts.scheme}://{parts.netloc}{parts.path}", pairs
