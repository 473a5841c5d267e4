"""The URL guard against a page trying to reach a loopback service and the cloud metadata
address: top-level, redirects, iframes, fetch/XHR, images, WebSockets and DNS names."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from datagen.browser.session import BrowserHost, NavigationFailed
from datagen.config import BrowserConfig

pytestmark = pytest.mark.browser


class Recorder(http.server.ThreadingHTTPServer):
    """A loopback service that must never be reached: it counts every hit."""

    hits: list[str]


def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> Recorder:
    server = Recorder(("127.0.0.1", 0), handler)
    server.hits = []
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Secret(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"internal secret")


ATTACKS = {
    "iframe": '<iframe src="{secret}/iframe"></iframe>',
    "fetch": '<script>fetch("{secret}/fetch").catch(() => 0); fetch("http://169.254.169.254/latest/meta-data/").catch(() => 0)</script>',
    "xhr": '<script>const x = new XMLHttpRequest(); x.open("GET", "{secret}/xhr"); x.send()</script>',
    "img": '<img src="{secret}/img.png">',
    "dns": '<script>fetch("{dns}/dns").catch(() => 0)</script>',
    "ws": '<script>try {{ new WebSocket("{ws}/ws") }} catch (e) {{}}</script>',
    "redirect-sub": '<img src="/redirect?to={secret}/via-redirect.png">',
    # (a file: iframe inside an http page is refused by Chromium itself before any request)
}


def attacker(secret_port: int) -> type[http.server.BaseHTTPRequestHandler]:
    secret = f"http://127.0.0.1:{secret_port}"

    class Attacker(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", parse_qs(parts.query)["to"][0])
                self.end_headers()
                return
            kind = parts.path.strip("/")
            body = ATTACKS.get(kind, "<p>hello</p>").format(
                secret=secret,
                dns=f"http://localhost:{secret_port}",
                ws=f"ws://127.0.0.1:{secret_port}",
            )
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(f"<!doctype html><title>{kind}</title>{body}".encode())

    return Attacker


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Recorder, Recorder]]:
    secret = serve(Secret)
    site = serve(attacker(secret.server_address[1]))
    yield secret, site
    for server in (secret, site):
        server.shutdown()


def visit(browser_plugin, host: BrowserHost, urls: list[str]) -> list[tuple[str, list[str]]]:  # type: ignore[no-untyped-def]
    async def scenario() -> list[tuple[str, list[str]]]:
        await host.start()
        out = []
        try:
            for url in urls:
                async with host.session() as session:
                    try:
                        await session.goto(url)
                        await session.page.wait_for_timeout(300)  # let scripts and frames fire
                        out.append(("ok", list(session.events.blocked)))
                    except NavigationFailed as exc:
                        out.append(
                            (f"failed blocked={exc.blocked}: {exc}", list(session.events.blocked))
                        )
            assert host.egress is not None
            out.append(("egress", list(host.egress.blocked)))  # what the proxy refused
        finally:
            await host.close()
        return out

    return browser_plugin.run(scenario())  # type: ignore[no-any-return]


def test_pages_cannot_reach_loopback_or_metadata(browser_plugin, servers) -> None:  # type: ignore[no-untyped-def]
    secret, site = servers
    origin = f"127.0.0.1:{site.server_address[1]}"
    host = BrowserHost(BrowserConfig(), allow=[origin])
    pages = [f"http://{origin}/{kind}" for kind in ATTACKS]
    *results, (_, egress) = visit(browser_plugin, host, pages)
    assert secret.hits == []  # nothing reached the internal service
    blocked = dict(zip(ATTACKS, (b for _, b in results), strict=True))
    for kind, reasons in blocked.items():
        if kind != "redirect-sub":
            assert reasons, f"{kind}: nothing was blocked"
    assert any("169.254.169.254" in r for r in blocked["fetch"])
    assert any("localhost" in r for r in blocked["dns"])
    # A redirect hop of a sub-request never reaches a route handler: the egress proxy stops it.
    assert blocked["redirect-sub"] == [] and any(
        f"127.0.0.1:{secret.server_address[1]}" in r for r in egress
    )
    assert any(r.startswith("ws://") or "ws" in r for r in blocked["ws"])


def test_start_urls_are_guarded_too(browser_plugin, servers) -> None:  # type: ignore[no-untyped-def]
    secret, site = servers
    origin = f"127.0.0.1:{site.server_address[1]}"
    host = BrowserHost(BrowserConfig(), allow=[origin])
    starts = [
        f"http://127.0.0.1:{secret.server_address[1]}/",
        "http://169.254.169.254/latest/meta-data/",
        f"http://{origin}/redirect?to=http://127.0.0.1:{secret.server_address[1]}/top-redirect",
        "file:///etc/passwd",
        "data:text/html,<h1>hi</h1>",
    ]
    *results, _ = visit(browser_plugin, host, starts)
    assert secret.hits == []
    outcomes = [outcome for outcome, _ in results]
    assert all(o.startswith("failed") for o in outcomes), outcomes
    # every one a block: the redirect hop too, refused by the egress proxy, which says why
    assert [o.startswith("failed blocked=True") for o in outcomes] == [True] * 5, outcomes
    assert "not a public address" in outcomes[2]


def test_allow_list_opens_what_a_pipeline_needs(browser_plugin, servers) -> None:  # type: ignore[no-untyped-def]
    secret, site = servers
    origins = [f"127.0.0.1:{site.server_address[1]}", f"127.0.0.1:{secret.server_address[1]}"]
    host = BrowserHost(BrowserConfig(), allow=origins)
    results = visit(
        browser_plugin, host, [f"http://{origins[0]}/iframe", f"http://{origins[0]}/fetch"]
    )
    assert "/iframe" in secret.hits and "/fetch" in secret.hits  # allowed, so reached
    assert any("169.254.169.254" in r for r in results[1][1])  # the rest stays blocked
    secret.hits.clear()
