"""The episode's scope (datagen/scope.py), the static URL guard check, and the explore policy
staying on task. No browser."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from datagen.browser.guard import UrlGuard
from datagen.cli import app
from datagen.config import ExplorePolicyConfig, RunConfig
from datagen.config.scope import is_local_host, url_directory
from datagen.policy import make_policy
from datagen.policy.explore import Explorer
from datagen.records import Back, Click, Element, Goto, Observation, RejectReason, Scroll, TaskSpec
from datagen.scope import Scope, page_problem, same_document, site_of
from tests.helpers import observation


@pytest.mark.parametrize(
    ("host", "site"),
    [
        ("app.example.com", "example.com"),
        ("example.com", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("shop.example.com.au", "example.com.au"),
        ("alice.github.io", "alice.github.io"),
        ("x.alice.github.io", "alice.github.io"),
        ("my-app.vercel.app", "my-app.vercel.app"),
        ("www.example.io", "example.io"),  # a two-letter TLD without a known second level
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("localhost", "localhost"),
        ("WWW.Example.COM.", "example.com"),
    ],
)
def test_site_of(host: str, site: str) -> None:
    assert site_of(host) == site


def test_site_scope_follows_the_public_suffix_list() -> None:
    """Issue 37: a github.io tenant is its own site; co.uk is no site; k12.ca.us does not
    widen one (the hand-written lists before read `x.k12.ca.us`'s site as `ca.us`)."""
    alice = Scope.for_task("site", "https://alice.github.io/start")
    assert alice.contains("https://alice.github.io/other") and alice.describe() == (
        "site alice.github.io"
    )
    assert not alice.contains("https://bob.github.io/")
    stray = page_problem("https://bob.github.io/", alice)
    assert stray is not None and stray.reason is RejectReason.OFF_SCOPE
    shop = Scope.for_task("site", "https://a.example.co.uk/")
    assert shop.contains("https://b.example.co.uk/x") and not shop.contains("https://other.co.uk/")
    school = Scope.for_task("site", "https://www.school.k12.ca.us/")
    assert school.contains("https://mail.school.k12.ca.us/")
    assert not school.contains("https://other.k12.ca.us/")
    assert not school.contains("https://city.ca.us/")


def test_site_scope_is_the_registrable_domain_any_scheme_or_port() -> None:
    scope = Scope.for_task("site", "https://app.example.com:8443/start")
    assert scope.contains("http://example.com/")
    assert scope.contains("https://docs.example.com/a?b#c")
    assert scope.contains("https://app.example.com:9000/x")
    assert not scope.contains("https://example.org/")
    assert not scope.contains("https://notexample.com/")
    assert not scope.contains("mailto:a@example.com")
    assert scope.contains("blob:https://app.example.com/1234-5678")


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("[::1]", True),
        ("10.0.0.5", True),
        ("8.8.8.8", True),  # an IP literal, public or not: no domain to widen to
        ("localhost", True),
        ("LOCALHOST.", True),
        ("app.localhost", True),
        ("intranet", True),
        ("example.com", False),
        ("app.example.co.uk", False),
        ("localhost.example.com", False),
    ],
)
def test_which_hosts_are_local(host: str, local: bool) -> None:
    assert is_local_host(host) is local


@pytest.mark.parametrize(
    ("url", "directory"),
    [
        ("http://127.0.0.1:8000/todo/index.html", "http://127.0.0.1:8000/todo/"),
        ("http://127.0.0.1:8000/todo/", "http://127.0.0.1:8000/todo/"),
        ("http://127.0.0.1:8000/todo/?next=/a/b#x/y", "http://127.0.0.1:8000/todo/"),
        ("http://127.0.0.1:8000/todo", "http://127.0.0.1:8000/"),  # a file in /
        ("http://localhost", "http://localhost/"),
    ],
)
def test_url_directory(url: str, directory: str) -> None:
    assert url_directory(url) == directory


def test_site_scope_of_a_local_start_is_its_origin_and_directory() -> None:
    scope = Scope.for_task("site", "http://127.0.0.1:8000/todo/index.html")
    assert scope.describe() == "site http://127.0.0.1:8000/todo/"
    assert scope.contains("http://127.0.0.1:8000/todo/index.html#top")
    assert scope.contains("http://127.0.0.1:8000/todo/")
    assert scope.contains("http://127.0.0.1:8000/todo/edit/3?x=1")
    assert not scope.contains("http://127.0.0.1:8000/shop/")  # another app on the same server
    assert not scope.contains("http://127.0.0.1:8000/todo")  # a file in /, not the folder
    assert not scope.contains("http://127.0.0.1:8000/")
    assert not scope.contains("http://127.0.0.1:9/todo/")
    assert not scope.contains("https://127.0.0.1:8000/todo/")
    assert not scope.contains("http://localhost:8000/todo/")
    assert not scope.contains("http://127.0.0.2:8000/todo/")


