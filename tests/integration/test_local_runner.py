"""The local runner (datagen/pipeline/local.py) on real Chromium, without Dask: a browser of
its own, shards of test pages written and read back, the engine roles of a model policy
started against the stand-in over HTTP, and everything it started closed after."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from datagen.browser.host import BrowserHost
from datagen.config import SimConfig
from datagen.engine.sim import SimServer
from datagen.pipeline import LocalRunner, ShardContext, ShardRun
from datagen.pipeline.rows import EpisodeOutcome
from datagen.records import Click, SuccessCheck, TaskSpec
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import completed_shards
from datagen.source.serve import SiteServer
from tests.helpers import make_config

pytestmark = pytest.mark.browser
CLICKED = "document.body.dataset.clicked === 'front'"


def test_a_runner_runs_shards_on_a_browser_of_its_own_and_closes_it(
    chromium: str, pages: SiteServer, tmp_path: Path
) -> None:
    config = make_config(
        tmp_path,
        policy={"type": "scripted"},
        browser={"executable": chromium, "allow": [pages.origin]},
    )
    page = pages.base_url + "occluded.html"
    tasks = [
        TaskSpec(
            id="front",
            start_url=page,
            instruction="Click Front",
            actions=(Click(x=80, y=40),),
            check=SuccessCheck(js=CLICKED),
        ),
        TaskSpec(id="plain", start_url=pages.base_url + "plain.html", instruction="Look."),
    ]

    async def main() -> tuple[LocalRunner, BrowserHost, ShardRun, ShardRun, ShardContext]:
        local = LocalRunner(config, run_id="local-test")
        async with local:
            assert local.host is not None and local.host.connected
            first = await local.run(0, tasks)
            second = await local.run(1, tasks[1:])  # the same context: one book of hosts
            return local, local.host, first, second, local.context

    local, host, first, second, ctx = asyncio.run(main())

    assert (first.result.tasks, first.result.episodes, first.result.solved) == (2, 2, 1)
    assert second.result.episodes == 1 and ctx.hosts is not None
    assert completed_shards(LocalStorage(tmp_path / "out")) == {0, 1}  # the config's output
    episodes = {e["task_id"]: e for e in first.rows("episodes")}
    assert set(episodes) == {"front", "plain"} and episodes["front"]["success"] is True
    assert {e["run_id"] for e in first.rows("episodes")} == {"local-test"}
    steps = first.rows("steps")
    assert len(steps) == first.result.steps and all(s["screenshot"]["bytes"] for s in steps)
    assert len(first.rows("grounding")) == first.result.grounding
    assert [e["task_id"] for e in second.rows("episodes")] == ["plain"]
    marker = json.loads((tmp_path / "out" / "_markers" / "shard-00001.json").read_text())
    assert marker["stats"]["episodes"] == 1
    # closed on the way out: its browser stopped, no context to run on
    assert local.host is None and not host.connected
    with pytest.raises(RuntimeError, match="fix: `async with LocalRunner"):
        _ = local.context


def test_a_runner_starts_the_engine_roles_a_model_policy_calls(
    chromium: str, pages: SiteServer, tmp_path: Path
) -> None:
    answer = json.dumps(
        {"thought": "read", "note": "", "action": {"type": "answer", "content": "9"}}
    )
    with SimServer(SimConfig(speed_factor=50, replies=[answer])) as sim:
        config = make_config(
            tmp_path,
            policy={"type": "vlm"},
            engine={"url": sim.url},
            browser={"executable": chromium, "allow": [pages.origin]},
            run={"max_steps": 3},
        )
        task = TaskSpec(id="hours", start_url=pages.base_url + "plain.html", instruction="When?")
        local = LocalRunner(config)
        with pytest.raises(RuntimeError, match="not started"):
            _ = local.context  # no browser, no engine clients yet

        async def main() -> EpisodeOutcome:
            async with local:
                assert local.engines is not None and "policy" in local.engines.roles
                return await local.episode(task)

        outcome = asyncio.run(main())
    assert outcome.episode is not None, outcome.rejects
    assert (outcome.episode.status, outcome.episode.answer) == ("done", "9")
    assert local.engines is None and local.host is None  # both closed


def test_a_runner_on_a_given_browser_needs_no_start_and_leaves_it_open(tmp_path: Path) -> None:
    """No Chromium here: a host given is the caller's (never started nor closed by the runner),
    so a context is ready at once, with a shard's defaults for what is not given."""
    config = make_config(tmp_path, policy={"type": "scripted"})
    host = BrowserHost(config.browser)
    local = LocalRunner(config, host=host)
    ctx = local.context
    assert ctx.host is host and ctx.run_id == "local" and ctx is local.context
    assert (
        isinstance(ctx.storage, LocalStorage) and ctx.storage.root == (tmp_path / "out").resolve()
    )
    assert ctx.engines is None and ctx.hosts is None and ctx.pool is None
    assert ctx.resolve_url("site://todo/") == "site://todo/"
    asyncio.run(local.close())
    assert local.host is host and local.context is ctx
