"""An episode's own traffic, recorded: what its replays are answered from (verification).

    Episode: browser context with Playwright's HAR recording (record_har_path, minimal, bodies
             embedded) ─► <episode>.har when its context closes
    verify.py: Recording.load(har) ─► one ReplayRouter per replay (router.py), on a context
               whose only way out is a sealed proxy (browser/seal.py)

The recording keeps the episode's requests in two kinds: safe ones (GET, HEAD, OPTIONS), by
method and URL, each with the number of state-changing requests sent before it (`state`), and
the state-changing ones (any other method) in the order the episode sent them. How a replay is
answered from it: router.py.

Why Playwright's HAR recording and a router of our own, not `route_from_har`: the recording is
made by Playwright's driver (no per-request work on the browser loop's Python side: ordinary
episodes pay only the driver's copy of each response). `route_from_har` answers a POST by URL
and body alone, whatever came before it: "Buy" replayed without "Add to cart" got the recorded
"Order placed" page and verification kept "Buy" alone as the task's path. Its redirects are
followed as new navigations too, so the cookies a recorded 303 set were lost.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import re
import tempfile
import uuid
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from datagen.config import PipelineConfig
from datagen.pipeline.rows import EpisodeOutcome
from datagen.records import TaskSpec
from datagen.url import netloc, query_pairs

log = logging.getLogger(__name__)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Response headers never replayed: the body is already decoded and its length may differ
DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
# A query or form value that differs between an episode and its replay only because it holds a
# clock or a random number (`?_=1732800000000`, `Math.random()`, a hidden field of Date.now()):
# six digits or more, possibly with one dot. Any value under a cache-buster's usual name too.
VOLATILE = re.compile(r"\d{6,}(\.\d+)?|\d*\.\d{6,}")
CACHE_BUSTERS = frozenset({"_", "cb", "nocache", "cachebuster", "rand", "rnd", "ts", "timestamp"})


@dataclass(frozen=True)
class Entry:
    """One recorded request and its response; `state`: the episode's state-changing requests
    sent before it."""

    method: str
    url: str
    body: bytes
    state: int
    status: int
    headers: dict[str, str]
    content: bytes
    cookie: str = ""  # the request's Cookie header

    def set_cookies(self) -> list[str]:
        """The response's Set-Cookie headers."""
        return [
            line
            for name, value in self.headers.items()
            if name.lower() == "set-cookie"
            for line in value.split("\n")
        ]


