"""A start URL the network cannot serve is the network's answer, not a security block: a name
that does not resolve is `dns_failed`, a host that refuses the connection `unreachable`, with
the URL guard on (its check, the egress proxy) and with it off (Chromium's own errors). What the guard refuses stays `blocked_url`; `localhost` and the loopback
addresses in `browser.allow` cover each other in the guard and in the egress proxy."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from datagen.browser.egress import REASON_HEADER
from datagen.browser.host import BrowserHost
from datagen.browser.navigation import NavigationFailed
from datagen.config import BrowserConfig
from datagen.records import TaskSpec
from tests.helpers import Local, ReadyPlugin, closed_port, eventually, make_config

pytestmark = pytest.mark.browser
NO_SUCH_HOST = "no-such-host.invalid"  # .invalid never resolves (RFC 6761)


class _Pages(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", parse_qs(parts.query)["to"][0])
            self.end_headers()
            return
        body = f'<!doctype html><title>ok</title><img src="http://{NO_SUCH_HOST}/x.png">'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """A loopback server: pages, and redirects (`/redirect?to=URL`). Yields its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield str(server.server_address[1])
    server.shutdown()


def outcomes(
    browser_plugin: ReadyPlugin, config: BrowserConfig, allow: list[str], urls: list[str]
) -> list[str]:
    """Each start URL's outcome on a fresh browser: "ok", or the reject reason and message."""

    async def scenario() -> list[str]:
        host = BrowserHost(config, allow=allow)
        await host.start()
        out = []
        try:
            for url in urls:
                async with host.session() as session:
                    try:
                        await session.goto(url)
                        out.append("ok")
                    except NavigationFailed as exc:
                        out.append(f"{exc.reason.value}: {exc}")
        finally:
            await host.close()
        return out

    return browser_plugin.run(scenario())


def test_dns_and_refused_connections_have_their_own_reasons(
    browser_plugin: ReadyPlugin, site: str
) -> None:
    closed = closed_port()
    redirect = f"http://127.0.0.1:{site}/redirect?to="
    urls = [
        f"http://{NO_SUCH_HOST}/",
        f"https://{NO_SUCH_HOST}/",
        f"{redirect}http://{NO_SUCH_HOST}/hop",  # a redirect hop: the proxy's answer
        f"http://127.0.0.1:{closed}/",  # refused: the proxy's 502
        f"https://127.0.0.1:{closed}/",  # refused CONNECT: Chromium only says "tunnel failed"
        "http://169.254.169.254/latest/meta-data/",  # the guard's own refusals stay blocks
        f"{redirect}http://169.254.169.254/hop",
    ]
    guarded = outcomes(browser_plugin, BrowserConfig(), ["127.0.0.1"], urls)
    reasons = [o.split(":")[0] for o in guarded]
    assert reasons == [
        "dns_failed",
        "dns_failed",
        "dns_failed",
        "unreachable",
        "unreachable",
        "blocked_url",
        "blocked_url",
    ], guarded
    assert f"cannot resolve {NO_SUCH_HOST}" in guarded[0]
    assert "browser.allow" not in " ".join(guarded[:5])  # nothing sends users to the allow list

    unguarded = outcomes(browser_plugin, BrowserConfig(url_guard=False), [], urls[:5])
    assert [o.split(":")[0] for o in unguarded] == [
        "dns_failed",
        "dns_failed",
        "dns_failed",
        "unreachable",
        "unreachable",
    ], unguarded
    assert "ERR_NAME_NOT_RESOLVED" in unguarded[0] and "ERR_CONNECTION_REFUSED" in unguarded[3]


def test_an_unresolvable_sub_request_is_no_blocked_request(
    browser_plugin: ReadyPlugin, site: str
) -> None:
    """The page's image of a host without addresses gets the egress proxy's own answer, 502
    with `dns_failed` (a proxy cannot make Chromium say ERR_NAME_NOT_RESOLVED), and nothing is
    recorded as blocked."""

    async def scenario() -> tuple[list[str], list[tuple[str, int, str]]]:
        host = BrowserHost(BrowserConfig(), allow=[f"127.0.0.1:{site}"])
        await host.start()
        try:
            async with host.session() as session:
                answers: list[tuple[str, int, str]] = []
                session.page.on(
                    "response",
                    lambda r: answers.append((r.url, r.status, r.headers.get(REASON_HEADER, ""))),
                )
                await session.goto(f"http://127.0.0.1:{site}/page")
                # 300 ms at the least (a block has as long as ever to show), and until the
                # proxy answered the image (asserted below), which a loaded machine can take
                # longer to do
                await asyncio.gather(
                    asyncio.sleep(0.3),
                    eventually(lambda: any(NO_SUCH_HOST in url for url, *_ in answers)),
                )
                return list(session.events.blocked), answers
        finally:
            await host.close()

    blocked, answers = browser_plugin.run(scenario())
    image = [(status, why) for url, status, why in answers if NO_SUCH_HOST in url]
    assert blocked == [] and image == [(502, "dns_failed")], (blocked, answers)


def test_localhost_and_loopback_allow_entries_cover_each_other(
    browser_plugin: ReadyPlugin, site: str
) -> None:
    names = [f"http://127.0.0.1:{site}/", f"http://localhost:{site}/", f"http://[::1]:{site}/"]
    for entry in (f"localhost:{site}", f"127.0.0.1:{site}", f"[::1]:{site}"):
        got = outcomes(browser_plugin, BrowserConfig(), [entry], names)
        # the site listens on 127.0.0.1 only: [::1] is refused by the network, never blocked
        assert got[:2] == ["ok", "ok"] and got[2].split(":")[0] in ("ok", "unreachable"), got
    other_port = outcomes(browser_plugin, BrowserConfig(), [f"localhost:{closed_port()}"], names)
    assert all(o.startswith("blocked_url") for o in other_port), other_port


def test_a_dns_failure_is_the_tasks_dns_failed_reject(local: Local, tmp_path: Path) -> None:
    task = TaskSpec(id="nowhere", start_url=f"https://{NO_SUCH_HOST}/", instruction="x")
    for guard in (True, False):
        config = make_config(tmp_path, browser={"url_guard": guard})
        # unguarded: a browser of the runner's own (the plugin's has its guard on)
        outcome = local.episode(config, task, run_id="run", fresh_browser=not guard)
        assert [(r.stage, r.reason) for r in outcome.rejects] == [("task", "dns_failed")], guard
        assert outcome.episode is None
