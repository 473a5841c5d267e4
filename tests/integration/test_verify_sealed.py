"""Verification that is sealed and sound, on real Chromium and pages of this module's own
server (issue 41):

- a shop whose order page has one side channel of each kind (a shared worker's POST, a
  dedicated worker's WebSocket, a beacon on pagehide, a GET with a cache-buster and a side
  effect, a GET form whose hidden field holds Date.now()): no replay's request reaches the
  server, and each is on the episode (`verify_requests`);
- a cart kept on the server under a session cookie: "Buy now" alone is not answered with the
  recorded "Order placed" (the cart is empty there): the needed path is Add to cart, Buy now;
- `max_replays` runs out: nothing is called needed that no replay decided, and the episode
  gives no task-labelled sample;
- a list whose filter click shifts the later items: the replay clicks the episode's element
  where it is now, so the filter click is not needed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType, web

from datagen.records import Click, SuccessCheck, TaskSpec
from tests.aioserve import LoopServer
from tests.helpers import Local, ReadyPlugin, make_config, read, set_up
from tests.integration.test_verify_site import STYLE, samples, steps_of

pytestmark = pytest.mark.browser

# Every request of the page carries the `ctx` cookie its script set: a new random value in each
# browser context, so the server tells the episode's requests from any replay's.
CTX = (
    "<script>document.cookie = 'ctx=' + Math.random().toString(36).slice(2) + '; path=/';</script>"
)
SIDE = f"""<!doctype html><title>side channels</title>{STYLE}{CTX}
<button style="left:20px;top:20px" onclick="document.title = 'noise'">Noise</button>
<button style="left:20px;top:100px" onclick="channels()">Start order</button>
<form method="get" action="/order" id="form" hidden><input type="hidden" name="ts" id="ts">
  <button style="left:20px;top:180px">Place order</button></form>
<script>
document.getElementById('ts').value = Date.now();
function channels() {{
  document.getElementById('form').hidden = false;  // the order is placed after starting it
  fetch('/w?_=' + Date.now());
  new SharedWorker('/shared.js').port.start();
  new Worker('/worker.js');
  addEventListener('pagehide', () => navigator.sendBeacon('/beacon', 'bye'));
}}
</script>"""
SHARED_JS = "fetch('/sw', {method: 'POST', body: 'from a shared worker'});"
WORKER_JS = (
    "const ws = new WebSocket('ws://' + location.host + '/ws'); ws.onopen = () => ws.send('hi');"
)
CART = f"""<!doctype html><title>cart</title>{STYLE}
<button style="left:20px;top:20px" onclick="document.title = 'details'">Details</button>
<form method="post" action="/add"><input type="hidden" name="item" value="widget">
  <button style="left:20px;top:100px">Add to cart</button></form>
<form method="post" action="/buy"><button style="left:20px;top:180px">Buy now</button></form>
"""
AGREE = f"""<!doctype html><title>agree</title>{STYLE}
<button style="left:20px;top:20px" onclick="document.title = 'noise'">Noise</button>
<button style="left:20px;top:100px" onclick="document.body.dataset.agreed = 'yes'">Agree</button>
<button style="left:20px;top:180px" onclick="document.body.dataset.sent =
  document.body.dataset.agreed === 'yes' ? 'agreed' : 'refused'">Submit</button>
"""
# The Active filter hides the done items: the rows below move up, and a click recorded on
# "C" after filtering falls on "B" in the unfiltered list.
LIST = """<!doctype html><title>list</title>
<style>body{margin:0;font:16px sans-serif} ul{position:absolute;top:100px;left:0;margin:0;
padding:0;list-style:none} li{height:40px} li button{width:200px;height:36px}
.filter{position:absolute;top:20px;width:160px;height:40px} .done{text-decoration:line-through}
body.active li.done{display:none}</style>
<button class="filter" style="left:20px" onclick="document.body.classList.add('active')">Active
</button>
<ul><li class="done"><button onclick="done(this)">Finish A</button></li>
<li><button onclick="done(this)">Finish B</button></li>
<li><button onclick="done(this)">Finish C</button></li></ul>
<script>function done(b) { b.parentElement.classList.add('done');
  document.body.dataset[b.textContent.trim().slice(-1)] = 'done'; }</script>
