"""Pages that try to sink their shard, each beside a normal task: history, location and
frame navigation floods, window floods, a page closing itself, a print dialog, a beforeunload
handler that never returns, a renderer out of memory. Each ends its own episode (an episode
or a reject with a reason), never the browser or the shard, and nothing prints a traceback."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from datagen.browser.hostile import FLOOD_NAVIGATIONS
from datagen.records import Click, TaskSpec, Wait
from datagen.source.serve import SiteServer
from tests.helpers import Local, ReadyPlugin, datagen, make_config, read, rows, set_up

pytestmark = pytest.mark.browser

# A small V8 heap, so that the out-of-memory page crashes its renderer in a moment (and the
# page memory ceiling, higher, does not stop it first).
SMALL_HEAP = "--js-flags=--max-old-space-size=96"


@pytest.fixture(scope="module")
def small_heap_plugin(
    chromium: str, pages: SiteServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReadyPlugin]:
    from datagen.runtime.plugin import BrowserPlugin

    config = make_config(
        tmp_path_factory.mktemp("floods"),
        browser={"allow": [pages.origin], "extra_args": [SMALL_HEAP]},
    )
    with set_up(BrowserPlugin(config)) as plugin:
        yield plugin


def hostile(pages: SiteServer, name: str) -> TaskSpec:
    return TaskSpec(
        id=name,
        start_url=f"{pages.base_url}hostile/{name}.html",
        instruction=name,
        actions=(Click(x=120, y=40), Wait(seconds=0.3)),
    )


def normal(pages: SiteServer) -> TaskSpec:
    return TaskSpec(
        id="normal",
        start_url=f"{pages.base_url}plain.html",
        instruction="look",
        actions=(Wait(seconds=0.2),),
    )


def shard_of(
    plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path, names: list[str]
) -> tuple[dict[str, dict[str, object]], dict[str, dict[str, object]]]:
    """Run one shard of the named hostile pages and a normal task: (episodes, rejects) by task."""
    # A generous step limit: the machine running the tests is often loaded; the floods are
    # stopped by their own rules, not by a timeout.
    config = make_config(
        tmp_path, policy={"type": "scripted"}, run={"max_steps": 3, "step_timeout_s": 30}
    )
    tasks = [*(hostile(pages, n) for n in names), normal(pages)]
    Local(plugin).run(config, 7, tasks, timeout=240)
    episodes = {str(e["task_id"]): e for e in read(tmp_path / "out", "episodes", 7)}
    rejects = {
        str(r["task_id"]): r
        for r in read(tmp_path / "out", "rejects", 7)
        if r["stage"] in ("task", "episode")
    }
    assert set(episodes) | set(rejects) == {t.id for t in tasks}
    assert not set(episodes) & set(rejects)
    return episodes, rejects


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    shown = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not shown, [r.getMessage() for r in shown]


def test_a_history_flood_beside_a_normal_task(
    browser_plugin: ReadyPlugin,
    pages: SiteServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """200,000 pushState calls on load. Before: `goto` timed out, the browser stopped answering
    (its process swamped by one commit per call: Playwright turns off Chromium's navigation
    limit), the shard failed with BrowserDied naming the other task, on every retry."""
    caplog.set_level(logging.INFO)
    episodes, _ = shard_of(browser_plugin, pages, tmp_path, ["historyflood", "hashflood"])
    assert "normal" in episodes
    # held by Chromium's own limit: the page goes on with its first 200 entries
    assert str(episodes["historyflood"]["final_url"]).endswith("?p=199")
    assert browser_plugin.host.connected
    assert browser_plugin.run(browser_plugin.host.responsive())
    no_traceback(caplog)


@pytest.mark.slow  # a long scenario: CI's second step (scripts/test.sh -m slow)
def test_floods_and_traps_each_end_their_own_episode(
    small_heap_plugin: ReadyPlugin,
    pages: SiteServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    names = [
        "framesflood",  # 40 frames at Chromium's limit each: over FLOOD_NAVIGATIONS, stopped
        "windowflood",  # hundreds of window.open a second: over FLOOD_POPUPS, stopped
        "selfclose",  # window.close() on load and on a click
        "printdialog",  # window.print() on load and on a click
        "beforeunloadtrap",  # an endless loop in beforeunload
        "oom",  # runs its renderer out of memory
    ]
    episodes, rejects = shard_of(small_heap_plugin, pages, tmp_path, names)
    assert "normal" in episodes
    assert rejects["framesflood"]["reason"] == "renderer_crash"
    assert f"over {FLOOD_NAVIGATIONS} times" in str(rejects["framesflood"]["detail"])
    # stopped once its windows reach us; on a loaded machine its load can time out first
    windows = rejects["windowflood"]
    assert (windows["reason"] == "renderer_crash" and "windows" in str(windows["detail"])) or (
        windows["reason"] == "navigation_failed" and "Timeout" in str(windows["detail"])
    )
    assert rejects["oom"]["reason"] == "renderer_crash"
    assert "selfclose" in episodes and "printdialog" in episodes
    assert rejects["beforeunloadtrap"]["reason"] == "timeout_step"
    host = small_heap_plugin.host
    assert host.connected and small_heap_plugin.run(host.responsive())
    no_traceback(caplog)


def test_a_run_with_a_history_flood_beside_a_normal_task_exits_0(
    pages: SiteServer, tmp_path: Path
) -> None:
    """The issue's acceptance, through the CLI: one shard, the flood and a normal task, a
    LocalCluster worker; before, every attempt failed with BrowserDied and the run exited 1."""
    tasks = [
        {
            "id": name,
            "start_url": f"{pages.base_url}{page}",
            "instruction": name,
            "actions": [{"type": "wait", "seconds": 0.2}],
        }
        for name, page in (("flood", "hostile/historyflood.html"), ("normal", "plain.html"))
    ]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    spec = {
        "sources": [{"type": "jsonl", "path": "tasks.jsonl"}],
        "policy": {"type": "scripted"},
        "browser": {"allow": [pages.origin]},
        "cluster": {"workers": 1, "sessions_per_worker": 2, "dashboard": "127.0.0.1:0"},
        "run": {"max_steps": 2, "tasks_per_shard": 2, "step_timeout_s": 30},
        "output": {"uri": str(tmp_path / "out")},
    }
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(spec))
    done = datagen("run", str(tmp_path / "p.yaml"), timeout=400)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "Traceback" not in said and "BrowserDied" not in said
    assert "normal" in {e["task_id"] for e in rows(tmp_path / "out", "episodes")}