@pytest.mark.parametrize(
    ("start", "inside", "outside"),
    [
        ("http://localhost:3000/", "http://localhost:3000/any/page", "http://localhost:4000/"),
        ("http://[::1]:8080/app/", "http://[::1]:8080/app/x", "http://[::1]:8080/other/"),
        ("http://app.localhost/a/b", "http://app.localhost/a/c", "http://app.localhost/b/"),
        ("http://intranet/wiki/", "http://intranet/wiki/Home", "http://intranet/mail/"),
        ("http://10.0.0.5:80/x/", "http://10.0.0.5/x/y", "http://10.0.0.5:81/x/"),
        ("http://127.0.0.1:8000/todo", "http://127.0.0.1:8000/shop/", "http://127.0.0.1:8001/"),
    ],
)
def test_site_scope_of_every_kind_of_local_start(start: str, inside: str, outside: str) -> None:
    scope = Scope.for_task("site", start)
    assert scope.contains(start) and scope.contains(inside) and not scope.contains(outside)


def test_bundled_sites_on_one_server_are_each_their_own_scope() -> None:
    base = "http://127.0.0.1:41234/"
    names = ["settings", "shop", "signup", "table", "todo"]
    for name in names:
        scope = Scope.for_task("site", base + name + "/", base + name + "/")
        assert scope.contains(base + name + "/#page=2&size=10")
        assert not [o for o in names if o != name and scope.contains(base + o + "/")]
        stray = page_problem(base + "shop/", scope)
        assert (stray is None) is (name == "shop")


def test_a_local_start_redirected_elsewhere_keeps_both_directories() -> None:
    scope = Scope.for_task("site", "http://127.0.0.1:8000/old/", "http://127.0.0.1:8000/new/home")
    assert scope.contains("http://127.0.0.1:8000/old/x") and scope.contains(
        "http://127.0.0.1:8000/new/y"
    )
    assert not scope.contains("http://127.0.0.1:8000/other/")
    named = Scope.for_task("site", "http://127.0.0.1:8000/go", "https://www.example.com/app/")
    assert named.contains("https://docs.example.com/") and named.contains("http://127.0.0.1:8000/x")
    assert not named.contains("http://127.0.0.1:9/")


def test_origin_scope_is_scheme_host_and_port() -> None:
    scope = Scope.for_task("origin", "https://app.example.com/start")
    assert scope.contains("https://app.example.com:443/other")
    assert not scope.contains("http://app.example.com/other")
    assert not scope.contains("https://app.example.com:8443/")
    assert not scope.contains("https://docs.example.com/")


def test_a_redirected_start_widens_the_scope_to_where_it_landed() -> None:
    scope = Scope.for_task("origin", "http://example.com/", "https://example.com/home")
    assert scope.contains("https://example.com/other") and scope.contains("http://example.com/x")
    assert scope.is_start("https://example.com/home#top") and scope.is_start("http://example.com")
    assert not scope.is_start("https://example.com/other")


def test_anywhere_is_every_web_page_the_guard_lets_through() -> None:
    guard = UrlGuard(["127.0.0.1:8000"])
    scope = Scope.for_task("anywhere", "http://127.0.0.1:8000/", blocked=guard.check_static)
    assert scope.contains("https://github.com/") and scope.contains("http://127.0.0.1:8000/x")
    assert not scope.contains("http://127.0.0.1:9/")
    assert not scope.contains("http://169.254.169.254/latest/meta-data/")
    assert not scope.contains("file:///etc/passwd")
    assert scope.contains("http://127.0.0.1:9/", guarded=False)


