"""An action that starts a navigation to another document is observed on the new document,
with no pause after the action (`settle_ms` 0): the settle waits for the page the action
started loading (page_init.js follows the page's `navigate` events), however still the old one
holds meanwhile.

The destinations are served 600 ms late by a server of the test's own, so an observation that
did not wait would show the start page. Which page an observation shows is read from its own
elements and URL; the server's log says the destination was asked for once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from datagen.browser.host import BrowserHost
from datagen.config import BrowserConfig
from datagen.records import Click, Observation
from tests.helpers import ReadyPlugin

pytestmark = pytest.mark.browser

LATE_S = 0.6
START = """<!doctype html><title>Start</title><body style="margin:0;font:16px sans-serif">
<p><a id="link" href="/late?via=link" style="display:inline-block;padding:10px">Follow link</a></p>
<p><button id="script" style="padding:10px"
  onclick="location.href='/late?via=script'">Go by script</button></p>
<form action="/late" method="get"><input type="hidden" name="via" value="form">
  <button id="form" style="padding:10px">Send form</button></form>
<p><a id="nothing" href="/empty" style="display:inline-block;padding:10px">No content</a></p>
</body>"""
LATE = """<!doctype html><title>Arrived</title><body>
<button style="padding:10px">Arrived {via}</button></body>"""


@pytest.fixture(scope="module")
def late_site() -> Iterator[tuple[str, list[str]]]:
    """The start page at once, /late after LATE_S, /empty a 204 (no document comes)."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            asked.append(self.path)
            if self.path.startswith("/late"):
                time.sleep(LATE_S)
                via = self.path.rsplit("=", 1)[-1]
                body = LATE.format(via=via).encode()
            elif self.path == "/empty":
                self.send_response(204)
                self.end_headers()
                return
            else:
                body = START.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def eager_host(
    browser_plugin: ReadyPlugin, late_site: tuple[str, list[str]]
) -> Iterator[BrowserHost]:
    """No pause after an action; a settle limit long enough that only the page's own events end
    it (a loaded machine must not turn a wait into a timeout)."""
    config = BrowserConfig(settle_ms=0, settle_timeout_ms=10_000)
    host = BrowserHost(config, allow=[late_site[0].removeprefix("http://")])
    browser_plugin.run(host.start(), timeout=120)
    try:
        yield host
    finally:
        browser_plugin.run(host.close(), timeout=60)


def centre(obs: Observation, name: str) -> Click:
    [element] = [e for e in obs.elements if e.name == name]
    b = element.box
    return Click(x=b.x + b.width / 2, y=b.y + b.height / 2)


def observe_after(plugin: ReadyPlugin, host: BrowserHost, origin: str, name: str) -> Observation:
    async def scenario() -> Observation:
        async with host.session() as session:
            await session.goto(origin + "/")
            start = await session.observe()
            assert await session.act(centre(start, name)) is None
            return await session.observe()

    return plugin.run(scenario(), timeout=60)


@pytest.mark.parametrize(
    ("name", "via"), [("Follow link", "link"), ("Go by script", "script"), ("Send form", "form")]
)
def test_an_action_that_navigates_is_observed_on_the_new_document(
    browser_plugin: ReadyPlugin,
    eager_host: BrowserHost,
    late_site: tuple[str, list[str]],
    name: str,
    via: str,
) -> None:
    origin, asked = late_site
    obs = observe_after(browser_plugin, eager_host, origin, name)
    assert obs.url.startswith(f"{origin}/late") and obs.url.endswith(f"via={via}"), obs.url
    assert [e.name for e in obs.elements] == [f"Arrived {via}"]
    assert obs.title == "Arrived" and not obs.settle_timed_out
    assert sum(p.startswith("/late") and p.endswith(via) for p in asked) == 1


def test_a_navigation_that_brings_no_document_does_not_hold_the_settle(
    browser_plugin: ReadyPlugin, eager_host: BrowserHost, late_site: tuple[str, list[str]]
) -> None:
    """A 204 leaves the start page in place: the observation is of it, and not a timeout."""
    origin, asked = late_site
    obs = observe_after(browser_plugin, eager_host, origin, "No content")
    assert obs.url == origin + "/" and "No content" in [e.name for e in obs.elements]
    assert not obs.settle_timed_out
    assert "/empty" in asked
