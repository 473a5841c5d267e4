"""URLs that do not parse never kill a shard: a start URL is a `bad_url` reject, a goto's (a
script's or the model's, through the engine stand-in) an action error, with the URL guard on
and off. Before, `urlsplit(...).port` raised ValueError inside the guard, the shard failed three
times and its other tasks were lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datagen.browser.host import BrowserHost
from datagen.browser.navigation import NavigationFailed
from datagen.config import BrowserConfig, SimConfig
from datagen.engine.sim import SimServer
from datagen.records import Goto, TaskSpec
from tests.helpers import Local, make_config, read

pytestmark = pytest.mark.browser
# a port out of range, an unclosed bracket, a port that is no number: Python raises on these
MALFORMED = ["http://127.0.0.1:99999/", "http://[::1/", "http://h:80a/"]
# Python's parser takes these, Chromium's does not ("Cannot navigate to invalid URL")
CHROMIUM_REFUSES = ["http://a^b/", "http://999.1.1.1/"]
NO_SUCH_HOST = "http://no-such-host.invalid/"  # a goto there raised NameNotResolved: no block


def tasks(base_url: str, *actions: Any) -> list[TaskSpec]:
    good = [
        TaskSpec(id=f"good-{i}", start_url=f"{base_url}real/offsite.html", instruction="x")
        for i in range(2)
    ]
    good[0] = good[0].model_copy(update={"actions": actions})
    bad = [
        TaskSpec(id=f"bad-{i}", start_url=url, instruction="x")
        for i, url in enumerate(MALFORMED + CHROMIUM_REFUSES)
    ]
    return [good[0], *bad[:3], good[1], *bad[3:]]


def outcome(out: Path, shard: int) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    episodes = {e["task_id"]: e for e in read(out, "episodes", shard)}
    ended = {r["task_id"]: r for r in read(out, "rejects", shard) if r["stage"] == "task"}
    return episodes, ended


def test_a_shard_with_malformed_start_urls_and_gotos_records_every_task(
    local: Local, pages: Any, tmp_path: Path
) -> None:
    gotos = [Goto(url=url) for url in [*MALFORMED, *CHROMIUM_REFUSES, NO_SUCH_HOST]]
    config = make_config(tmp_path, policy={"type": "scripted"}, run={"max_steps": 8})
    out = tmp_path / "out"
    result = local.run(config, 4, tasks(pages.base_url, *gotos), timeout=180).result

    episodes, ended = outcome(out, 4)
    assert set(episodes) == {"good-0", "good-1"} and result.tasks == 7
    assert {task: r["reason"] for task, r in ended.items()} == {
        f"bad-{i}": "bad_url" for i in range(5)
    }
    assert "cannot parse 'http://127.0.0.1:99999/': Port out of range" in ended["bad-0"]["detail"]
    assert "Invalid IPv6 URL" in ended["bad-1"]["detail"]
    steps = [s for s in read(out, "steps", 4) if s["task_id"] == "good-0"]
    errors = [s["action_error"] or "" for s in steps]
    assert all(e.startswith("bad URL: cannot parse") for e in errors[:5]), errors
    assert "no-such-host.invalid" in errors[5]  # taken, and failed as it would unguarded
    assert steps[-1]["action_type"] == "done" and episodes["good-0"]["n_steps"] == len(steps)


def test_malformed_start_urls_are_bad_url_with_the_guard_off(browser_plugin: Any) -> None:
    async def scenario() -> list[str]:
        host = BrowserHost(BrowserConfig(url_guard=False))
        await host.start()
        reasons = []
        try:
            for url in MALFORMED + CHROMIUM_REFUSES:
                async with host.session() as session:
                    try:
                        await session.goto(url)
                        reasons.append("loaded")
                    except NavigationFailed as exc:
                        reasons.append(exc.reason.value)
                    # and a goto there is an action error, nothing raised
                    error = await session.act(Goto(url=url))
                    reasons.append((error or "").split(":")[0])
        finally:
            await host.close()
        return reasons

    assert browser_plugin.run(scenario(), timeout=120) == ["bad_url", "bad URL"] * 5


def test_a_model_sending_the_browser_to_malformed_urls_does_not_kill_the_shard(
    local: Local, pages: Any, tmp_path: Path
) -> None:
    def step(action: dict[str, str]) -> str:
        return json.dumps({"thought": "go", "note": "", "action": action})

    replies = [step({"type": "goto", "url": url}) for url in [*MALFORMED, NO_SUCH_HOST]]
    replies.append(step({"type": "answer", "content": "gave up"}))
    with SimServer(SimConfig(speed_factor=50, replies=replies)) as sim:
        config = make_config(
            tmp_path,
            policy={"type": "vlm"},
            engine={"url": sim.url},
            cluster={"workers": 1, "sessions_per_worker": 1, "dashboard": "127.0.0.1:0"},
            run={"max_steps": 6},
        )
        result = local.run(config, 5, tasks(pages.base_url), timeout=180).result
    episodes, ended = outcome(tmp_path / "out", 5)
    assert result.tasks == 7 and set(episodes) == {"good-0", "good-1"}
    assert set(ended) == {f"bad-{i}" for i in range(5)}
    assert {r["reason"] for r in ended.values()} == {"bad_url"}
    for task in ("good-0", "good-1"):  # one task at a time: each got the replies in order
        steps = [s for s in read(tmp_path / "out", "steps", 5) if s["task_id"] == task]
        assert [s["action_type"] for s in steps] == ["goto"] * 4 + ["done"]
        errors = [s["action_error"] or "" for s in steps]
        assert all(e.startswith("bad URL: cannot parse") for e in errors[:3]), errors
        assert "no-such-host.invalid" in errors[3] and json.loads(steps[0]["raw_output"])
        assert episodes[task]["status"] == "done" and episodes[task]["answer"] == "gave up"
