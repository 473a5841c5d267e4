"""Bot walls and consent dialogs on real Chromium, through run_shard (issue 27, item 3): a
local server stands in for the hosts (a Cloudflare-like challenge served with 403, an article
about CAPTCHAs, consent dialogs of a known framework, of none, in a shadow root and in an
iframe), allowed through `browser.allow`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from datagen.browser.host import BrowserHost
from datagen.config import BrowserConfig
from datagen.records import Click, SuccessCheck, TaskSpec
from tests.helpers import Local, ReadyPlugin, make_config, read

pytestmark = pytest.mark.browser

HEAD = '<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,">'
CHALLENGE = (
    HEAD + "<title>Just a moment...</title></head><body><h1>example.test</h1>"
    "<p>Verify you are human by completing the action below.</p>"
    '<form id="challenge-form" action="/cdn-cgi/challenge"><input type="checkbox"> '
    "I am human</form><script>window._cf_chl_opt = {cType: 'managed'};</script></body></html>"
)
PARAGRAPH = (
    "<p>CAPTCHAs ask you to verify you are human. reCAPTCHA, hCaptcha and Turnstile are the "
    "common ones; a 'press and hold' button is another. <a href='#r'>Read more</a></p>"
)
ARTICLE = (
    HEAD
    + "<title>What is a CAPTCHA?</title></head><body><h1>What is a CAPTCHA?</h1>"
    + PARAGRAPH * 20
    + '<button id="go" style="position:absolute;left:20px;top:20px;width:120px;height:40px"'
    " onclick=\"document.body.dataset.clicked='go'\">Go</button></body></html>"
)
LINK_TO_WALL = (
    HEAD + "<title>Shop</title></head><body>"
    '<a id="w" href="/challenge" style="position:absolute;left:20px;top:20px;width:120px;'
    'height:40px;display:block">Deals</a></body></html>'
)
# The app's button sits under a fixed dialog: left there, it is occluded
APP = (
    '<button id="app" style="position:absolute;left:40px;top:300px;width:160px;height:40px"'
    " onclick=\"document.body.dataset.clicked='app'\">Add to cart</button>"
)
OVERLAY = "position:fixed;left:0;top:0;right:0;bottom:0;background:rgba(0,0,0,.5);"
ONETRUST = (
    HEAD + "<title>OneTrust</title></head><body>" + APP + '<div id="onetrust-consent-sdk">'
    f'<div id="onetrust-banner-sdk" role="dialog" style="{OVERLAY}"><p>We use cookies.</p>'
    '<button id="onetrust-reject-all-handler" onclick="document.body.dataset.consent=\'no\';'
    "this.closest('#onetrust-banner-sdk').remove()\">Reject All</button>"
    '<button id="onetrust-accept-btn-handler" onclick="document.body.dataset.consent=\'yes\';'
    "this.closest('#onetrust-banner-sdk').remove()\">Accept All Cookies</button>"
    "</div></div></body></html>"
)
TEXT_DIALOG = (
    HEAD + "<title>Plain</title></head><body>" + APP + f'<div class="gate" style="{OVERLAY}">'
    '<div role="dialog" aria-modal="true"><h2>Your privacy</h2><p>We and our partners use '
    "cookies.</p><button onclick=\"document.body.dataset.consent='yes';"
    "document.querySelector('.gate').remove()\">Accept all</button>"
    "<button onclick=\"document.body.dataset.consent='no';"
    "document.querySelector('.gate').remove()\">Reject all</button></div></div></body></html>"
)
SHADOW = (
    HEAD + "<title>Shadow</title></head><body>" + APP + '<div id="usercentrics-root"></div>'
    "<script>const root = document.getElementById('usercentrics-root').attachShadow("
    '{mode: \'open\'}); root.innerHTML = `<div id="uc-center-container" style="'
    + OVERLAY
    + '"><p>Cookies</p><button data-testid="uc-deny-all-button">Deny</button>'
    '<button data-testid="uc-accept-all-button">Accept All</button></div>`;'
    "root.querySelector('[data-testid=uc-deny-all-button]').onclick = () => {"
    "document.body.dataset.consent = 'no'; root.innerHTML = ''; };</script></body></html>"
)
# Its main thread is held forever from just after its load: before the wall check can read it
HANGS = (
    HEAD + "<title>Hangs</title></head><body><button>Wait</button><script>"
    "addEventListener('load', () => setTimeout(() => { while (true) {} }, 0));</script>"
    "</body></html>"
)
# Ordinary pages that hold a wall's id, widget or words among content of their own (issue 36:
# each was a bot_wall reject): a long article whose search box is a <form id="challenge-form">,
# a contact form with a visible reCAPTCHA, short pages saying the words in their content.
NAV = "<nav>" + "".join(f'<a href="#s{i}">Section {i}</a> ' for i in range(20)) + "</nav>"
STORY = (
    "<p>The council met on Tuesday to discuss the new cycle lanes on the high street; the "
    "plan, which has been revised twice since spring, now keeps the market's loading bays.</p>"
)
LONG_FORM = (
    HEAD + "<title>Town news</title></head><body>" + NAV + "<h1>Town news</h1>"
    '<form id="challenge-form" action="#"><input name="q" placeholder="Search stories">'
    "<button>Search</button></form>" + STORY * 40 + "</body></html>"
)
CONTACT = (
    HEAD + "<title>Contact us</title></head><body><nav><a href='#a'>Home</a> <a href='#b'>Shop"
    "</a> <a href='#c'>Help</a></nav><h1>Contact us</h1><form action='#'>"
    "<label>Name <input name='name'></label><label>Email <input type='email' name='email'>"
    "</label><label>Message <textarea name='m'></textarea></label>"
    '<div class="g-recaptcha" style="width:304px;height:78px;border:1px solid #ccc">'
    "<input type='checkbox'> I'm not a robot</div><button>Send</button></form></body></html>"
)
ROBOT = (
    HEAD + "<title>Robot quiz</title></head><body><nav><a href='#a'>Home</a> <a href='#b'>"
    "Quizzes</a> <a href='#c'>Films</a> <a href='#d'>Books</a></nav><h1>Are you a robot?</h1>"
    "<p>A short quiz from our science desk: ten questions about the machines of novels and "
    "films, from R.U.R. to the androids of the eighties, with the answers explained at the "
    "end.</p><p>Share your score with friends, and tell us which film we forgot.</p>"
    "</body></html>"
)
# issue 42, item 10: a short article whose title (alone) says the words
QUIZ_TITLE = (
    HEAD + "<title>Are you a robot? Our quiz</title></head><body><h1>Our quiz</h1>"
    "<p>Ten questions about the machines of novels and films, from R.U.R. to the androids of "
    "the eighties.</p><a href='#start'>Start the quiz</a></body></html>"
)
CAPTCHA_HELP = (
    HEAD + "<title>Help: signing up</title></head><body><nav><a href='#a'>Home</a> <a href='#b'>"
    "Help</a> <a href='#c'>Support</a></nav><h1>Signing up</h1><p>Fill in your name and "
    "email, choose a password, then complete the captcha before you press Create account.</p>"
    "<p>If the picture does not load, reload the page or try the audio version. Still stuck? "
    "Write to our support team.</p></body></html>"
)
# A challenge and nothing else, served with 200: still a wall
THIN_CHALLENGE = (
    HEAD + "<title>One more step</title></head><body><h1>example.test</h1>"
    '<form id="challenge-form" action="#"><input type="checkbox"> I am human</form>'
    "</body></html>"
)
# A banner whose "Reject all" is a link to another origin (the same server as `localhost`,
# which the browser is allowed to open too); its "Accept all" stays on the page.
LEAVING = (
    HEAD + "<title>Leaving</title></head><body>" + APP + '<div id="cookie-banner" style="'
    f'{OVERLAY}"><p>We use cookies.</p><a id="reject" href="/elsewhere">Reject all</a> '
    "<button onclick=\"document.getElementById('cookie-banner').remove()\">Accept all</button>"
    "</div><script>document.getElementById('reject').href = location.origin.replace("
    "'127.0.0.1', 'localhost') + '/elsewhere';</script></body></html>"
)
ELSEWHERE = HEAD + "<title>Elsewhere</title></head><body>" + APP + "</body></html>"
PAGES: dict[str, tuple[int, str]] = {
    "/leaving": (200, LEAVING),
    "/elsewhere": (200, ELSEWHERE),
    "/long-form": (200, LONG_FORM),
    "/contact": (200, CONTACT),
    "/robot": (200, ROBOT),
    "/quiz-title": (200, QUIZ_TITLE),
    "/captcha-help": (200, CAPTCHA_HELP),
    "/thin-challenge": (200, THIN_CHALLENGE),
    "/challenge": (403, CHALLENGE),
    "/article": (200, ARTICLE),
    "/link-to-wall": (200, LINK_TO_WALL),
    "/onetrust": (200, ONETRUST),
    "/text": (200, TEXT_DIALOG),
    "/shadow": (200, SHADOW),
    "/hangs": (200, HANGS),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, body = PAGES.get(self.path.split("?")[0], (404, "not found"))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def host(browser_plugin: ReadyPlugin, site: str) -> Iterator[BrowserHost]:
    """A browser whose guard lets the stand-in site through (`browser.allow`)."""
    config = BrowserConfig(allow=[site.removeprefix("http://")])
    browser = BrowserHost(config)
    browser_plugin.run(browser.start(), timeout=120)
    try:
        yield browser
    finally:
        browser_plugin.run(browser.close(), timeout=60)


def _run(
    plugin: ReadyPlugin, host: BrowserHost, tmp_path: Path, tasks: list[TaskSpec], **browser: Any
) -> dict[str, list[dict[str, Any]]]:
    config = make_config(tmp_path, policy={"type": "scripted"}, browser=browser)
    Local(plugin).run(config, 3, tasks, timeout=300, run_id="walls", host=host)
    return {t: read(tmp_path / "out", t) for t in ("episodes", "steps", "grounding", "rejects")}


def test_a_bot_wall_is_a_reject_and_never_a_step(
    browser_plugin: ReadyPlugin, host: BrowserHost, site: str, tmp_path: Path
) -> None:
    click = (Click(x=80, y=40),)
    tasks = [
        TaskSpec(id="wall", start_url=site + "/challenge", instruction="x", actions=click),
        TaskSpec(id="article", start_url=site + "/article", instruction="x", actions=click),
        TaskSpec(id="onward", start_url=site + "/link-to-wall", instruction="x", actions=click),
    ]
    tables = _run(browser_plugin, host, tmp_path, tasks)
    walls = [r for r in tables["rejects"] if r["reason"] == "bot_wall"]
    by_task = {r["task_id"]: r for r in walls}
    # the start page is a Cloudflare-like challenge served with 403: the task's one reject
    assert by_task["wall"]["stage"] == "task"
    assert "cloudflare" in by_task["wall"]["detail"] and "HTTP 403" in by_task["wall"]["detail"]
    assert not [s for s in tables["steps"] if "challenge" in s["url"]]  # never a step
    # an article about CAPTCHAs is an ordinary page: its steps are data
    assert "article" not in by_task
    assert {s["task_id"] for s in tables["steps"]} >= {"article", "onward"}
    # a link that leads to the wall: the step before stays, the wall page is a step reject
    assert by_task["onward"]["stage"] in ("step", "episode")
    onward = [s for s in tables["steps"] if s["task_id"] == "onward"]
    assert onward[0]["url"].endswith("/link-to-wall") and "bot_wall" in onward[0]["action_error"]


def test_a_wall_id_widget_or_word_on_a_page_of_its_own_is_no_wall(
    browser_plugin: ReadyPlugin, host: BrowserHost, site: str, tmp_path: Path
) -> None:
    """The five ordinary pages record their steps (a short article whose title alone says
    "Are you a robot?" too); the thin challenge (200) and the 403 one are still walls."""
    click = (Click(x=600, y=700),)
    ordinary = ("long-form", "contact", "robot", "captcha-help", "quiz-title")
    names = (*ordinary, "thin-challenge", "challenge")
    tasks = [TaskSpec(id=n, start_url=f"{site}/{n}", instruction="x", actions=click) for n in names]
    tables = _run(browser_plugin, host, tmp_path, tasks)
    walls = {r["task_id"]: r["detail"] for r in tables["rejects"] if r["reason"] == "bot_wall"}
    assert set(walls) == {"thin-challenge", "challenge"}, walls
    assert "#challenge-form" in walls["thin-challenge"]
    assert {s["task_id"] for s in tables["steps"]} == set(ordinary)


def test_a_start_page_that_hangs_at_once_ends_as_a_step_timeout(
    browser_plugin: ReadyPlugin, host: BrowserHost, site: str, tmp_path: Path
) -> None:
    """The start page's wall check is bounded (walls.READ_TIMEOUT_S): a page whose script holds
    its main thread from load on is no wall, and the next bounded part of the episode (the
    consent dialog's reading) times out, as a hung page should, well before the episode's own
    limit (seen in CI: `timeout_episode` after 90 s)."""
    tasks = [TaskSpec(id="hangs", start_url=site + "/hangs", instruction="x")]
    config = make_config(
        tmp_path,
        policy={"type": "scripted"},
        run={"step_timeout_s": 4, "episode_timeout_s": 120},
        browser={"consent": "leave"},
    )
    Local(browser_plugin).run(config, 3, tasks, timeout=300, run_id="hangs", host=host)
    rejects = read(tmp_path / "out", "rejects")
    assert [(r["stage"], r["reason"]) for r in rejects] == [("episode", "timeout_step")], rejects
    assert rejects[0]["detail"].endswith("took over 4s"), rejects  # the step's limit, not 120 s


def test_consent_dialogs_are_answered_before_step_0(
    browser_plugin: ReadyPlugin, host: BrowserHost, site: str, tmp_path: Path
) -> None:
    """reject (the default): the framework's own reject button, or a dialog's "Reject all"
    found by its words, in the page or an open shadow root; the app's button under it is then
    grounded (not occluded) at step 0 and the task's click reaches it."""
    click = (Click(x=120, y=320),)
    rejected = SuccessCheck(
        js="document.body.dataset.clicked === 'app' && document.body.dataset.consent === 'no'"
    )
    tasks = [
        TaskSpec(
            id=name, start_url=site + "/" + name, instruction="x", actions=click, check=rejected
        )
        for name in ("onetrust", "text", "shadow")
    ]
    tables = _run(browser_plugin, host, tmp_path, tasks)
    episodes = {e["task_id"]: e for e in tables["episodes"]}
    assert {k: e["consent_action"] for k, e in episodes.items()} == {
        "onetrust": "rejected:onetrust",
        "text": "rejected:text",
        "shadow": "rejected:usercentrics",
    }
    assert all(e["success"] for e in episodes.values())  # rejected, and the click got through
    first = [g for g in tables["grounding"] if g["step_index"] == 0]
    assert {g["task_id"] for g in first if g["selector"] == "#app"} == set(episodes)
    assert not [r for r in tables["rejects"] if r["reason"] == "occluded"]


@pytest.fixture(scope="module")
def two_origins(browser_plugin: ReadyPlugin, site: str) -> Iterator[BrowserHost]:
    """A browser allowed to open the stand-in site as 127.0.0.1 and as localhost."""
    port = site.rsplit(":", 1)[1]
    browser = BrowserHost(BrowserConfig(allow=[f"127.0.0.1:{port}", f"localhost:{port}"]))
    browser_plugin.run(browser.start(), timeout=120)
    try:
        yield browser
    finally:
        browser_plugin.run(browser.close(), timeout=60)


def test_a_consent_answer_that_leaves_the_origin_is_an_off_scope_reject(
    browser_plugin: ReadyPlugin, two_origins: BrowserHost, site: str, tmp_path: Path
) -> None:
    """The scope is fixed by the start URL's load: "Reject all" leads to another origin (one
    the browser may open), so the task is one off_scope reject and no step is recorded
    there; accept, which stays, plays as before."""
    click = (Click(x=120, y=320),)
    task = TaskSpec(id="leaving", start_url=site + "/leaving", instruction="x", actions=click)
    rejected = _run(browser_plugin, two_origins, tmp_path / "r", [task])
    assert not rejected["steps"] and not rejected["episodes"]
    [reject] = rejected["rejects"]
    assert (reject["stage"], reject["reason"]) == ("task", "off_scope"), reject
    assert "localhost" in reject["detail"] and "cookie-consent answer" in reject["detail"]
    accepted = _run(browser_plugin, two_origins, tmp_path / "a", [task], consent="accept")
    assert accepted["episodes"][0]["consent_action"] == "accepted:text"
    assert {s["url"].split("/")[2] for s in accepted["steps"]} == {site.split("/")[2]}


def test_consent_accept_and_leave(
    browser_plugin: ReadyPlugin, host: BrowserHost, site: str, tmp_path: Path
) -> None:
    tasks = [TaskSpec(id="text", start_url=site + "/text", instruction="x")]
    accepted = _run(browser_plugin, host, tmp_path / "a", tasks, consent="accept")
    assert accepted["episodes"][0]["consent_action"] == "accepted:text"
    left = _run(browser_plugin, host, tmp_path / "l", tasks, consent="leave")
    assert left["episodes"][0]["consent_action"] == "left:text"
    assert [r for r in left["rejects"] if r["reason"] == "occluded"]  # the app stays covered


def test_the_bundled_shop_banner_is_answered_essential_only(
    browser_plugin: ReadyPlugin, tmp_path: Path
) -> None:
    """The shop's "We value your privacy" banner (Essential only / Accept all): reject picks
    "Essential only", and the shop's tasks still run (explore policy, two of them)."""
    from datagen.source import BUNDLED_SITES
    from datagen.source.readers import read_sites

    tasks = read_sites(BUNDLED_SITES, ["shop"])[:2]
    config = make_config(tmp_path, policy={"type": "explore"}, run={"max_steps": 2})
    out = tmp_path / "out"
    Local(browser_plugin).run(config, 3, tasks, timeout=300, run_id="shop")
    episodes = read(out, "episodes")
    assert len(episodes) == 2 and {e["consent_action"] for e in episodes} == {"rejected:text"}
    banner = [g for g in read(out, "grounding") if g["selector"].startswith("#cookie-")]
    assert not banner  # answered before step 0: its buttons are no longer on the page
