"""Replay verification as the site sees it, and labels that hold: on real Chromium, pages of
this module's own server.

- a shop whose three buttons are POST forms (an order needs the cart cookie): one verified
  purchase places one order; replays are answered from the episode's recorded traffic, and the
  episode says what they sent (`annotation.verify.live` lets them reach a host on purpose);
- a page slow only on later loads: verification stays inside `run.episode_timeout_s`;
- a page that deals a new problem after a wrong answer, with `fail` declared: the episode ends
  at the wrong answer and nothing of it carries the task's instruction;
- tabs where the same spot holds "Delete one" or "Delete all": a replay whose click lands on
  another element is no reproduction; a replay that meets the task's `fail` check neither;
- "Select Pears and submit." after checking Apples too: the task-labelled samples show the
  minimal path's own screens (Apples unchecked);
- a page that sends a message over a WebSocket on load: only the episode's reaches the server.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from PIL import Image

from datagen.export import parse_options
from datagen.export.sft import sft_rows
from datagen.export.source import read_shard
from datagen.records import Click, SuccessCheck, TaskSpec
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import read_markers
from tests.aioserve import LoopServer
from tests.helpers import Local, ReadyPlugin, make_config, read, set_up

pytestmark = pytest.mark.browser

STYLE = (
    "<style>body{margin:0;font:16px sans-serif} button{position:absolute;width:160px;"
    "height:40px}</style>"
)
SHOP = f"""<!doctype html><title>shop</title>{STYLE}
<p style="position:absolute;left:20px;top:240px">Cart: {{cart}}</p>
<form method="post" action="/shop/subscribe"><input type="hidden" name="email" value="a@b.c">
  <button style="left:20px;top:20px">Subscribe</button></form>
<form method="post" action="/shop/cart"><input type="hidden" name="item" value="widget">
  <button style="left:20px;top:100px">Add to cart</button></form>
<form method="post" action="/shop/buy"><button style="left:20px;top:180px">Buy</button></form>
"""
SLOW = f"""<!doctype html><title>slow</title>{STYLE}
<script>document.write('<script src="/slow.js?r=' + Math.random() + '"><\\/script>')</script>
<button style="left:20px;top:20px" onclick="document.title='noise'">Noise</button>
<button style="left:20px;top:100px" onclick="document.body.dataset.agreed='yes'">Agree</button>
<button style="left:20px;top:180px" onclick="document.body.dataset.sent =
  document.body.dataset.agreed === 'yes' ? 'agreed' : 'refused'">Submit</button>
"""
DEAL = f"""<!doctype html><title>deal</title>{STYLE}
<p style="position:absolute;left:20px;top:80px">Click button ONE.</p>
<button id="a" style="left:20px;top:20px" onclick="pick(this)">TWO</button>
<button id="b" style="left:300px;top:20px" onclick="pick(this)">ONE</button>
<div id="cover" hidden style="position:fixed;inset:0;background:#ccc">
  <p style="position:absolute;left:20px;top:200px">Wrong. Press START for a new problem.</p>
  <button id="start" style="left:20px;top:300px" onclick="deal()">START</button></div>
<script>
function pick(b) {{
  if (b.textContent === 'ONE') document.body.dataset.solved = 'yes';
  else document.getElementById('cover').hidden = false;
}}
function deal() {{
  const a = document.getElementById('a'), b = document.getElementById('b');
  [a.textContent, b.textContent] = [b.textContent, a.textContent];
  document.getElementById('cover').hidden = true;
}}
</script>
"""
TABS = f"""<!doctype html><title>tabs</title>{STYLE}
<button style="left:20px;top:20px" onclick="show('basic')">Basic</button>
<button style="left:200px;top:20px" onclick="show('advanced')">Advanced</button>
<div id="basic"><button style="left:20px;top:100px" onclick="drop(1)">Delete one</button></div>
<div id="advanced" hidden>
  <button style="left:20px;top:100px" onclick="drop(99)">Delete all</button></div>
