"""Hosts as a resource (issue 27, items 1, 2 and 6): local servers stand in for named hosts
(`*.test` → 127.0.0.1 through Chromium's --host-resolver-rules; the URL guard off, since its
egress proxy would resolve the names itself). Every figure is the server's own: its request
log, on its own clock; no assertion on how long anything took.

- 40 tasks on one host with max_sessions_per_host 2: never more than 2 sessions on it at once;
- a host that answers 429 with Retry-After: its request rate drops after the first 429;
- a host that always fails (HTTP 500): blocked after block_after failures, its remaining
  tasks end as host_blocked rejects without a browser session;
- robots.txt: a disallowed start URL is a robots_disallowed reject, fetched once.
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read
from tests.hostsites import Log, run, serve, tasks

pytestmark = pytest.mark.browser


@pytest.fixture
def stand_in() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(log: Log) -> int:
        server, port = serve(log)
        servers.append(server)
        return port

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.slow  # a long scenario: CI's second step (scripts/test.sh -m slow)
def test_forty_tasks_on_one_host_never_hold_more_than_two_sessions(
    tmp_path: Path, chromium: str, stand_in: Any
) -> None:
    log = Log()
    port = stand_in(log)
    hosts = {"max_sessions_per_host": 2, "max_requests_per_second": 200}
    result, book, sessions = run(tmp_path, chromium, hosts, tasks("shop.test", port, 40))
    assert result.episodes == 40, result
    assert sessions == 40
    figures = book.figures()["shop.test"]
    assert log.concurrency() == 2, log.concurrency()  # reached, never passed (8 slots free)
    assert figures["peak_sessions"] == 2 and figures["waits"] > 0, figures


@pytest.mark.slow  # a long scenario: CI's second step (scripts/test.sh -m slow)
def test_a_host_answering_429_is_slowed_down(tmp_path: Path, chromium: str, stand_in: Any) -> None:
    log = Log(mode="slow", slow_at=40, ping_ms=100)
    port = stand_in(log)
    limit = 10.0
    hosts = {"max_sessions_per_host": 2, "max_requests_per_second": limit}
    result, book, _ = run(tmp_path, chromium, hosts, tasks("busy.test", port, 8, wait_s=0.6))
    assert result.episodes == 8, result
    first = next(at for at, _, _, status in log.lines if status == 429)
    before = [at for at, *_ in log.lines if at < first]
    after = [at for at, *_ in log.lines if at > first]
    rate_before = (len(before) - 1) / (before[-1] - before[0])
    rate_after = (len(after) - 1) / (after[-1] - first)  # from the 429: its pause counts
    # Spaced 1/rate apart by the book: never above the limit (10% for the server's clock
    # against the browser's); after the 429, half of it (5/s) at most, with the same margin.
    assert rate_before <= limit * 1.1, rate_before
    assert rate_after <= limit / 2 * 1.1, (rate_before, rate_after)
    assert book.figures()["busy.test"]["slowed"] == 1
    print(f"busy.test: {rate_before:.2f} req/s before the 429, {rate_after:.2f} after")


def test_a_failing_host_is_blocked_and_its_other_tasks_open_no_session(
    tmp_path: Path, chromium: str, stand_in: Any
) -> None:
    log = Log(mode="fail")
    port = stand_in(log)
    hosts = {"max_sessions_per_host": 1, "block_after": 3, "respect_robots_txt": False}
    result, book, sessions = run(tmp_path, chromium, hosts, tasks("down.test", port, 10))
    rejects = read(tmp_path / "out", "rejects", 0)
    reasons = [r["reason"] for r in rejects]
    assert reasons.count("navigation_failed") == 3 and reasons.count("host_blocked") == 7
    assert sessions == 3  # the 7 blocked tasks opened no browser session
    assert len([line for line in log.lines if line[1] == "/page"]) == 3  # the server's count
    blocked = next(r for r in rejects if r["reason"] == "host_blocked")
    assert "down.test" in blocked["detail"] and "HTTP 500" in blocked["detail"]
    figures = book.figures()["down.test"]
    assert figures["blocked"] and figures["host_blocked_rejects"] == 7
    assert result.reject_reasons == {"navigation_failed": 3, "host_blocked": 7}


def test_robots_txt_is_fetched_once_and_disallows_start_urls(
    tmp_path: Path, chromium: str, stand_in: Any
) -> None:
    log = Log(robots="User-agent: *\nDisallow: /page\n")
    port = stand_in(log)
    hosts = {"max_sessions_per_host": 1}
    result, _, _ = run(tmp_path, chromium, hosts, tasks("private.test", port, 4))
    assert result.reject_reasons == {"robots_disallowed": 4}
    assert [line[1] for line in log.lines] == ["/robots.txt"]  # once, and no page loaded


def test_host_limits_count_per_site_on_the_public_suffix_list(
    tmp_path: Path, chromium: str, stand_in: Any
) -> None:
    """Issue 37: a host's book is its site by the Public Suffix List. Two github.io tenants are
    two hosts (alice's failures block alice, not bob), and so are two k12.ca.us schools (the
    hand-written suffix lists before made both `ca.us`); a.example.co.uk and b.example.co.uk are
    one (a's failures block b). Every name resolves to the stand-ins on 127.0.0.1 in Chromium
    (no DNS, no network); robots.txt is off, so nothing else asks for a name."""
    # bob's and other's pages do not ping: their sessions are not measured here
    down, up = stand_in(Log(mode="fail")), stand_in(Log(ping_ms=0))
    todo = [
        *tasks("alice.github.io", down, 3, wait_s=0.1),
        *tasks("bob.github.io", up, 2, wait_s=0.1),
        *tasks("a.example.co.uk", down, 2, wait_s=0.1),
        *tasks("b.example.co.uk", down, 2, wait_s=0.1),
        *tasks("school.k12.ca.us", down, 2, wait_s=0.1),
        *tasks("other.k12.ca.us", up, 1, wait_s=0.1),
    ]
    hosts = {"max_sessions_per_host": 1, "block_after": 2, "respect_robots_txt": False}
    every_name_here = {"extra_args": ["--host-resolver-rules=MAP * 127.0.0.1"]}
    result, book, _ = run(tmp_path, chromium, hosts, todo, browser=every_name_here)
    figures = book.figures()
    sites = {"alice.github.io", "bob.github.io", "example.co.uk"}
    assert set(figures) == sites | {"school.k12.ca.us", "other.k12.ca.us"}, figures
    assert figures["alice.github.io"]["blocked"] and figures["example.co.uk"]["blocked"]
    assert not figures["bob.github.io"]["blocked"]
    assert all(f["peak_sessions"] == 1 for f in figures.values()), figures
    reasons: dict[str, list[str]] = {}
    for row in read(tmp_path / "out", "rejects", 0):
        reasons.setdefault(row["task_id"].rpartition("-")[0], []).append(row["reason"])
    assert "bob.github.io" not in reasons  # bob's tasks ran: alice's block is alice's alone
    assert "other.k12.ca.us" not in reasons and figures["school.k12.ca.us"]["blocked"]
    assert sorted(reasons["alice.github.io"]) == ["host_blocked", *["navigation_failed"] * 2]
    one_site = reasons["a.example.co.uk"] + reasons.get("b.example.co.uk", [])
    assert sorted(one_site) == [*["host_blocked"] * 2, *["navigation_failed"] * 2]
    assert result.reject_reasons == {"navigation_failed": 6, "host_blocked": 3}