def test_list_scope_hosts_ports_origins_and_prefixes() -> None:
    entries = ["example.com", "intranet:8080", "https://api.example.org", "https://x.net/app/"]
    scope = Scope.for_task(entries, "https://start.example.net/begin")
    assert scope.contains("http://example.com/") and scope.contains("https://a.b.example.com/")
    assert not scope.contains("https://badexample.com/")
    assert scope.contains("http://intranet:8080/x") and not scope.contains("http://intranet/")
    assert scope.contains("https://api.example.org/v1")
    assert not scope.contains("http://api.example.org/v1")
    assert scope.contains("https://x.net/app/page") and not scope.contains("https://x.net/other")
    # the start page itself is always in scope, not its whole site
    assert scope.contains("https://start.example.net/begin#x")
    assert not scope.contains("https://start.example.net/other")
    assert "example.com" in scope.describe() and "intranet:8080" in scope.describe()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("everywhere", "is not a scope"),
        ([], "empty list"),
        (["ftp://files.example.com"], r"only http\(s\)"),
        (["example.com/path"], "is not a host"),
        (["example.com:http"], "bad port"),
        (["example.com:70000"], "bad port"),
        ([" "], "empty scope entry"),
    ],
)
def test_bad_scope_settings_say_how_to_fix(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        RunConfig(scope=value)
    assert "fix:" in str(info.value)


def test_good_scope_settings_load() -> None:
    assert RunConfig().scope == "site"
    for value in ("origin", "anywhere", ["example.com", "[::1]:8080", "https://a.b/c/"]):
        assert RunConfig(scope=value).scope == value


def test_page_problems() -> None:
    scope = Scope.for_task("site", "http://127.0.0.1:8000/")

    def reason(url: str, status: int | None = None, requested: str = "") -> str | None:
        stray = page_problem(url, scope, status, requested)
        return stray.reason.value if stray else None

    assert reason("http://127.0.0.1:8000/a") is None
    assert reason("http://127.0.0.1:8000/a", status=200) is None
    assert reason("http://127.0.0.1:8000/missing", status=404) == "error_page"
    assert reason("http://127.0.0.1:8000/boom", status=500) == "error_page"
    assert reason("chrome-error://chromewebdata/") == "error_page"
    assert reason("chrome-error://chromewebdata/", requested="http://127.0.0.1:8000/x") == (
        "error_page"
    )
    assert reason("chrome-error://chromewebdata/", requested="http://127.0.0.1:9/") == "off_scope"
    off = page_problem("chrome-error://chromewebdata/", scope, None, "https://github.com/x")
    assert off is not None and off.reason is RejectReason.OFF_SCOPE
    assert off.url == "https://github.com/x" and "error page" in off.detail
    assert reason("about:blank") == "blank_page"
    assert reason("") == "blank_page"
    assert reason("data:text/html,hi") == "blank_page"
    assert reason("https://github.com/") == "off_scope"
    assert same_document("http://a/x#1", "http://a/x#2") and not same_document("", "http://a/")


def test_static_guard_check_needs_no_dns() -> None:
    guard = UrlGuard(["127.0.0.1:8000", "10.1.0.0/16", "intranet"])
    assert guard.check_static("http://127.0.0.1:8000/") is None
    assert "not a public address" in (guard.check_static("http://127.0.0.1:8001/") or "")
    assert "not a public address" in (guard.check_static("http://localhost/") or "")
    assert guard.check_static("http://10.1.2.3/") is None
    assert guard.check_static("http://10.2.0.1/") is not None
    assert guard.check_static("http://intranet/") is None
    assert guard.check_static("https://some-name.example/") is None  # only DNS could tell
    assert guard.check_static("http://8.8.8.8/") is None
    assert "scheme file" in (guard.check_static("file:///etc/passwd") or "")
    assert guard.check_static("about:blank") is None


# ----------------------------------------------------------------- explore stays on task

START = "http://127.0.0.1:8000/"
TASK = TaskSpec(id="t", start_url=START, instruction="x")


def link(index: int, href: str, **kw: object) -> Element:
    return Element.model_validate(
        {
            "index": index,
            "tag": "a",
            "role": "link",
            "name": f"l{index}",
            "selector": f"#l{index}",
            "box": {"x": 10 * index, "y": 20, "width": 8, "height": 6},
            "hit": True,
            "href": href,
            **kw,
        }
    )


def observe(elements: list[Element], url: str = START + "app") -> Observation:
    return observation(elements, url=url)


def explorer(seed: int = 0) -> Explorer:
    guard = UrlGuard(["127.0.0.1:8000"])
    scope = Scope.for_task("site", START, blocked=guard.check_static)
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed, scope=scope)
    assert isinstance(policy, Explorer)
    return policy


def test_explore_never_follows_offsite_links_while_in_scope_ones_exist() -> None:
    elements = [
        link(0, "https://github.com/x"),
        link(1, START + "a"),
        link(2, "http://127.0.0.2:9/"),
        link(3, "mailto:x@example.com"),
        link(4, START + "b"),
        link(5, "javascript:void(0)"),
        link(6, ""),  # not known: a button, or a scan without hrefs
    ]
    for seed in range(10):
        policy = explorer(seed)
        picks = [asyncio.run(policy.decide(observe(elements), TASK)) for _ in range(8)]
        assert {d.target.index for d in picks[:4] if d.target} == {1, 4, 5, 6}
        assert [d.action.type for d in picks[4:]] == ["done"] * 4  # then nothing new: it stops


