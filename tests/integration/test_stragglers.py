"""A straggler on real Chromium (issue 27, item 4): an episode whose click leads to a page that
never answers is ended by `run.straggler_s` as a `straggler` reject, beside episodes that
finish, and the shard commits without waiting for the slow page (its response is still held
when run_shard returns)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from datagen.browser.host import BrowserHost
from datagen.config import BrowserConfig
from datagen.records import Click, TaskSpec
from tests.helpers import Local, ReadyPlugin, make_config, read

pytestmark = pytest.mark.browser

PAGE = (
    '<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
    '<title>{title}</title></head><body><a href="{href}" style="position:absolute;left:20px;'
    'top:20px;width:120px;height:40px;display:block">Next</a></body></html>'
)


class SlowSite:
    """/fast links to /done; /to-slow links to /slow, which answers only once `release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.slow_answered = 0
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == "/slow":
                    site.release.wait(120)
                    site.slow_answered += 1
                href = {"/fast": "/done", "/to-slow": "/slow"}.get(path, "/done")
                body = PAGE.format(title=path.strip("/"), href=href).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the browser gave up on it

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture(scope="module")
def slow() -> Iterator[SlowSite]:
    site = SlowSite()
    thread = threading.Thread(target=site.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        site.release.set()
        site.server.shutdown()
        site.server.server_close()


@pytest.fixture(scope="module")
def host(browser_plugin: ReadyPlugin, slow: SlowSite) -> Iterator[BrowserHost]:
    browser = BrowserHost(BrowserConfig(allow=[slow.url.removeprefix("http://")]))
    browser_plugin.run(browser.start(), timeout=120)
    try:
        yield browser
    finally:
        browser_plugin.run(browser.close(), timeout=60)


def test_a_straggler_is_ended_and_the_shard_does_not_wait(
    local: Local, host: BrowserHost, slow: SlowSite, tmp_path: Path
) -> None:
    click = (Click(x=80, y=40),)
    tasks = [
        TaskSpec(id="slow", start_url=slow.url + "/to-slow", instruction="x", actions=click),
        *(
            TaskSpec(id=f"fast-{i}", start_url=slow.url + "/fast", instruction="x", actions=click)
            for i in range(3)
        ),
    ]
    # navigation and step limits far above the straggler limit: only it can end the episode;
    # 8 s: at load 30 a fast episode (one click) took over 3 s and was a straggler too
    config = make_config(
        tmp_path,
        policy={"type": "scripted"},
        browser={"navigation_timeout_s": 120, "settle_timeout_ms": 500},
        run={"max_steps": 3, "straggler_s": 8, "step_timeout_s": 120, "episode_timeout_s": 300},
    )
    out = tmp_path / "out"
    result = local.run(config, 3, tasks, timeout=280, run_id="slow", host=host).result

    assert slow.slow_answered == 0  # the shard committed while the slow page still hung
    assert result.reject_reasons.get("straggler") == 1
    (reject,) = [r for r in read(out, "rejects") if r["reason"] == "straggler"]
    assert reject["task_id"] == "slow" and "run.straggler_s" in reject["detail"]
    assert sorted(e["task_id"] for e in read(out, "episodes")) == ["fast-0", "fast-1", "fast-2"]
