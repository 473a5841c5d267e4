"""The URL guard against a page trying to reach a loopback service and the cloud metadata
address: top-level, redirects, iframes, fetch/XHR, images, WebSockets and DNS names; IPv6
addresses carrying those IPv4 ones, at the egress proxy (what pages load, redirect hops) and
the guard (start URLs); and the proxy's blocks recorded on the episode, its 403 page never a
step."""

from __future__ import annotations

import asyncio
import functools
import http.server
import ipaddress
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from datagen.browser.egress import REASON_HEADER
from datagen.browser.host import BrowserHost
from datagen.browser.navigation import NavigationFailed
from datagen.config import BrowserConfig
from datagen.records import Goto, TaskSpec
from tests.helpers import EMBEDDED, Local, ReadyPlugin, eventually, make_config

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
    # a pop-up is closed at once, but its first load is made, and recorded on the episode
    "popup": '<script>window.open("{secret}/popup")</script>',
    # (a file: iframe inside an http page is refused by Chromium itself before any request)
}
# IPv6 forms of non-public IPv4 addresses: loaded directly and as a redirect hop of a
# sub-request (the egress proxy refuses both)
EMBEDDED_PAGES = {
    "ipv6": "".join(f'<img src="http://[{a}]/x.png">' for a in EMBEDDED.values()),
    "ipv6-hop": "".join(
        f'<img src="/redirect?to=http://[{a}]/hop.png">' for a in EMBEDDED.values()
    ),
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
            body = (ATTACKS.get(kind) or EMBEDDED_PAGES.get(kind, "<p>hello</p>")).format(
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


Done = Callable[[str, list[str]], bool]


def visit(
    browser_plugin: ReadyPlugin,
    host: BrowserHost,
    urls: list[str],
    done: Done = lambda url, blocked: True,
) -> list[tuple[str, list[str]]]:
    """Each URL in its own session: (outcome, what the session blocked). A page that loads is
    left to its scripts and frames for 300 ms and until `done(url, blocked)` (what the test
    then asserts has happened; at most WAIT_S): 300 ms alone a loaded machine could overrun."""

    async def scenario() -> list[tuple[str, list[str]]]:
        await host.start()
        out = []
        try:
            for url in urls:
                async with host.session() as session:
                    try:
                        await session.goto(url)
                        await asyncio.gather(
                            asyncio.sleep(0.3),  # what must not happen has as long as ever
                            eventually(functools.partial(done, url, session.events.blocked)),
                        )
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

    return browser_plugin.run(scenario())


def test_pages_cannot_reach_loopback_or_metadata(
    browser_plugin: ReadyPlugin, servers: tuple[Recorder, Recorder]
) -> None:
    secret, site = servers
    origin = f"127.0.0.1:{site.server_address[1]}"
    host = BrowserHost(BrowserConfig(), allow=[origin])
    pages = [f"http://{origin}/{kind}" for kind in ATTACKS]
    hop = f"127.0.0.1:{secret.server_address[1]}/via-redirect.png"
    wanted = {  # what each page gets blocked, at the least (asserted below)
        "fetch": lambda blocked: any("169.254.169.254" in r for r in blocked),
        "dns": lambda blocked: any("localhost" in r for r in blocked),
        "redirect-sub": lambda blocked: any(hop in r for r in blocked),
    }

    def done(url: str, blocked: list[str]) -> bool:
        return bool(blocked) and wanted.get(url.rsplit("/", 1)[1], bool)(blocked)

    *results, (_, egress) = visit(browser_plugin, host, pages, done)
    assert secret.hits == []  # nothing reached the internal service
    blocked = dict(zip(ATTACKS, (b for _, b in results), strict=True))
    for kind, reasons in blocked.items():
        assert reasons, f"{kind}: nothing was blocked"
    assert any("169.254.169.254" in r for r in blocked["fetch"])
    assert any("localhost" in r for r in blocked["dns"])
    # A redirect hop of a sub-request is followed inside Chromium's network stack: the egress
    # proxy stops it on the connection, and the episode records it like any other refusal.
    assert any(hop in r for r in egress)
    assert blocked["redirect-sub"] == [
        f'127.0.0.1 is not a public address (fix: add "{hop.split("/")[0]}" to browser.allow): '
        f"http://{hop}"
    ]
    assert any(r.startswith("ws://") or "ws" in r for r in blocked["ws"])


def test_start_urls_are_guarded_too(
    browser_plugin: ReadyPlugin, servers: tuple[Recorder, Recorder]
) -> None:
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


def test_allow_list_opens_what_a_pipeline_needs(
    browser_plugin: ReadyPlugin, servers: tuple[Recorder, Recorder]
) -> None:
    secret, site = servers
    origins = [f"127.0.0.1:{site.server_address[1]}", f"127.0.0.1:{secret.server_address[1]}"]
    host = BrowserHost(BrowserConfig(), allow=origins)

    def done(url: str, blocked: list[str]) -> bool:  # what is asserted below has happened
        if url.endswith("/fetch"):
            return "/fetch" in secret.hits and any("169.254.169.254" in r for r in blocked)
        return "/iframe" in secret.hits

    results = visit(
        browser_plugin, host, [f"http://{origins[0]}/iframe", f"http://{origins[0]}/fetch"], done
    )
    assert "/iframe" in secret.hits and "/fetch" in secret.hits  # allowed, so reached
    assert any("169.254.169.254" in r for r in results[1][1])  # the rest stays blocked
    secret.hits.clear()


def addresses(entries: list[str]) -> set[ipaddress.IPv6Address]:
    """The IPv6 addresses named in blocked-request entries (in whatever form each took)."""
    found = re.findall(r"\[([0-9a-f:.]+)\]", " ".join(entries))
    return {ipaddress.IPv6Address(a) for a in found}


async def ask_proxy(proxy: str, request_line: str) -> tuple[str, str]:
    """One request straight to the egress proxy: (status line, its X-Datagen-Egress)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(proxy.rpartition(":")[2]))
    try:
        writer.write(f"{request_line}\r\nHost: x\r\n\r\n".encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    finally:
        writer.close()
    headers = dict(line.lower().split(": ", 1) for line in head[1:] if ": " in line)
    return head[0], headers.get(REASON_HEADER, "")


def test_ipv6_forms_of_blocked_ipv4_addresses_are_refused_by_guard_and_proxy(
    browser_plugin: ReadyPlugin, servers: tuple[Recorder, Recorder]
) -> None:
    secret, site = servers
    origin = f"127.0.0.1:{site.server_address[1]}"
    host = BrowserHost(BrowserConfig(), allow=[origin])
    forms = {ipaddress.IPv6Address(a) for a in EMBEDDED.values()}

    def all_failed(blocked: list[str]) -> bool:
        return addresses(blocked) == forms

    async def scenario() -> tuple[list[str], list[str], list[str], list[tuple[str, str]]]:
        await host.start()
        assert host.egress is not None
        try:
            seen: dict[str, list[str]] = {}
            for kind in EMBEDDED_PAGES:
                async with host.session() as session:
                    await session.goto(f"http://{origin}/{kind}")
                    # 500 ms, as ever, and until every image failed (asserted below): a
                    # loaded machine could take longer
                    await asyncio.gather(
                        asyncio.sleep(0.5),
                        eventually(functools.partial(all_failed, session.events.blocked)),
                    )
                    seen[kind] = list(session.events.blocked)
            starts = []
            for address in EMBEDDED.values():
                async with host.session() as session:
                    try:
                        await session.goto(f"http://[{address}]/latest/meta-data/")
                        starts.append("loaded")
                    except NavigationFailed as exc:
                        starts.append(exc.reason.value)
            answers = []
            for address in EMBEDDED.values():  # straight to the proxy: plain http, and CONNECT
                answers.append(
                    await ask_proxy(host.egress.url, f"GET http://[{address}]/ HTTP/1.1")
                )
                answers.append(
                    await ask_proxy(host.egress.url, f"CONNECT [{address}]:443 HTTP/1.1")
                )
        finally:
            await host.close()
        return seen["ipv6"], seen["ipv6-hop"], starts, answers

    direct, hops, starts, answers = browser_plugin.run(scenario(), timeout=120)
    assert addresses(direct) == forms  # the egress proxy refused every image
    assert addresses(hops) == forms  # the egress proxy refused every hop, recorded on the page
    assert all("not a public address" in entry for entry in direct + hops)
    assert starts == ["blocked_url"] * len(EMBEDDED)
    # before: the proxy dialled them and answered 502 unreachable (no route on this machine)
    assert answers == [("HTTP/1.1 403 Forbidden", "blocked_url")] * (2 * len(EMBEDDED))
    assert secret.hits == []


def test_a_goto_redirected_to_a_blocked_address_is_recorded_and_never_a_step(
    browser_plugin: ReadyPlugin, local: Local, servers: tuple[Recorder, Recorder], tmp_path: Path
) -> None:
    """The egress proxy refuses the redirect hop (http: its 403 page; https: a failed tunnel,
    Chromium's error page): that page is never a step nor the final screen, and the block is
    on the episode, the step reject saying what was blocked."""
    secret, site = servers
    origin = f"http://127.0.0.1:{site.server_address[1]}"
    assert browser_plugin.host.guard is not None
    browser_plugin.host.guard.permit(origin.removeprefix("http://"))
    hops = [
        "http://169.254.169.254/latest/meta-data/",
        "https://169.254.169.254/latest/meta-data/",
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
        f"http://127.0.0.1:{secret.server_address[1]}/secret",  # in the site scope, blocked
    ]
    start = f"{origin}/start"
    gotos = [Goto(url=f"{origin}/redirect?to={hop}") for hop in hops]
    # a step that stays in scope between: four ways back in a row would end it as left_scope
    actions = (*gotos[:2], Goto(url=start), *gotos[2:])
    for scope in ("site", "anywhere"):
        config = make_config(
            tmp_path,
            policy={"type": "scripted"},
            run={"max_steps": len(actions), "scope": scope},  # the last goto: the final look
        )
        task = TaskSpec(id=f"hop-{scope}", start_url=start, instruction="x", actions=actions)
        out = local.episode(config, task, timeout=120)

        assert out.episode is not None, out.rejects
        assert [s.url for s in out.steps] == [start] * len(actions), scope
        assert out.episode.final_url == start and out.episode.status == "max_steps"
        strays = [r for r in out.rejects if r.stage == "step"]
        assert len(strays) == len(hops), strays
        assert all("(blocked: " in r.detail and "not a public address" in r.detail for r in strays)
        blocked = " ".join(out.episode.blocked_requests)
        for hop in hops:
            assert hop in blocked, hop
        assert ["led to" in (s.action_error or "") for s in out.steps] == [1, 1, 0, 1, 1]
    assert secret.hits == []


def test_loopback_stays_behind_the_proxy_whatever_playwrights_environment_says(
    browser_plugin: ReadyPlugin,
    servers: tuple[Recorder, Recorder],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK drops Playwright's own rule that sends
    loopback through the proxy. Ours is given explicitly (`launch_options`): without it, this
    page's fetch went straight to the loopback service, and nothing was blocked."""
    monkeypatch.setenv("PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK", "1")
    secret, site = servers
    origin = f"127.0.0.1:{site.server_address[1]}"
    target = f"127.0.0.1:{secret.server_address[1]}/fetch"
    host = BrowserHost(BrowserConfig(), allow=[origin])

    def done(url: str, blocked: list[str]) -> bool:
        return any(target in r for r in blocked)

    (outcome, blocked), _ = visit(browser_plugin, host, [f"http://{origin}/fetch"], done)
    assert secret.hits == [] and outcome == "ok"
    assert any(target in r and "not a public address" in r for r in blocked), blocked
