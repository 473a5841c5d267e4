"""Replay verification on real Chromium: which steps of a solved episode its task needs.

The pages are served by this module's own server (not the bundled sites, not the shared test
pages): one where one click solves the task among unrelated clicks and typing, one that needs
two steps, one whose server deals a new problem on every load (replays, answered from the
episode's recorded traffic, meet the episode's problem and never load it), and one whose check
passes before any action. What the replays found is judged by
what the page's server saw and by a second, independent replay of the needed steps alone.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright

from datagen.config import PipelineConfig
from datagen.records import Click, SuccessCheck, TaskSpec, TypeText
from tests.helpers import CHROMIUM_ARGS, Local, ReadyPlugin, make_config, read, set_up

pytestmark = pytest.mark.browser

STYLE = (
    "<style>body{margin:0;font:16px sans-serif} button,input,label{position:absolute;"
    "width:160px;height:40px}</style>"
)
ONE = f"""<!doctype html><title>one</title>{STYLE}
<button id="noise" style="left:20px;top:20px" onclick="document.title='noise'">Noise</button>
<input id="field" style="left:20px;top:100px" placeholder="Anything">
<button id="solve" style="left:20px;top:180px"
  onclick="document.body.dataset.solved='yes'">Solve</button>
<button id="other" style="left:300px;top:20px" onclick="this.textContent='Other!'">Other</button>
"""
TWO = f"""<!doctype html><title>two</title>{STYLE}
<label style="left:20px;top:20px"><input id="agree" type="checkbox"> I agree</label>
<button id="theme" style="left:300px;top:20px"
  onclick="document.body.style.background='#eee'">Theme</button>
<button id="submit" style="left:20px;top:100px" onclick="document.body.dataset.sent =
  document.getElementById('agree').checked ? 'agreed' : 'refused'">Submit</button>
"""
DEAL = f"""<!doctype html><title>deal</title>{STYLE}
<p style="position:absolute;left:20px;top:80px">Click {{target}}</p>
<button style="left:20px;top:20px" onclick="pick('left')">Left</button>
<button style="left:300px;top:20px" onclick="pick('right')">Right</button>
<script>function pick(side) {{ if (side === '{{target}}') document.body.dataset.solved = 'yes'; }}
</script>
"""
BANNER = f"""<!doctype html><title>banner</title>{STYLE}
<button id="solve" style="left:20px;top:650px"
  onclick="document.body.dataset.solved='yes'">Solve</button>
<div id="consent" role="dialog" aria-label="Cookie consent" style="position:fixed;left:0;right:0;
  bottom:0;height:220px;background:#222;color:#fff;padding:20px">We use cookies to improve your
  experience. <button style="position:static" onclick="consent.remove()">Reject all</button>
  <button style="position:static" onclick="consent.remove()">Accept all</button></div>
"""
ALREADY = f"<!doctype html><title>already</title>{STYLE}<body data-solved='yes'>Done</body>"
SOLVED = SuccessCheck(js="document.body.dataset.solved === 'yes'")


class Pages(ThreadingHTTPServer):
    """The module's pages; `/deal` deals `left` on its first load and `right` after."""

    loads: dict[str, int]


class Handler(BaseHTTPRequestHandler):
    server: Pages

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.server.loads[path] = self.server.loads.get(path, 0) + 1
        body = {"/one": ONE, "/two": TWO, "/already": ALREADY, "/banner": BANNER}.get(path)
        if path == "/deal":
            body = DEAL.replace("{target}", "left" if self.server.loads[path] == 1 else "right")
        if body is None:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def scripted(tmp_path: Path, url: str) -> PipelineConfig:
    """A scripted run on the test server, verification on (12 replays), no grounding."""
    return make_config(
        tmp_path,
        policy={"type": "scripted"},
        run={"max_steps": 8},
        browser={"allow": [url.removeprefix("http://")]},
        annotation={"grounding": False, "verify": {"max_replays": 12}},
    )


@pytest.fixture(scope="module")
def server() -> Iterator[Pages]:
    httpd = Pages(("127.0.0.1", 0), Handler)
    httpd.loads = {}
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def plugin(
    chromium: str, server: Pages, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReadyPlugin]:
    from datagen.runtime.plugin import BrowserPlugin

    origin = f"127.0.0.1:{server.server_address[1]}"
    config = make_config(tmp_path_factory.mktemp("verify"), browser={"allow": [origin]})
    with set_up(BrowserPlugin(config)) as ready:
        yield ready