<ul style="position:absolute;left:20px;top:200px"><li>Milk</li><li>Eggs</li><li>Bread</li></ul>
<script>
function show(tab) {{
  document.getElementById('basic').hidden = tab !== 'basic';
  document.getElementById('advanced').hidden = tab !== 'advanced';
}}
function drop(n) {{ [...document.querySelectorAll('li')].slice(0, n).forEach(li => li.remove()); }}
</script>
"""
# Apples checked paints a large red block: a screenshot shows at once whether it is; and the
# page keeps the choice in its URL (as shops keep filters), so a sample's URL says it too
FRUIT = """<!doctype html><title>fruit</title>
<style>body{margin:0;font:16px sans-serif} label{position:absolute;left:20px;width:300px;
height:60px} input{width:30px;height:30px} span{display:inline-block;width:200px;height:50px}
#apples:checked + span{background:#ff0000} #pears:checked + span{background:#0000ff}
button{position:absolute;left:20px;top:200px;width:160px;height:40px}</style>
<p style="position:absolute;left:400px;top:20px">Select Pears and submit.</p>
<label style="top:20px"><input id="apples" type="checkbox" value="Apples" onchange="history.
replaceState(null, '', location.pathname + (this.checked ? '#apples' : ''))"><span>Apples</span>
</label>
<label style="top:100px"><input id="pears" type="checkbox" value="Pears"><span>Pears</span>
</label>
<button onclick="document.body.dataset.sent = [...document.querySelectorAll('input:checked')]
  .map(i => i.value).join(',')">Submit</button>
"""
# Launch always counts as sent, but unarmed it misfires: "Misfire." is the task's failure
ARM = f"""<!doctype html><title>arm</title>{STYLE}
<button style="left:20px;top:20px" onclick="document.body.dataset.armed='yes'">Arm</button>
<button style="left:20px;top:100px" onclick="launch()">Launch</button>
<p id="said" style="position:absolute;left:20px;top:200px"></p>
<script>
function launch() {{
  if (document.body.dataset.armed !== 'yes') document.getElementById('said').textContent = 'Misfire.';
  document.body.dataset.launched = 'yes';
}}
</script>
"""
PAGES = {"/slow": SLOW, "/deal": DEAL, "/tabs": TABS, "/fruit": FRUIT, "/arm": ARM}
SENT_PEARS = SuccessCheck(js="(document.body.dataset.sent || '').split(',').includes('Pears')")


class Site(ThreadingHTTPServer):
    """The module's pages, and what their server saw."""

    daemon_threads = True
    block_on_close = False
    orders: int
    posts: list[str]
    slow_loads: int
    hung: int
    release: threading.Event