@dataclass
class Recording:
    """An episode's recorded traffic (safe requests by (method, URL); the others in order)."""

    safe: dict[tuple[str, str], list[Entry]] = field(default_factory=dict)
    writes: list[Entry] = field(default_factory=list)
    site_cookies: frozenset[str] = frozenset()  # names of the cookies the site set

    @classmethod
    def load(cls, path: Path) -> Recording:
        """Read Playwright's HAR file (an empty recording when there is none)."""
        recording = cls()
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))["log"]["entries"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.info("no usable recording at %s: %s", path, exc)
            return recording
        for raw in entries:
            entry = _entry(raw, len(recording.writes))
            if entry is None:
                continue
            if entry.method in SAFE_METHODS:
                recording.safe.setdefault((entry.method, entry.url), []).append(entry)
            else:
                recording.writes.append(entry)
        everything = [*recording.writes, *(e for es in recording.safe.values() for e in es)]
        names = {m for e in everything for line in e.set_cookies() for m in parsed_cookies(line)}
        recording.site_cookies = frozenset(names)
        return recording

    def similar(self, method: str, url: str) -> list[Entry]:
        """The recorded safe requests this one repeats but for volatile values (`VOLATILE`):
        a cache-buster or a timestamp; none when another value, a key or the path differs."""
        shape = query_pairs(url)
        if shape is None:
            return []
        for (m, recorded), entries in self.safe.items():
            if m == method and same_values(shape, query_pairs(recorded)):
                return entries
        return []

    def state(self, cookie_header: str) -> dict[str, str]:
        """The site's own cookies in a Cookie header: what its server's state hangs on."""
        pairs = (part.strip().partition("=") for part in cookie_header.split(";"))
        return {k: v for k, _, v in pairs if k in self.site_cookies}


def same_values(
    a: tuple[str, list[tuple[str, str]]] | None, b: tuple[str, list[tuple[str, str]]] | None
) -> bool:
    """Do two (place, pairs) differ at most in volatile values (same place, same keys)?"""
    if a is None or b is None or a[0] != b[0] or len(a[1]) != len(b[1]):
        return False
    for (key, value), (other_key, other) in zip(a[1], b[1], strict=True):
        if key != other_key:
            return False
        if value != other and not (
            key.lower() in CACHE_BUSTERS
            or (VOLATILE.fullmatch(value) and VOLATILE.fullmatch(other))
        ):
            return False
    return True


def same_url(a: str, b: str) -> bool:
    """Equal URLs, or URLs that differ only in volatile query values."""
    return a == b or same_values(query_pairs(a), query_pairs(b))


def same_body(a: bytes, b: bytes) -> bool:
    """Equal request bodies, or form bodies that differ only in volatile values."""
    if a == b:
        return True
    try:
        pairs = [parse_qsl(x.decode(), keep_blank_values=True, strict_parsing=True) for x in (a, b)]
    except (UnicodeDecodeError, ValueError):
        return False
    return same_values(("", pairs[0]), ("", pairs[1]))


def parsed_cookies(line: str) -> dict[str, Any]:
    """A Set-Cookie line's cookies (SimpleCookie morsels by name; none when it does not parse)."""
    cookie: SimpleCookie = SimpleCookie()
    with contextlib.suppress(CookieError):
        cookie.load(line)
    return dict(cookie)


def _entry(raw: dict[str, object], state: int) -> Entry | None:
    """A HAR entry as an Entry; None for a request that got no response (aborted, failed)."""
    request, response = raw.get("request"), raw.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        return None
    status = int(response.get("status") or 0)
    if status <= 0:
        return None
    post = request.get("postData") or {}
    body = str(post.get("text") or "").encode() if isinstance(post, dict) else b""
    content = response.get("content") or {}
    text = str(content.get("text") or "") if isinstance(content, dict) else ""
    encoded = isinstance(content, dict) and content.get("encoding") == "base64"
    cookie = next(
        (str(h["value"]) for h in request.get("headers") or [] if h["name"].lower() == "cookie"),
        "",
    )
    headers: dict[str, str] = {}
    for header in response.get("headers") or []:
        name, value = str(header["name"]), str(header["value"])
        if name.lower() in DROPPED_HEADERS:
            continue
        # several Set-Cookie headers are joined by newlines (Playwright's fulfill splits them)
        headers[name] = f"{headers[name]}\n{value}" if name in headers else value
    return Entry(
        method=str(request.get("method", "GET")).upper(),
        url=str(request.get("url", "")),
        body=body,
        state=state,
        status=status,
        headers=headers,
        content=base64.b64decode(text) if encoded else text.encode(),
        cookie=cookie,
    )


def is_live(url: str, live: frozenset[str]) -> bool:
    """Is `url` on a host the operator lets replays reach (by name, or name:port)?"""
    if not live:
        return False
    where = netloc(url)
    return where in live or where.rsplit(":", 1)[0].strip("[]") in live


def verifiable(task: TaskSpec, config: PipelineConfig) -> bool:
    """Would a success of this task be verified by replays (annotation.verify)? Only such an
    episode records its traffic: no other pays for it."""
    return config.annotation.verify is not None and task.check is not None


def recording_path() -> Path:
    """Where an episode's traffic is recorded: a file of its own in the temporary folder, that
    Playwright writes when the context closes (a process killed before that leaves nothing)."""
    return Path(tempfile.gettempdir()) / f"datagen-episode-{uuid.uuid4().hex}.har"


def discard_recording(out: EpisodeOutcome) -> None:
    """Remove an episode's recorded traffic (once verified, or when there is nothing to)."""
    if out.recording is not None:
        out.recording.unlink(missing_ok=True)
        out.recording = None