def base(server: Pages) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_replays_keep_only_the_steps_the_task_needs(
    plugin: ReadyPlugin, server: Pages, tmp_path: Path
) -> None:
    url = base(server)
    noise, field, solve, other = (
        Click(x=100, y=40),
        Click(x=100, y=120),
        Click(x=100, y=200),
        Click(x=380, y=40),
    )
    agree, theme, submit = Click(x=40, y=40), Click(x=380, y=40), Click(x=100, y=120)
    tasks = [
        TaskSpec(
            id="one",
            start_url=f"{url}/one",
            instruction="Press Solve.",
            check=SOLVED,
            actions=(noise, field, TypeText(text="hello"), other, solve),
        ),
        TaskSpec(
            id="two",
            start_url=f"{url}/two",
            instruction="Agree, then submit.",
            check=SuccessCheck(js="document.body.dataset.sent === 'agreed'"),
            actions=(theme, agree, theme, submit),
        ),
        TaskSpec(
            id="deal",
            start_url=f"{url}/deal",
            instruction="Click the side the page names.",
            check=SOLVED,
            actions=(Click(x=100, y=40),),
        ),
        TaskSpec(id="already", start_url=f"{url}/already", instruction="Nothing.", check=SOLVED),
        TaskSpec(  # the consent banner covers Solve until answered: replays answer it too
            id="banner",
            start_url=f"{url}/banner",
            instruction="Press Solve.",
            check=SOLVED,
            actions=(noise, Click(x=100, y=670)),
        ),
    ]
    config = scripted(tmp_path, url)
    out = tmp_path / "out"
    Local(plugin).run(config, 3, tasks)

    episodes = {e["task_id"]: e for e in read(out, "episodes")}
    steps: dict[str, list[dict[str, object]]] = {}
    for s in sorted(read(out, "steps"), key=lambda s: s["step_index"]):
        steps.setdefault(str(s["task_id"]), []).append(s)
    needed = {t: [s["action_repr"] for s in rows if s["needed"]] for t, rows in steps.items()}

    assert episodes["one"]["verification"] == "minimal"
    assert needed["one"] == ["click(100, 200)", 'done("")']  # that click, and the stop
    assert [s["needed"] for s in steps["one"]] == [False, False, False, False, True, True]
    # the last click alone, observed as it went (its screens: what task samples show)
    assert episodes["one"]["verify_replays"] == 1 and episodes["one"]["verified_steps"] == 2
    assert [s["path_screenshot"] is not None for s in steps["one"]] == [False] * 4 + [True] * 2

    assert episodes["two"]["verification"] == "minimal"
    assert needed["two"] == ["click(40, 40)", "click(100, 120)", 'done("")']
    assert episodes["two"]["verify_replays"] >= 3  # last alone, all, then leaving steps out

    # the page deals a new problem on each load, but replays are answered from the episode's
    # own recorded traffic: they meet the problem the episode met, and never load the page
    deal = episodes["deal"]
    assert deal["verification"] == "minimal" and deal["status"] == "solved"
    assert server.loads["/deal"] == 1
    assert deal["verify_network"] == [] and deal["verify_aborted"] == []

    assert episodes["banner"]["consent_action"] is not None
    assert episodes["banner"]["verification"] == "minimal"
    assert needed["banner"] == ["click(100, 670)", 'done("")']

    rejects = {(r["task_id"], r["stage"], r["reason"]) for r in read(out, "rejects")}
    assert ("already", "task", "check_passes_at_start") in rejects
    assert "already" not in episodes

    # Independently of datagen: the needed clicks alone, on a browser of this test's own, solve
    # the tasks, and leaving any one of them out does not.
    solved = plugin.run(
        _solves(
            [
                (f"{url}/one", [solve], "yes", "solved"),
                (f"{url}/two", [agree, submit], "agreed", "sent"),
                (f"{url}/two", [submit], "agreed", "sent"),
                (f"{url}/two", [agree], "agreed", "sent"),
            ]
        )
    )
    assert solved == [True, True, False, False]


async def _solves(trials: list[tuple[str, list[Click], str, str]]) -> list[bool]:
    """Each (url, clicks, value, key): whether the clicks alone set the body's data `key` to
    `value`, each in a new context of one browser (no cookies or storage carried over)."""
    async with async_playwright() as pw:
        from datagen.browser.launch import find_executable

        browser = await pw.chromium.launch(
            executable_path=find_executable(None, None), args=CHROMIUM_ARGS
        )
        try:
            found: list[bool] = []
            for url, clicks, value, key in trials:
                context = await browser.new_context(viewport={"width": 1280, "height": 800})
                page = await context.new_page()
                await page.goto(url)
                for click in clicks:
                    await page.mouse.click(click.x, click.y)
                solved = await page.evaluate(f"document.body.dataset.{key} === {value!r}")
                found.append(bool(solved))
                await context.close()
            return found
        finally:
            await browser.close()


def test_replays_take_only_screens_a_sample_shows(
    plugin: ReadyPlugin, server: Pages, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted, not timed: the observations replays make. Theme, agree, submit: the last click
    alone fails (observed as it went, in case it passed: one screen, none after it), the last
    two pass (two screens and the final one: the path's samples), and the proof that agree
    is needed is not observed at all."""
    from datagen.browser.session import Session
    from datagen.pipeline.replay import Replayer

    replaying, screens = contextvars.ContextVar("replaying", default=False), [0]
    replay, observe = Replayer.replay, Session.observe

    async def counted_replay(self: Replayer, *args: Any, **kwargs: Any) -> Any:
        replaying.set(True)  # this task's context: the replay's own
        return await replay(self, *args, **kwargs)

    async def counted_observe(self: Session) -> Any:
        screens[0] += replaying.get()
        return await observe(self)

    monkeypatch.setattr(Replayer, "replay", counted_replay)
    monkeypatch.setattr(Session, "observe", counted_observe)
    url = base(server)
    task = TaskSpec(
        id="two",
        start_url=f"{url}/two",
        instruction="Agree, then submit.",
        check=SuccessCheck(js="document.body.dataset.sent === 'agreed'"),
        actions=(Click(x=380, y=40), Click(x=40, y=40), Click(x=100, y=120)),
    )
    config = scripted(tmp_path, url)
    Local(plugin).run(config, 3, [task])

    (episode,) = read(tmp_path / "out", "episodes")
    assert episode["verification"] == "minimal", episode["verify_note"]
    steps = sorted(read(tmp_path / "out", "steps"), key=lambda s: s["step_index"])
    assert [s["needed"] for s in steps] == [False, True, True, True]
    assert [s["path_screenshot"] is not None for s in steps] == [False, True, True, True]
    assert episode["verify_replays"] == 3  # the last alone, the last two, the last alone of them
    assert screens[0] == 1 + 3  # (and before: 2 + 3, the failed one's last screen taken too)
