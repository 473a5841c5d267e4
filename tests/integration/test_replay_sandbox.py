"""An episode's replays share one browser context (pipeline/sandbox.py): each must meet it as
new as a fresh one, on real Chromium.

A page that keeps state in every store a page can write (a cookie, local and session storage,
IndexedDB, Cache Storage, `window.name`, the tab's history) reads them at load, then writes
them. Three replays in one ReplayContext each read what a fresh context reads: nothing. What
the page sends as it is left (a beacon on pagehide) is counted, refused, on the requests.
The context outlives its episode, on the browser's shelf: the next episode's replays meet it
as new too, even at an origin only the earlier episode's recording named.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from playwright.async_api import Frame, Request, Route, WebSocketRoute

from datagen.browser.host import BrowserHost
from datagen.config import BrowserConfig
from datagen.pipeline.sandbox import KEEP, ReplayContext, shelf_of, shelved
from tests.helpers import closed_port

pytestmark = pytest.mark.browser

# nothing listens there: every answer comes from the router (not a port Chromium refuses)
ORIGIN = f"http://127.0.0.1:{closed_port()}"
PAGE = """<!doctype html><title>loading</title><script>
const found = {cookie: document.cookie, local: localStorage.getItem('k'),
  session: sessionStorage.getItem('k'), name: window.name, history: history.length};
localStorage.setItem('k', '1'); sessionStorage.setItem('k', '1');
document.cookie = 'k=1; path=/; max-age=3600'; window.name = 'dirty';
addEventListener('pagehide', () => navigator.sendBeacon('/bye', 'left'));
caches.open('c').then(c => c.keys()).then(keys => { found.cache = keys.length;
  return caches.open('c').then(c => c.put('/x', new Response('x'))); }).then(() => {
  const open = indexedDB.open('db', 1);
  open.onupgradeneeded = () => open.result.createObjectStore('s');
  open.onsuccess = () => { const store = open.result.transaction('s', 'readwrite')
      .objectStore('s'); const got = store.get('k');
    got.onsuccess = () => { found.idb = got.result ?? null; store.put('1', 'k');
      store.transaction.oncomplete = () => { document.title = JSON.stringify(found); }; }; };
});
</script>"""


class PageRouter:
    """Answers the page from memory and refuses the rest, counting both (as ReplayRouter)."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, str, str]] = Counter()

    async def handle(self, route: Route, request: Request) -> None:
        key = (request.resource_type, request.method, request.url.split("/")[2])
        if request.method == "GET" and request.url.endswith("/page"):
            self.requests[("answered", *key)] += 1
            await route.fulfill(body=PAGE, content_type="text/html")
        else:
            self.requests[("refused", *key)] += 1
            await route.abort()

    async def socket(self, socket: WebSocketRoute) -> None:
        await socket.close()


async def replays(n: int) -> tuple[list[dict[str, Any]], ReplayContext]:
    host = BrowserHost(BrowserConfig(), allow=["127.0.0.1"])
    await host.start()
    sandbox = ReplayContext(host, frozenset(), [f"{ORIGIN}/page"])
    found = []
    try:
        for _ in range(n):
            session = await sandbox.start(PageRouter())
            await session.goto(f"{ORIGIN}/page")
            await session.page.wait_for_function("document.title.startsWith('{')")
            found.append(json.loads(await session.page.title()))
        await sandbox.close()
    finally:
        await host.close()
    return found, sandbox


def test_each_replay_meets_the_context_as_new() -> None:
    found, sandbox = asyncio.run(replays(3))

    fresh = found[0]  # the context as Chromium opens it
    assert fresh == {
        "cookie": "",
        "local": None,
        "session": None,
        "name": "",
        "history": fresh["history"],
        "cache": 0,
        "idb": None,
    }
    assert found[1:] == [fresh, fresh]  # nothing an earlier replay wrote was there
    assert sandbox.opened == 1  # one context for the three: it was wiped, not reopened
    answered = sum(n for key, n in sandbox.requests.items() if key[0] == "answered")
    assert answered == 3
    # the beacon each page sends as a wipe leaves it: not routed (Chromium sends beacons past
    # Playwright's routes), refused by the seal and counted
    beacons = sum(
        n for (fate, kind, method, _), n in sandbox.requests.items() if kind == "unrouted"
    )
    assert beacons >= 2 and sandbox.requests.keys() <= {
        ("answered", "document", "GET", ORIGIN.split("/")[2]),
        ("refused", "unrouted", "POST", ORIGIN.split("/")[2]),
    }, sandbox.requests


async def episodes() -> tuple[list[list[dict[str, Any]]], list[ReplayContext], list[int]]:
    """Two episodes' replays one after the other on one browser; the second's recording names
    another origin (what a wipe of its own origins alone would leave at ORIGIN). Last of the
    counts: the page's navigations to about:blank."""
    host = BrowserHost(BrowserConfig(), allow=["127.0.0.1"])
    await host.start()
    found: list[list[dict[str, Any]]] = []
    sandboxes, in_flight, blank = [], [], [0]

    def left(frame: Frame) -> None:
        blank[0] += frame.parent_frame is None and frame.url == "about:blank"

    try:
        for urls in ([f"{ORIGIN}/page"], ["http://127.0.0.1:9/elsewhere"]):
            sandbox = ReplayContext(host, frozenset(), urls)
            sandboxes.append(sandbox)
            found.append([])
            for _ in range(2):
                session = await sandbox.start(PageRouter())
                if not sandboxes[1:] and not found[0]:  # one page for both: the shelved one
                    session.page.on("framenavigated", left)
                in_flight.append(host.admission.in_flight)
                await session.goto(f"{ORIGIN}/page")
                await session.page.wait_for_function("document.title.startsWith('{')")
                found[-1].append(json.loads(await session.page.title()))
            await sandbox.close()
            in_flight.append(host.admission.in_flight)
        on_shelf = shelved(host)
    finally:
        await host.close()
    assert not shelf_of(host).idle  # closed with the browser
    return found, sandboxes, [*in_flight, on_shelf, blank[0]]


def test_the_next_episode_meets_a_shelved_context_as_new() -> None:
    found, (first, second), counts = asyncio.run(episodes())

    fresh = found[0][0]
    assert fresh["cookie"] == "" and fresh["local"] is None and fresh["idb"] is None
    assert found[0][1] == fresh
    # the earlier episode's origin was wiped too, though this recording does not name it
    assert found[1] == [fresh, fresh]
    assert (first.opened, first.reused) == (1, 0)
    assert (second.opened, second.reused) == (0, 1)  # the first's context, from the shelf
    # a context is a session in flight while an episode holds it, not on the shelf
    assert counts[:-2] == [1, 1, 0, 1, 1, 0] and counts[-2] == 1 <= KEEP
    # each episode's page leaves for about:blank before its second replay and as it closes;
    # the shelved page is already there, and the second episode's first wipe leaves it be
    assert counts[-1] == 4
    for sandbox in (first, second):
        assert {fate for fate, *_ in sandbox.requests} <= {"answered", "refused"}
        answered = sum(n for key, n in sandbox.requests.items() if key[0] == "answered")
        assert answered == 2