def test_explore_follows_offsite_links_only_when_nothing_else_but_never_blocked_ones() -> None:
    elements = [link(0, "https://github.com/x"), link(1, "http://169.254.169.254/")]
    for seed in range(10):
        decision = asyncio.run(explorer(seed).decide(observe(elements), TASK))
        assert decision.target is not None and decision.target.index == 0
    blocked = [link(1, "http://169.254.169.254/"), link(2, "http://127.0.0.1:9/")]
    decision = asyncio.run(explorer().decide(observe(blocked), TASK))
    assert decision.target is None and isinstance(decision.action, Scroll | Back)


def test_explore_does_not_go_back_from_the_start_page() -> None:
    nothing = [link(0, START + "a", hit=False)]
    for seed in range(30):
        decision = asyncio.run(explorer(seed).decide(observe(nothing, url=START), TASK))
        assert isinstance(decision.action, Scroll)


def test_explore_returns_from_a_bad_page_back_first_then_the_start() -> None:
    policy = explorer()
    first = asyncio.run(policy.decide(observe([link(1, START + "a")]), TASK))
    assert isinstance(first.action, Click)
    error = observe([link(9, "", name="Reload")], url="chrome-error://chromewebdata/")
    assert isinstance(asyncio.run(policy.decide(error, TASK)).action, Back)
    again = asyncio.run(policy.decide(observe([], url="about:blank"), TASK))
    assert again.action == Goto(url=START)
    # and the element that led away is not chosen again while others are there
    elements = [link(1, START + "a"), link(2, START + "b")]
    picks = [asyncio.run(policy.decide(observe(elements), TASK)) for _ in range(4)]
    assert [d.target.index if d.target else d.action.type for d in picks] == [2] + ["done"] * 3


def test_explore_told_it_strayed_drops_its_follow_ups_and_avoids_the_element() -> None:
    field = link(1, "", tag="select", role="combobox")
    other = link(2, START + "b")
    policy = explorer()
    assert asyncio.run(policy.decide(observe([field]), TASK)).target.index == 1
    policy.strayed("off_scope", "https://github.com/")
    picks = [asyncio.run(policy.decide(observe([field, other]), TASK)) for _ in range(3)]
    assert [d.target.index if d.target else d.action.type for d in picks] == [2, "done", "done"]


# ----------------------------------------------------------------- validate warns


def pipeline(folder: Path, urls: list[str], **extra: object) -> Path:
    tasks = [{"id": f"t{i}", "start_url": u, "instruction": "x"} for i, u in enumerate(urls)]
    (folder / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    spec = {"sources": [{"type": "jsonl", "path": "tasks.jsonl"}], "output": {"uri": "o"}}
    (folder / "p.yaml").write_text(yaml.safe_dump({**spec, **extra}))
    return folder / "p.yaml"


def test_validate_warns_naming_the_key_when_start_urls_would_be_blocked(tmp_path: Path) -> None:
    path = pipeline(tmp_path, ["http://127.0.0.1:8000/a", "http://127.0.0.1:8000/b"])
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert (
        "warning: 2 of 2 start URLs would be blocked by the URL guard (127.0.0.1:8000 is not a "
        'public address). fix: add "127.0.0.1:8000" to browser.allow'
    ) in " ".join(result.output.split())
    dry = CliRunner().invoke(app, ["run", str(path), "--dry-run", "-o", str(tmp_path / "o")])
    assert dry.exit_code == 0 and "would be blocked by the URL guard" in dry.output


def test_validate_names_every_host_to_allow_and_skips_what_is_allowed(tmp_path: Path) -> None:
    urls = ["http://localhost:3000/", "http://10.0.0.5/x", "https://example.com/", "file:///x"]
    path = pipeline(tmp_path, urls)
    text = " ".join(CliRunner().invoke(app, ["validate", str(path)]).output.split())
    assert "3 of 4 start URLs would be blocked" in text
    assert 'add "localhost:3000", "10.0.0.5" to browser.allow' in text
    allowed = pipeline(tmp_path, urls[:3], browser={"allow": ["localhost:3000", "10.0.0.0/8"]})
    assert "warning" not in CliRunner().invoke(app, ["validate", str(allowed)]).output
    off = pipeline(tmp_path, urls[:3], browser={"url_guard": False})
    assert "warning" not in CliRunner().invoke(app, ["validate", str(off)]).output


def test_bundled_sites_are_not_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"sources": [{"type": "sites"}], "output": {"uri": "o"}}))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0 and "warning" not in result.output


