"""URLs, one module for the whole package: parsing, default ports, origins, the page a URL
names, credentials, and the registrable domain ("site") of a host.

    url ─► split_url() ─► (scheme, host, port | None)      BadUrl when it does not parse
        ─► origin() ─► (scheme, host, port)                the port spelled out
        ─► page_of() ─► scheme://host[:port]/path?query    fragment and default port left out
    host ─► site_of() ─► registrable domain                 the Public Suffix List's
         ─► is_local_host() ─► loopback, IP literal, one label: told apart by port and path

The ground floor: it imports the standard library, `idna` and `publicsuffixlist` only, never
another datagen module, so every layer may use it.

Hosts of http(s) and ws(s) URLs are read as the URL Standard reads them (`split_url`,
`web_host`), the reading Chromium loads: before, Python's `urlsplit` read `2852039166.`,
`１２７．０．０．１`, `127.0.0.1%2e`, `localhost.` or `http:\\\\169.254.169.254` as names or no
host at all, while Chromium loaded the metadata address or loopback. The UTS #46 mapping is
the `idna` package's table (the Unicode consortium's data, as Chromium's ICU uses).

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
from urllib.parse import SplitResult, parse_qsl, unquote_to_bytes, urlsplit, urlunsplit

import idna
from publicsuffixlist import PublicSuffixList

WEB = ("http", "https")  # what a page, a scope and a start URL may be
WEB_SCHEMES = frozenset({"http", "https", "ws", "wss"})  # what a browser of ours may connect to
DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
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
    when the URL names none. For http(s) and ws(s) the host is read as the URL Standard (and so
    Chromium) reads it (`web_host`): `http:\\\\2852039166.\\x` is `169.254.169.254`. `BadUrl` when
    it does not parse: an unclosed `[`, a port out of range or not a number, a host the URL
    Standard refuses (a forbidden code point, `999.1.1.1`)."""
    text = url.strip(C0_OR_SPACE).translate(TAB_NEWLINE)
    scheme, colon, rest = text.partition(":")
    if colon and SCHEME.fullmatch(scheme) and scheme.lower() in WEB_SCHEMES:
        try:
            host, port = _authority(rest)
        except BadUrl as exc:
            raise BadUrl(f"cannot parse {url[:300]!r}: {exc}") from None
        return scheme.lower(), host, port
    try:
        parts = urlsplit(url)
        return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError as exc:
        raise BadUrl(f"cannot parse {url[:300]!r}: {exc}") from None


# The URL Standard's reading of a special scheme's authority (https://url.spec.whatwg.org/):
# leading and trailing C0 controls and spaces are dropped, tabs and newlines removed anywhere;
# after `http:` any run of `/` and `\` is skipped (`http:\\h`, `http:h`, `http:///h` all name h);
# the authority ends at the first `/`, `\`, `?` or `#`; its credentials end at its last `@`.
C0_OR_SPACE = "".join(map(chr, range(0x21)))
TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
AUTHORITY_END = re.compile(r"[/\\?#]")
# Forbidden domain code points: what no host may hold once IDNA has mapped it.
FORBIDDEN_DOMAIN = frozenset("#/:<>?@[\\]^|%") | {chr(c) for c in range(0x21)} | {"\x7f"}


