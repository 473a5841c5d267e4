"""Stand-ins for named web hosts (issue 27): one threaded HTTP server per host on 127.0.0.1,
reached by a name through Chromium's `--host-resolver-rules=MAP *.test 127.0.0.1`. Each keeps
a request log on its own clock, from which tests read sessions at once and requests/s.
`tasks` and `run`: a host's wait tasks, run as one shard on a fresh browser with a book."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from datagen.pipeline import LocalRunner
from datagen.pipeline.hosts import LocalHosts
from datagen.records import TaskSpec, Wait
from tests.helpers import make_config

RESOLVE_TEST_HOSTS = "--host-resolver-rules=MAP *.test 127.0.0.1"

PAGE = """<!doctype html><title>{t}</title><body><h1>task {t}</h1><a href="/page?t={t}">again</a>
{ping}</body>"""
PING = "<script>setInterval(() => fetch('/ping?t={t}').catch(() => {{}}), {every});</script>"


@dataclass
class Log:
    """What a stand-in host saw: (its own monotonic clock, path, task marker, status)."""

    mode: str = "ok"  # ok | fail (fail_status to every page) | slow (429 once, at the nth request)
    robots: str = ""
    robots_status: int = 0  # robots.txt answered with this status (0: 200 with `robots`, or 404)
    robots_hang: bool = False  # robots.txt never answered (until `release` is set)
    robots_bytes: int = 0  # robots.txt of this many bytes (`robots`, then filler), streamed
    slow_at: int = 30
    retry_after: str = "1"  # the 429's Retry-After ("": none)
    fail_status: int = 500
    # A page pings its host each ping_ms while open (what `concurrency` reads); 0: it does not,
    # and so it goes quiet at once: settle waits out its limit on a pinging page every step.
    ping_ms: int = 100
    sent: int = 0  # bytes of robots.txt bodies the server got out (a client may stop reading)
    release: threading.Event = field(default_factory=threading.Event)
    lines: list[tuple[float, str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def concurrency(self) -> int:
        """Most task markers whose requests overlap: a task's session is open at least from
        its first request (the page load) to its last (a ping of its open page)."""
        spans: dict[str, list[float]] = {}
        for at, path, task, _ in self.lines:
            if task and path != "/robots.txt":
                span = spans.setdefault(task, [at, at])
                span[0], span[1] = min(span[0], at), max(span[1], at)
        edges = sorted([(a, 1) for a, _ in spans.values()] + [(b, -1) for _, b in spans.values()])
        most = now = 0
        for _, step in edges:
            now += step
            most = max(most, now)
        return most


def serve(log: Log) -> tuple[ThreadingHTTPServer, int]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            task = parse_qs(parts.query).get("t", [""])[0]
            with log.lock:
                n = len(log.lines)
                status, headers, body = self._answer(parts.path, task, n)
                log.lines.append((time.monotonic(), parts.path, task, status))
            if parts.path == "/robots.txt" and (log.robots_hang or log.robots_bytes):
                self._robots()
                return
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except ConnectionError:  # a page closed while its ping was answered
                pass

        def _robots(self) -> None:
            """A robots.txt that never answers, or a huge one streamed (counted as sent)."""
            if log.robots_hang:
                log.release.wait()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(log.robots_bytes))
            self.end_headers()
            chunk = b"# filler line of a huge robots.txt\n" * 2000
            first, left = log.robots.encode(), log.robots_bytes
            try:
                while left > 0:
                    piece = (first or chunk)[:left]
                    first = b""
                    self.wfile.write(piece)
                    left -= len(piece)
                    with log.lock:
                        log.sent += len(piece)
            except ConnectionError:  # the client stopped reading and closed
                pass

        def _answer(self, path: str, task: str, n: int) -> tuple[int, dict[str, str], bytes]:
            if path == "/robots.txt":
                if log.robots_status:
                    return log.robots_status, {}, b"<html>robots.txt is down</html>"
                return (200 if log.robots else 404), {}, log.robots.encode()
            if log.mode == "fail":
                return log.fail_status, {}, b"down"
            if log.mode == "slow" and n == log.slow_at:
                headers = {"Retry-After": log.retry_after} if log.retry_after else {}
                return 429, headers, b"slow down"
            if path == "/page":
                ping = PING.format(t=task, every=log.ping_ms) if log.ping_ms else ""
                page = PAGE.format(t=task, ping=ping).encode()
                return 200, {"Content-Type": "text/html"}, page
            return 200, {"Content-Type": "text/plain"}, b"pong"

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def tasks(host: str, port: int, n: int, wait_s: float = 0.4) -> list[TaskSpec]:
    return [
        TaskSpec(
            id=f"{host}-{i:02d}",
            start_url=f"http://{host}:{port}/page?t={i}",
            instruction="wait",
            actions=(Wait(seconds=wait_s),),
        )
        for i in range(n)
    ]


def run(
    tmp_path: Path,
    chromium: str,
    hosts: dict[str, Any],
    todo: list[TaskSpec],
    browser: dict[str, Any] | None = None,
    **run: Any,
) -> Any:
    """One shard of `todo` on a fresh browser (the URL guard off, `*.test` names resolved to
    127.0.0.1; `browser` adds keys); (result, the book, sessions the browser opened)."""
    config = make_config(
        tmp_path,
        policy={"type": "scripted"},
        browser={
            "executable": chromium,
            "url_guard": False,
            "extra_args": [RESOLVE_TEST_HOSTS],
            **(browser or {}),
        },
        cluster={"workers": 1, "sessions_per_worker": 8, "dashboard": "127.0.0.1:0"},
        run={"max_steps": 2, "tasks_per_shard": len(todo), "hosts": hosts, **run},
    )
    book = LocalHosts(config.run.hosts)

    async def main() -> Any:
        async with LocalRunner(config, run_id="r", hosts=book) as local:  # its own browser
            assert local.host is not None
            return (await local.run(0, todo)).result, local.host.episodes

    result, sessions = asyncio.run(main())
    return result, book, sessions