"""


class Shop(LoopServer):
    """The module's pages on an aiohttp server of its own loop, and what reached it."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()  # channel -> requests
        self.contexts: dict[str, set[str]] = {}  # channel -> the ctx cookies its requests had
        self.carts: dict[str, int] = {}
        self.orders = 0
        super().__init__()

    @property
    def origin(self) -> str:
        return f"127.0.0.1:{self.port}"

    def routes(self, app: web.Application) -> None:
        pages = {"/side": SIDE, "/agree": AGREE, "/list": LIST}
        for path, body in pages.items():
            app.router.add_get(path, self._page(body))
        app.router.add_get("/shared.js", self._script(SHARED_JS))
        app.router.add_get("/worker.js", self._script(WORKER_JS))
        app.router.add_get("/ws", self._socket)
        app.router.add_route("*", "/{channel:(w|sw|beacon|order)}", self._channel)
        app.router.add_get("/cart", self._cart)
        app.router.add_post("/add", self._add)
        app.router.add_post("/buy", self._buy)

    def _seen(self, channel: str, request: web.Request) -> None:
        self.hits[channel] += 1
        self.contexts.setdefault(channel, set()).add(request.cookies.get("ctx", ""))

    @staticmethod
    def _page(body: str) -> Any:
        async def page(request: web.Request) -> web.Response:
            return web.Response(text=body, content_type="text/html")

        return page

    @staticmethod
    def _script(body: str) -> Any:
        async def script(request: web.Request) -> web.Response:
            return web.Response(text=body, content_type="text/javascript")

        return script

    async def _channel(self, request: web.Request) -> web.Response:
        channel = request.match_info["channel"]
        self._seen(channel, request)
        if channel == "order":
            self.orders += 1
            return web.Response(
                text=f"<p>Order placed: #{self.orders}</p>", content_type="text/html"
            )
        return web.Response(text="ok")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        self._seen("ws", request)
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                await socket.send_str("heard")
        return socket

    async def _cart(self, request: web.Request) -> web.Response:
        sid = request.cookies.get("sid")
        response = web.Response(text=CART, content_type="text/html")
        if sid is None:  # a session cookie; the cart itself is kept here, never in a cookie
            sid = f"s{len(self.carts)}"
            self.carts[sid] = 0
            response.set_cookie("sid", sid, path="/")
        return response

    async def _add(self, request: web.Request) -> web.Response:
        sid = request.cookies.get("sid", "")
        self.carts[sid] = self.carts.get(sid, 0) + 1
        raise web.HTTPSeeOther("/cart")

    async def _buy(self, request: web.Request) -> web.Response:
        sid = request.cookies.get("sid", "")
        if not self.carts.get(sid):
            return web.Response(text="<p>Your cart is empty.</p>", content_type="text/html")
        self.carts[sid] = 0
        self.orders += 1
        return web.Response(text=f"<p>Order placed: #{self.orders}</p>", content_type="text/html")


@pytest.fixture(scope="module")
def shop() -> Iterator[Shop]:
    server = Shop()
    yield server
    server.close()


@pytest.fixture(scope="module")
def plugin(shop: Shop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadyPlugin]:
    from datagen.runtime.plugin import BrowserPlugin

    config = make_config(tmp_path_factory.mktemp("sealed"), browser={"allow": [shop.origin]})
    with set_up(BrowserPlugin(config)) as ready:
        yield ready


def run(plugin: ReadyPlugin, shop: Shop, tmp_path: Path, task: TaskSpec, **verify: Any) -> Path:
    """Run `task` scripted, verified, as one shard; the output folder."""
    config = make_config(
        tmp_path,
        policy={"type": "scripted"},
        run={"max_steps": 8},
        browser={"allow": [shop.origin]},
        annotation={"grounding": False, "verify": verify},
    )
    Local(plugin).run(config, 3, [task], timeout=120)  # a generous watchdog
    return tmp_path / "out"