def _authority(rest: str) -> tuple[str, int | None]:
    """(host, port) of what follows a special scheme's `:`; BadUrl names what is wrong."""
    rest = rest.lstrip("/\\")
    end = AUTHORITY_END.search(rest)
    hostport = rest[: end.start() if end else len(rest)].rpartition("@")[2]
    if hostport.startswith("["):
        raw, bracket, after = hostport[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise BadUrl("Invalid IPv6 URL")
        return _ipv6(raw), _port(after[1:]) if after else None
    raw, colon, port = hostport.partition(":")
    return web_host(raw), _port(port) if colon else None


def _port(text: str) -> int | None:
    if not text:
        return None  # `http://h:/`: no port, the default
    if not (text.isascii() and text.isdigit()):
        raise BadUrl(f"Port could not be cast to integer value as {text[:20]!r}")
    if int(text) > 65535:
        raise BadUrl("Port out of range 0-65535")
    return int(text)


def _ipv6(text: str) -> str:
    if "%" in text:  # a zone id: the URL Standard has none
        raise BadUrl("Invalid IPv6 URL")
    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        raise BadUrl("Invalid IPv6 URL") from None


@functools.lru_cache(maxsize=4096)
def web_host(raw: str) -> str:
    """A special URL's host as the URL Standard's host parser gives it (without IPv6's
    brackets): percent-decoded as UTF-8, mapped by IDNA's UTS #46 table (fullwidth digits and
    full stops, `。`, upper case: `１２７。０．０．１` is `127.0.0.1`), non-ASCII labels as
    punycode (`xn--…`); a host whose last label is a number is an IPv4 address in any of its
    forms (`2852039166.`, `0xA9FEA9FE`, `169.254.169.254.`), serialized dotted. "" for no host.
    BadUrl for a host the standard refuses. Cached: a page's every link and request asks
    again for the same few hosts (~20 us each for an IPv4 address, the bundled sites')."""
    if not raw:
        return ""
    domain = unquote_to_bytes(raw).decode("utf-8", errors="replace")
    try:
        mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
    except idna.IDNAError:
        raise BadUrl("a host IDNA refuses") from None
    ascii_host = ".".join(
        label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
        for label in mapped.split(".")
    )
    if not ascii_host or any(c in FORBIDDEN_DOMAIN for c in ascii_host):
        raise BadUrl("a forbidden character in the host")
    if _ends_in_number(ascii_host):
        return _ipv4(ascii_host)
    return ascii_host


def _ends_in_number(host: str) -> bool:
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    return labels[-1].isdigit() or _ipv4_number(labels[-1]) is not None


def _ipv4_number(part: str) -> int | None:
    """A part of an IPv4 host: decimal, `0x` hex or `0` octal (`0x` alone is 0); None if not."""
    digits, base = part, 10
    if part[:2].lower() == "0x":
        digits, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        digits, base = part[1:], 8
    allowed = "0123456789abcdefABCDEF"[: base + (6 if base == 16 else 0)]
    if not part or not all(c in allowed for c in digits):  # never `int`'s `_`, `+` or spaces
        return None
    return int(digits, base) if digits else 0


def _ipv4(host: str) -> str:
    """The URL Standard's IPv4 parser: up to 4 parts (a trailing dot allowed), the last one
    filling the bytes left. BadUrl when it is no address (`999.1.1.1`, `1.2.3.4.5`)."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    numbers = [_ipv4_number(p) for p in parts]
    if len(parts) > 4 or None in numbers:
        raise BadUrl("not an IPv4 address, though it ends in a number")
    *head, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        raise BadUrl("not an IPv4 address, though it ends in a number")
    value = last + sum(n << (8 * (3 - i)) for i, n in enumerate(head))
    return str(ipaddress.IPv4Address(value))


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
    """host[:port] of a URL as `split_url` reads it (the port as written, if any), without
    `user:password@` ("" when it has no host or does not parse)."""
    try:
        _, host, port = split_url(url)
    except BadUrl:
        return ""
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port is not None and host else shown


def hostname(url: str) -> str:
    """The host of a URL as `split_url` reads it, without IPv6 brackets ("" when none or it
    does not parse)."""
    try:
        return split_url(url)[1]
    except BadUrl:
        return ""


def query_of(url: str) -> str:
    """The query of a URL, without its `?` ("" when it has none or does not parse)."""
    try:
        return urlsplit(url).query
    except ValueError:
        return ""


def fragment_of(url: str) -> str:
    """The fragment of a URL, without its `#` ("" when it has none or does not parse)."""
    try:
        return urlsplit(url).fragment
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
