"""Episodes stay on task, on real Chromium: pages out of scope, error pages and blank pages
never become steps (tests/fixtures/pages/real/offsite.html and errorlinks.html)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from datagen.pipeline import EpisodeOutcome, ShardContext, run_episode, run_shard
from datagen.records import Back, Click, Goto, TaskSpec
from datagen.scope import Scope
from datagen.source.serve import SiteServer
from tests.helpers import Local, ReadyPlugin, closed_port, make_config

pytestmark = pytest.mark.browser
STRAYS = {"off_scope", "error_page", "blank_page"}
BAD_PAGES = ("chrome-error:", "about:", "data:")


def context(plugin: ReadyPlugin, tmp_path: Path, **overrides: Any) -> ShardContext:
    config = make_config(tmp_path, **{"run": {"max_steps": 12}, **overrides})
    return Local(plugin).context(config, run_id="scope")


def episode(
    plugin: ReadyPlugin, ctx: ShardContext, task: TaskSpec, repeat: int = 0
) -> EpisodeOutcome:
    return plugin.run(run_episode(task, repeat, ctx))


@pytest.mark.slow  # a long scenario: CI's second step (scripts/test.sh -m slow)
def test_explore_on_an_app_full_of_offsite_links_stays_in_scope(
    browser_plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    ctx = context(
        browser_plugin,
        tmp_path,
        run={"max_steps": 12, "seed": 3},
    )
    start = pages.base_url + "real/offsite.html"
    task = TaskSpec(id="offsite", start_url=start, instruction="Explore the app.")
    outcomes = [episode(browser_plugin, ctx, task, repeat) for repeat in range(6)]
    steps = [s for o in outcomes for s in o.steps]
    scope = Scope.for_task("site", start)
    inside = [s for s in steps if scope.contains(s.url)]
    assert len(steps) >= 6 * 10 and len(inside) / len(steps) >= 0.95
    assert not [s.url for s in steps if s.url.startswith(BAD_PAGES)]
    episodes = [o.episode for o in outcomes if o.episode is not None]
    assert len(episodes) == 6 and all(scope.contains(e.final_url) for e in episodes)
    grounding = [g for o in outcomes for g in o.grounding]
    assert grounding and not [g for g in grounding if "Reload" in g.referring_expression]
    strays = [r for o in outcomes for r in o.rejects if r.stage == "step"]
    assert {r.reason for r in strays} <= STRAYS
    # the header's and footer's links are never followed: only the app's own JS button leaves
    assert all("github.com/example/tasks/share" in r.detail for r in strays), strays
    assert len(strays) <= len(outcomes)  # an element that led away once is not tried again
    led = [s for s in steps if s.action_error and "led to" in s.action_error]
    assert len(led) == len(strays) and all(s.target_name == "Share on GitHub" for s in led)


def test_error_and_blank_pages_become_rejects_and_the_episode_goes_on(
    browser_plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    # the whole host: a closed port of it fails in scope (under `site`, the start's folder, it
    # would be another app, off_scope)
    run = {"max_steps": 12, "scope": ["127.0.0.1"]}
    ctx = context(browser_plugin, tmp_path, policy={"type": "scripted"}, run=run)
    start = f"{pages.base_url}real/errorlinks.html?closed={closed_port()}"
    clicks = [Click(x=120, y=y) for y in (60, 110, 160, 210, 260)]
    task = TaskSpec(id="errors", start_url=start, instruction="x", actions=tuple(clicks))
    out = episode(browser_plugin, ctx, task)

    assert out.episode is not None and out.episode.status == "done"
    assert out.episode.final_url == start
    assert [s.url for s in out.steps] == [start] * 6  # five clicks and done, all on the page
    strays = [(r.reason, r.step_index) for r in out.rejects if r.stage == "step"]
    assert strays == [("error_page", 1), ("error_page", 2), ("blank_page", 4)]
    details = [r.detail for r in out.rejects if r.stage == "step"]
    assert "127.0.0.1:" in details[0] and "went back" in details[0]
    assert "missing-page.html answered HTTP 404" in details[1]
    errors = [s.action_error or "" for s in out.steps]
    assert "led to http://127.0.0.1:" in errors[0] and "(error_page)" in errors[0]
    assert "missing-page.html (error_page)" in errors[1] and "(blank_page)" in errors[3]
    assert not errors[2] and not errors[4]  # a new tab is closed; the page stays
    assert {g.step_index for g in out.grounding} <= {0, 1, 2, 3, 4, 5}


def test_an_episode_that_keeps_leaving_ends_as_left_scope_on_its_last_good_page(
    browser_plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    ctx = context(browser_plugin, tmp_path, policy={"type": "scripted"})
    start = pages.base_url + "real/errorlinks.html"
    task = TaskSpec(
        id="leaves", start_url=start, instruction="x", actions=(Click(x=120, y=110),) * 8
    )
    out = episode(browser_plugin, ctx, task)

    assert out.episode is not None and out.episode.status == "left_scope"
    assert out.episode.n_steps == 4 and out.episode.final_url == start
    assert out.episode.final_screenshot.bytes == out.steps[-1].screenshot.bytes
    strays = [r for r in out.rejects if r.stage == "step"]
    assert [r.step_index for r in strays] == [1, 2, 3, 4]
    assert "the episode ends here" in strays[-1].detail


def test_back_from_the_start_page_and_a_goto_elsewhere_record_nothing_off_task(
    browser_plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    ctx = context(browser_plugin, tmp_path, policy={"type": "scripted"})
    start = pages.base_url + "real/offsite.html"
    actions = (
        Back(),
        Goto(url="https://github.com/example"),
        Goto(url="http://169.254.169.254/latest/meta-data/"),
        Goto(url=start + "?x=1"),
    )
    task = TaskSpec(id="back", start_url=start, instruction="x", actions=actions)
    out = episode(browser_plugin, ctx, task)

    assert out.episode is not None and out.episode.status == "done"
    assert [s.url for s in out.steps] == [start] * 4 + [start + "?x=1"]
    assert [r.reason for r in out.rejects if r.stage == "step"] == ["blank_page"]
    errors = [s.action_error or "" for s in out.steps]
    assert "(blank_page)" in errors[0]
    assert errors[1].startswith("not taken: https://github.com/example is outside")
    assert errors[2].startswith("blocked: 169.254.169.254 is not a public address")
    assert any("169.254.169.254" in b for b in out.episode.blocked_requests)
    assert not errors[3]
    # the model policy's clicks and gotos go through the same loop: nothing else to test here


def test_shard_counts_tasks_with_episodes(
    browser_plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    ctx = context(browser_plugin, tmp_path, run={"max_steps": 3, "repeats": 2})
    tasks = [
        TaskSpec(id="ok", start_url=pages.base_url + "real/offsite.html", instruction="x"),
        TaskSpec(id="dead", start_url=f"http://127.0.0.1:{closed_port()}/", instruction="x"),
    ]
    result = browser_plugin.run(run_shard(5, tasks, ctx))
    assert (result.tasks, result.episodes, result.tasks_with_episodes) == (2, 2, 1)
    assert Counter(result.reject_reasons)["blocked_url"] == 2