def test_no_side_channel_of_a_replay_reaches_the_site(
    plugin: ReadyPlugin, shop: Shop, tmp_path: Path
) -> None:
    task = TaskSpec(
        id="side",
        start_url=f"http://{shop.origin}/side",
        instruction="Start the order, then place it.",
        check=SuccessCheck(text_present="Order placed"),
        actions=(Click(x=100, y=40), Click(x=100, y=120), Click(x=100, y=200)),
    )
    out = run(plugin, shop, tmp_path, task)

    (episode,) = read(out, "episodes")
    assert episode["verify_replays"] >= 2, episode["verify_note"]
    # every channel was used by the episode; its requests carry the episode's own context
    assert {"w", "sw", "ws", "order"} <= set(shop.hits), shop.hits
    for channel, contexts in shop.contexts.items():
        assert len(contexts) == 1, (channel, contexts)  # no replay's request got there
    assert shop.hits["order"] == 1 and shop.orders == 1
    assert all(n <= 1 for n in shop.hits.values()), shop.hits
    # what the replays tried is on the episode: the writes and the socket refused
    lines = episode["verify_requests"]
    refused = [line for line in lines if line.startswith("refused ")]
    assert any(" POST " in line for line in refused), lines
    assert any(" WS " in line or " CONNECT " in line for line in refused), lines
    assert episode["verify_network"] == []


def test_a_cart_kept_on_the_server_is_not_free(
    plugin: ReadyPlugin, shop: Shop, tmp_path: Path
) -> None:
    task = TaskSpec(
        id="cart",
        start_url=f"http://{shop.origin}/cart",
        instruction="Buy a widget.",
        check=SuccessCheck(text_present="Order placed"),
        actions=(Click(x=100, y=40), Click(x=100, y=120), Click(x=100, y=200)),
    )
    orders = shop.orders
    out = run(plugin, shop, tmp_path, task)

    assert shop.orders - orders == 1  # the episode's order alone
    (episode,) = read(out, "episodes")
    assert episode["verification"] == "minimal", episode["verify_note"]
    needed = [s["needed"] for s in steps_of(out)["cart"]]
    assert needed == [False, True, True, True]  # Details no; Add to cart, Buy now, done


def test_steps_no_replay_decided_are_not_needed(
    plugin: ReadyPlugin, shop: Shop, tmp_path: Path
) -> None:
    noise, agree, submit = Click(x=100, y=40), Click(x=100, y=120), Click(x=100, y=200)
    task = TaskSpec(
        id="agree",
        start_url=f"http://{shop.origin}/agree",
        instruction="Agree, then submit.",
        check=SuccessCheck(js="document.body.dataset.sent === 'agreed'"),
        actions=(noise, agree, noise, submit),
    )
    out = run(plugin, shop, tmp_path, task, max_replays=3)  # the last 1, 2, then 3 steps

    (episode,) = read(out, "episodes")
    assert episode["verification"] == "reduced", episode["verify_note"]
    assert "max_replays" in episode["verify_note"]
    # the first noise: the last 3 passed without it; agree: the last 2 failed without it; the
    # second noise and submit were never left out, and neither is the done: undecided
    assert [s["needed"] for s in steps_of(out)["agree"]] == [False, True, None, None, None]
    task_samples = [s for s in samples(out) if s["instruction_source"] == "task"]
    assert task_samples == []


def test_a_replay_clicks_the_episodes_element_where_it_is_now(
    plugin: ReadyPlugin, shop: Shop, tmp_path: Path
) -> None:
    task = TaskSpec(
        id="list",
        start_url=f"http://{shop.origin}/list",
        instruction="Finish C.",
        check=SuccessCheck(js="document.body.dataset.C === 'done'"),
        # Active, then C: after filtering, C is on the second row (B's row unfiltered)
        actions=(Click(x=100, y=40), Click(x=100, y=158)),
    )
    out = run(plugin, shop, tmp_path, task)

    (episode,) = read(out, "episodes")
    assert episode["verification"] == "minimal", episode["verify_note"]
    assert [s["needed"] for s in steps_of(out)["list"]] == [False, True, True]