def test_validate_says_in_one_line_what_site_means_for_local_start_urls(tmp_path: Path) -> None:
    urls = ["http://127.0.0.1:8000/todo/index.html", "http://127.0.0.1:8000/shop/", "https://a.io/"]
    allow = {"allow": ["127.0.0.1:8000"]}
    output = CliRunner().invoke(app, ["validate", str(pipeline(tmp_path, urls, browser=allow))])
    lines = [line for line in output.output.splitlines() if line.startswith("scope:")]
    assert lines == [
        "scope: 2 of 3 tasks start on a local host; run.scope site keeps each in its start URL's "
        "folder, not the whole host: http://127.0.0.1:8000/todo/, http://127.0.0.1:8000/shop/. "
        "To widen it, list hosts in run.scope"
    ]
    for quiet in (
        pipeline(tmp_path, urls, browser=allow, run={"scope": "origin"}),
        pipeline(tmp_path, urls, browser=allow, run={"scope": ["127.0.0.1:8000"]}),
        pipeline(tmp_path, urls[2:]),
    ):
        assert "scope:" not in CliRunner().invoke(app, ["validate", str(quiet)]).output


def test_validate_names_the_bundled_sites_folders(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"sources": [{"type": "sites"}], "output": {"uri": "o"}}))
    output = CliRunner().invoke(app, ["validate", str(path)]).output
    line = next(line for line in output.splitlines() if line.startswith("scope:"))
    assert re.search(r"(\d+) of \1 tasks start on a local host", line), line
    assert "site://settings/, site://shop/, site://signup/, … (5 folders)" in line


def test_the_model_policy_is_told_when_its_action_led_away() -> None:
    from datagen.config import VlmPolicyConfig
    from datagen.policy import Recovering
    from datagen.policy.vlm import VlmPolicy

    policy = VlmPolicy(VlmPolicyConfig(type="vlm"), engines=None)  # type: ignore[arg-type]
    policy.strayed("off_scope", "https://github.com/")  # nothing to annotate yet: no error
    policy.previous.append('{"type": "click"}')
    policy.strayed("off_scope", "https://github.com/")
    assert policy.previous == [
        '{"type": "click"} -> off_scope https://github.com/; the page was brought back'
    ]
    assert isinstance(policy, Recovering) and isinstance(explorer(), Recovering)


# ----------------------------------------------------------------- URLs that do not parse

MALFORMED = ["http://127.0.0.1:99999/", "http://[::1/", "http://h:80a/"]


def test_urls_that_do_not_parse_are_in_no_scope_and_raise_nothing() -> None:
    from datagen.pipeline.course import Course

    guard = UrlGuard(["127.0.0.1:8000"])
    for kind in ("site", "origin", "anywhere", ["127.0.0.1"]):
        scope = Scope.for_task(kind, START, *MALFORMED, blocked=guard.check_static)
        for url in MALFORMED:
            assert not scope.contains(url) and not scope.contains(url, guarded=False)
            assert not scope.is_start(url) and not same_document(url, START)
            stray = page_problem(url, scope)
            assert stray is not None and stray.reason is RejectReason.OFF_SCOPE
        # a model's goto there is no place to be "not taken" from: the session says bad URL
        course = Course(scope=scope, start_url=START)
        assert not any(course.elsewhere(url) for url in MALFORMED)
    assert Scope.for_task("site", MALFORMED[0]).sites == frozenset()


def test_explore_never_picks_a_link_whose_href_does_not_parse() -> None:
    elements = [link(i, url) for i, url in enumerate(MALFORMED)] + [link(7, START + "a")]
    for seed in range(10):
        policy = explorer(seed)
        picks = [asyncio.run(policy.decide(observe(elements), TASK)) for _ in range(4)]
        assert {d.target.index for d in picks if d.target} == {7}
    decision = asyncio.run(explorer().decide(observe(elements[:3]), TASK))
    assert decision.target is None  # nothing else there: scroll or back, never those links


def test_validate_warns_about_start_urls_that_do_not_parse(tmp_path: Path) -> None:
    path = pipeline(tmp_path, [*MALFORMED, "https://example.com/", "http://127.0.0.1:8000/"])
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "3 of 5 start URLs do not parse: t0 ('http://127.0.0.1:99999/')" in text
    assert "each will end as a bad_url reject" in text
    assert "1 of 5 start URLs would be blocked by the URL guard" in text
    off = pipeline(tmp_path, MALFORMED[:1], browser={"url_guard": False})
    output = CliRunner().invoke(app, ["validate", str(off)]).output
    assert "1 of 1 start URLs do not parse" in " ".join(output.split())