class Handler(BaseHTTPRequestHandler):
    server: Site

    def _send(
        self, body: str, status: int = 200, headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        data = body.encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/slow.js":  # fast for the first three loads, then hangs (a minute)
            self.server.slow_loads += 1
            if self.server.slow_loads > 3:
                self.server.hung += 1
                self.server.release.wait(60)
            self._send("// slow")
            return
        if path == "/shop":
            cart = "1 widget" if "cart=widget" in self.headers.get("Cookie", "") else "empty"
            self._send(SHOP.replace("{cart}", cart))
            return
        body = PAGES.get(path)
        if body is None:
            self.send_error(404)
            return
        self._send(body)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.posts.append(self.path)
        after = (("Location", "/shop"),)
        if self.path == "/shop/subscribe":
            self._send("", 303, after)
        elif self.path == "/shop/cart":
            self._send("", 303, (*after, ("Set-Cookie", "cart=widget; Path=/")))
        elif self.path == "/shop/buy" and "cart=widget" in self.headers.get("Cookie", ""):
            self.server.orders += 1
            self._send(f"<!doctype html><p>Order placed: #{self.server.orders}</p>")
        else:
            self._send("<!doctype html><p>Your cart is empty.</p>")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    httpd = Site(("127.0.0.1", 0), Handler)
    httpd.orders, httpd.posts, httpd.slow_loads, httpd.hung = 0, [], 0, 0
    httpd.release = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.release.set()
    httpd.shutdown()
    httpd.server_close()


def origin(site: Site) -> str:
    return f"127.0.0.1:{site.server_address[1]}"


@pytest.fixture(scope="module")
def sockets() -> Iterator[Sockets]:
    server = Sockets()
    yield server
    server.close()


@pytest.fixture(scope="module")
def plugin(
    site: Site, sockets: Sockets, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReadyPlugin]:
    from datagen.runtime.plugin import BrowserPlugin

    allow = [origin(site), f"127.0.0.1:{sockets.port}"]
    config = make_config(tmp_path_factory.mktemp("site"), browser={"allow": allow})
    with set_up(BrowserPlugin(config)) as ready:
        yield ready


def run(
    plugin: ReadyPlugin, site: Site, tmp_path: Path, tasks: list[TaskSpec], **sections: Any
) -> Path:
    """Run `tasks` as one shard (scripted unless `policy` is given); the output folder."""
    config = make_config(
        tmp_path,
        policy=sections.pop("policy", {"type": "scripted"}),
        run={"max_steps": 8, **sections.pop("run", {})},
        browser={"allow": [origin(site)]},
        annotation={"grounding": False, "verify": sections.pop("verify", {})},
    )
    # a generous watchdog: the whole shard, verification included, well within it
    Local(plugin).run(config, 3, tasks, timeout=120)
    return tmp_path / "out"


def steps_of(out: Path) -> dict[str, list[dict[str, Any]]]:
    steps: dict[str, list[dict[str, Any]]] = {}
    for s in sorted(read(out, "steps"), key=lambda s: s["step_index"]):
        steps.setdefault(str(s["task_id"]), []).append(s)
    return steps


def samples(out: Path) -> list[dict[str, Any]]:
    """The shard's SFT samples as `datagen export` writes them (its default filter: solved)."""
    storage = LocalStorage(out)
    rows: list[dict[str, Any]] = []
    for marker in read_markers(storage):
        rows += sft_rows(read_shard(storage, marker, "r"), parse_options("sft"))
    return rows


def purchase(site: Site, task_id: str) -> TaskSpec:
    subscribe, cart, buy = Click(x=100, y=40), Click(x=100, y=120), Click(x=100, y=200)
    return TaskSpec(
        id=task_id,
        start_url=f"http://{origin(site)}/shop",
        instruction="Buy a widget.",
        check=SuccessCheck(text_present="Order placed"),
        actions=(subscribe, cart, buy),
    )


def test_a_verified_purchase_places_one_order(
    plugin: ReadyPlugin, site: Site, tmp_path: Path
) -> None:
    orders, posts = site.orders, len(site.posts)
    out = run(plugin, site, tmp_path, [purchase(site, "buy")])

    assert site.orders - orders == 1  # the episode's; no replay placed another
    assert site.posts[posts:] == ["/shop/subscribe", "/shop/cart", "/shop/buy"]
    (episode,) = read(out, "episodes")
    assert episode["verification"] == "minimal"
    needed = [s["action_repr"] for s in steps_of(out)["buy"] if s["needed"]]
    # A recorded answer stands for the server's state after the POSTs before it, in order:
    # Buy without Add to cart, or Add to cart without Subscribe, is refused (the site would
    # meet a state nobody observed), so all three stay needed; the done too
    assert needed == ["click(100, 40)", "click(100, 120)", "click(100, 200)", 'done("")']
    assert episode["verify_network"] == []  # answered from the recording or refused
    (aborted,) = episode["verify_aborted"]
    assert aborted.startswith(f"POST {origin(site)} ")


def test_live_hosts_are_replayed_against_the_site(
    plugin: ReadyPlugin, site: Site, tmp_path: Path
) -> None:
    """`annotation.verify.live` names a host the operator owns: replays reach it, POSTs and all."""
    orders = site.orders
    out = run(plugin, site, tmp_path, [purchase(site, "live")], verify={"live": [origin(site)]})
    (episode,) = read(out, "episodes")
    assert site.orders - orders > 1
    assert any(n.startswith(f"POST {origin(site)} ") for n in episode["verify_network"])


def test_verification_stays_inside_the_episodes_time(
    plugin: ReadyPlugin, site: Site, tmp_path: Path
) -> None:
    """Replays (let reach the site: `live`) from the fourth load on hang on a script: the
    verification is cut at the episode's limit before a replay passed (the last step alone,
    the last two, then all four: that one hangs), decides none of its steps (needed null) and
    the shard commits."""
    noise, agree, submit = Click(x=100, y=40), Click(x=100, y=120), Click(x=100, y=200)
    task = TaskSpec(
        id="slow",
        start_url=f"http://{origin(site)}/slow",
        instruction="Agree, then submit.",
        check=SuccessCheck(js="document.body.dataset.sent === 'agreed'"),
        actions=(noise, agree, noise, submit),
    )
    live = {"live": [origin(site)]}
    # 14 s in all: what is left when a replay meets the hang is always under the page load's
    # own limit (browser.navigation_timeout_s, 15 s), so the episode's time is what ends it
    out = run(plugin, site, tmp_path, [task], run={"episode_timeout_s": 14}, verify=live)

    (episode,) = read(out, "episodes")  # the shard committed
    assert episode["verification"] == "not_reproduced", episode["verify_note"]
    assert "run.episode_timeout_s" in episode["verify_note"]
    assert [s["needed"] for s in steps_of(out)["slow"]] == [None] * 5  # nothing decided
    assert site.hung <= 1  # one replay met the hang at most, and was cut there
    assert any(n.startswith(f"GET {origin(site)} ") for n in episode["verify_network"])


def test_a_task_ends_when_its_page_says_it_failed(
    plugin: ReadyPlugin, site: Site, tmp_path: Path
) -> None:
    """A wrong click shows START, which deals a new problem; with `fail` declared the episode
    ends at the wrong click: no sample carries the task's instruction."""
    wrong, start = Click(x=100, y=40), Click(x=100, y=320)
    task = TaskSpec(
        id="deal",
        start_url=f"http://{origin(site)}/deal",
        instruction="Click button ONE.",
        check=SuccessCheck(js="document.body.dataset.solved === 'yes'"),
        fail=SuccessCheck(text_present="Wrong."),
        actions=(wrong, start, wrong),
    )
    out = run(plugin, site, tmp_path, [task])

    (episode,) = read(out, "episodes")
    assert episode["status"] == "failed_task" and episode["success"] is False
    assert episode["stop_note"] == "fail check passed before step 1"
    assert [s["action_repr"] for s in steps_of(out)["deal"]] == ["click(100, 40)"]
    every = samples(out)
    assert [s for s in every if s["instruction_source"] == "task"] == []


def test_a_replay_that_meets_the_tasks_failure_does_not_reproduce(
    plugin: ReadyPlugin, site: Site, tmp_path: Path
) -> None:
    """Launch alone also passes the check, but misfires (`fail`): that replay met the task's
    failure, so Arm stays needed and "Arm, then launch." is never paired with Launch alone."""
    task = TaskSpec(
        id="arm",
        start_url=f"http://{origin(site)}/arm",
        instruction="Arm, then launch.",
        check=SuccessCheck(js="document.body.dataset.launched === 'yes'"),
        fail=SuccessCheck(text_present="Misfire."),
        actions=(Click(x=100, y=40), Click(x=100, y=120)),
    )
    out = run(plugin, site, tmp_path, [task])

    (episode,) = read(out, "episodes")
    assert episode["success"] is True and episode["verification"] == "minimal"
    assert [s["needed"] for s in steps_of(out)["arm"]] == [True, True, True]


def test_a_click_on_another_element_is_no_reproduction(
    plugin: ReadyPlugin, site: Site, tmp_path: Path
) -> None:
    """Without the Advanced tab, the same spot holds "Delete one", which also passes the loose
    check: that replay diverged, so the tab stays needed."""
    task = TaskSpec(
        id="tabs",
        start_url=f"http://{origin(site)}/tabs",
        instruction="Delete all items.",
        check=SuccessCheck(js="document.querySelectorAll('li').length < 3"),
        actions=(Click(x=280, y=40), Click(x=100, y=120)),
    )
    out = run(plugin, site, tmp_path, [task])

    (episode,) = read(out, "episodes")
    assert episode["verification"] == "minimal"
    assert [s["needed"] for s in steps_of(out)["tabs"]] == [True, True, True]
    task_samples = [s for s in samples(out) if s["instruction_source"] == "task"]
    assert [s["action_description"] for s in task_samples][:2] == [
        'Click the "Advanced" button',
        'Click the "Delete all" button',
    ]


def red_share(image: dict[str, Any]) -> float:
    """The share of a screenshot's pixels that are Apples' checked red."""
    picture = Image.open(io.BytesIO(image["bytes"])).convert("RGB")
    data = picture.tobytes()
    pixels = [data[i : i + 3] for i in range(0, len(data), 3)]
    return sum(1 for r, g, b in pixels if r > 200 and g < 60 and b < 60) / len(pixels)


def test_task_samples_show_the_minimal_paths_own_screens(
    plugin: ReadyPlugin, site: Site, tmp_path: Path
) -> None:
    """Apples, Pears, Submit: Apples is not needed, so no task-labelled sample may show it
    checked, nor carry the URL its check left. Scripted (that order for sure) and explore (seeded, several repeats)."""
    url = f"http://{origin(site)}/fruit"
    scripted = TaskSpec(
        id="fruit-scripted",
        start_url=url,
        instruction="Select Pears and submit.",
        check=SENT_PEARS,
        actions=(Click(x=100, y=50), Click(x=100, y=130), Click(x=100, y=220)),
    )
    explored = TaskSpec(
        id="fruit", start_url=url, instruction="Select Pears and submit.", check=SENT_PEARS
    )
    out = run(plugin, site, tmp_path / "scripted", [scripted])
    out_explore = run(
        plugin,
        site,
        tmp_path / "explore",
        [explored],
        policy={"type": "explore", "type_probability": 0.0},
        run={"repeats": 4, "max_steps": 6},
    )
    steps = steps_of(out)["fruit-scripted"]
    assert red_share(steps[2]["screenshot"]) > 0.005  # the episode's own Submit screen: Apples
    assert [s["needed"] for s in steps] == [False, True, True, True]

    task_samples = [
        s for o in (out, out_explore) for s in samples(o) if s["instruction_source"] == "task"
    ]
    submits = [s for s in task_samples if "Submit" in s["action_description"]]
    assert submits, "no task-labelled Submit sample"
    for sample in submits:
        assert red_share(sample["images"][-1]) == 0, sample["episode_id"]
        assert "apples" not in sample["url"], sample["url"]  # the path's URL, not the episode's
    assert steps[2]["url"].endswith("#apples")  # the episode's own Submit step's
    explore_notes = [e["stop_note"] for e in read(out_explore, "episodes")]
    assert all(explore_notes), explore_notes


class Sockets(LoopServer):
    """An aiohttp server on its own loop: `/` a page that sends "hello" over a WebSocket on
    load and shows the answer; `/ws` counts connections and messages."""

    def __init__(self) -> None:
        self.connections = 0
        self.messages = 0
        super().__init__()

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/", self._page)
        app.router.add_get("/ws", self._socket)

    async def _page(self, request: web.Request) -> web.Response:
        page = f"""<!doctype html><title>socket</title>{STYLE}
<p id="said" style="position:absolute;left:20px;top:100px">waiting</p>
<button style="left:20px;top:20px" onclick="document.body.dataset.solved='yes'">Solve</button>
<script>const ws = new WebSocket('ws://' + location.host + '/ws');
ws.onopen = () => ws.send('hello');
ws.onmessage = (m) => {{ document.getElementById('said').textContent = m.data; }};</script>"""
        return web.Response(text=page, content_type="text/html")

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self.connections += 1
        async for message in socket:
            if message.type == WSMsgType.TEXT:
                self.messages += 1
                await socket.send_str(f"heard {message.data}")
        return socket


def test_replays_never_open_a_websocket_to_the_site(
    plugin: ReadyPlugin, sockets: Sockets, tmp_path: Path
) -> None:
    where = f"127.0.0.1:{sockets.port}"
    task = TaskSpec(
        id="socket",
        start_url=f"http://{where}/",
        instruction="Press Solve.",
        check=SuccessCheck(js="document.body.dataset.solved === 'yes'"),
        actions=(Click(x=100, y=150), Click(x=100, y=40)),
    )
    config = make_config(
        tmp_path,
        policy={"type": "scripted"},
        browser={"allow": [where]},
        annotation={"grounding": False},
    )
    out = tmp_path / "out"
    Local(plugin).run(config, 3, [task], timeout=120)  # a generous watchdog

    (episode,) = read(out, "episodes")
    # the click alone, observed as it went: the one replay
    assert episode["verification"] == "minimal" and episode["verify_replays"] >= 1
    assert sockets.connections == 1 and sockets.messages == 1  # the episode's alone
    assert episode["verify_aborted"] == [f"WS {where} {episode['verify_replays']}"]
