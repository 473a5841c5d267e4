"""A page that takes memory without end (hostile/memory.html: JS arrays, typed arrays, canvases,
or a synchronous loop) ends as a `page_memory` reject once it holds more than
`browser.page_memory_mb`; its renderer is stopped, the browser gives the memory back, and the
shard's other tasks are recorded as usual."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.async_api import Error as PlaywrightError

from datagen.browser.failures import Failure
from datagen.browser.memory import PageMemoryExceeded
from datagen.pipeline.failures import failure as episode_failure
from datagen.records import Click, RejectReason, TaskSpec, Wait
from datagen.runtime.plugin import BrowserPlugin
from datagen.sink.storage import LocalStorage
from datagen.source.serve import SiteServer
from tests.helpers import Local, ReadyPlugin, make_config, read, set_up

pytestmark = pytest.mark.browser
CEILING_MB = 384  # the page's own hard stop is 2048 MB: a ceiling that failed still ends
KINDS = ("arrays", "typed", "canvas", "sync")
MEASURED = re.compile(r"the page held (\d+) MB \(its (?:\d+ )?renderer process")


@pytest.fixture(scope="module")
def plugin(
    chromium: str, pages: SiteServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReadyPlugin]:
    config = make_config(
        tmp_path_factory.mktemp("memory"),
        browser={"allow": [pages.origin], "page_memory_mb": CEILING_MB},
    )
    with set_up(BrowserPlugin(config)) as plugin:
        yield plugin


def hungry(pages: SiteServer, kind: str) -> TaskSpec:
    return TaskSpec(
        id=f"memory-{kind}",
        start_url=f"{pages.base_url}hostile/memory.html?kind={kind}",
        instruction="Wait.",
        actions=(Wait(seconds=1), Wait(seconds=1), Wait(seconds=1)),
    )


async def _settled_memory(plugin: ReadyPlugin, below: float) -> float:
    """The browser's memory once it is below `below`, or after 45 s (processes of a closed
    context take a moment to exit; longer on a loaded machine)."""
    host = plugin.host
    assert host is not None
    for _ in range(225):
        memory = host.memory_mb(max_age_s=0)
        if memory < below:
            break
        await asyncio.sleep(0.2)
    return memory


def test_pages_past_their_memory_ceiling_are_rejected_and_the_shard_goes_on(
    plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    host = plugin.host
    assert host is not None

    async def warm_up() -> float:  # the browser's memory with one ordinary episode behind it
        async with host.session() as session:
            await session.goto(f"{pages.base_url}hostile/dialogs.html")
            await session.observe()
        await asyncio.sleep(0.5)
        return host.memory_mb(max_age_s=0)

    baseline = plugin.run(warm_up(), timeout=60)
    config = make_config(tmp_path, policy={"type": "scripted"}, run={"max_steps": 4})
    others = [
        TaskSpec(
            id="dialogs",
            start_url=f"{pages.base_url}hostile/dialogs.html",
            instruction="x",
            actions=(Click(x=120, y=40),),
        ),
        TaskSpec(id="huge", start_url=f"{pages.base_url}hostile/huge.html", instruction="x"),
    ]
    tasks = [hungry(pages, kind) for kind in KINDS] + others
    shard = Local(plugin).run(config, 7, tasks, timeout=240, storage=LocalStorage(tmp_path / "o"))
    result = shard.result
    after = plugin.run(_settled_memory(plugin, baseline + 150), timeout=60)

    rejects = {
        r["task_id"]: r for r in read(tmp_path / "o", "rejects", 7) if r["stage"] != "grounding"
    }
    episodes = {e["task_id"] for e in read(tmp_path / "o", "episodes", 7)}
    assert episodes == {"dialogs", "huge"} and set(rejects) == {f"memory-{k}" for k in KINDS}
    measured = {}
    for kind in KINDS:
        reject = rejects[f"memory-{kind}"]
        assert (reject["stage"], reject["reason"]) == ("episode", "page_memory"), reject
        assert f"browser.page_memory_mb = {CEILING_MB}" in reject["detail"]
        match = MEASURED.search(reject["detail"])
        assert match, reject["detail"]  # measured on its renderer, not the heap fallback
        measured[kind] = int(match.group(1))
        assert CEILING_MB < measured[kind] < 2048  # stopped well before the page's own stop
    print(
        f"\nmemory at the reject (MB): {measured}; browser {baseline:.0f} MB before the shard, "
        f"{after:.0f} MB after (peak sessions {result.peak_sessions})"
    )
    assert after < baseline + 150  # the pages' memory was given back
    assert host.open_contexts == 0 and host.connected


def test_a_page_stopped_while_no_step_runs_ends_as_page_memory(
    plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    """The watchdog alone stops the page (as while the model decides): the next browser call
    of the episode fails on a crashed page, and that is a `page_memory` reject, not a crash;
    the next observation refuses the page too."""
    host = plugin.host
    assert host is not None
    config = make_config(tmp_path, policy={"type": "scripted"})
    ctx = Local(plugin).context(config)
    spec = hungry(pages, "typed")

    async def scenario() -> tuple[PageMemoryExceeded | None, bool, Failure]:
        async with host.session() as session:
            await session.goto(spec.start_url)
            assert session.memory is not None
            for _ in range(600):  # no step runs: only the watchdog measures (at most 60 s)
                if session.memory.exceeded is not None:
                    break
                await asyncio.sleep(0.1)
            try:
                await session.page.evaluate("1")  # what the episode's next step meets
                error: BaseException | None = None
            except PlaywrightError as exc:
                error = exc
            try:
                await session.observe()
                refused = False
            except PageMemoryExceeded:
                refused = True
            assert error is not None
            failure = await episode_failure(error, session, ctx, spec)
            return session.memory.exceeded, refused, failure

    exceeded, refused, (stage, reason, detail) = plugin.run(scenario(), timeout=90)
    assert exceeded is not None and exceeded.measured_mb > CEILING_MB and refused
    assert (stage, reason) == ("episode", RejectReason.PAGE_MEMORY)
    assert detail == str(exceeded) and "renderer" in detail
    assert plugin.run(host.responsive())  # one page stopped, not the browser


def test_a_worker_torn_down_mid_episode_leaves_no_task_pending(
    chromium: str, pages: SiteServer, tmp_path: Path
) -> None:
    """A run cut short (a full disk, Ctrl-C) tears the worker's plugin down while episodes hold
    sessions: the episodes and their memory watchdogs are cancelled and end, and the loop is
    closed. A loop stopped with tasks pending drops them, and each one dropped printed "Task was
    destroyed but it is pending!" into the driver's terminal (seen in CI)."""
    plugin = BrowserPlugin(make_config(tmp_path, browser={"allow": [pages.origin]}))
    plugin.setup(worker=None)
    assert plugin.host is not None and plugin.loop is not None
    host, loop = plugin.host, plugin.loop
    opened: list[str] = []

    async def held() -> None:
        async with host.session() as session:
            await session.page.goto(f"{pages.base_url}plain.html")
            opened.append(session.page.url)
            await asyncio.sleep(3600)

    async def both_open() -> None:
        while len(opened) < 2:
            await asyncio.sleep(0.05)

    async def both() -> None:
        await asyncio.gather(held(), held())

    episodes = asyncio.run_coroutine_threadsafe(both(), loop)
    try:
        plugin.run(asyncio.wait_for(both_open(), 30))
        watchdogs = plugin.run(_watchdogs())
    finally:
        plugin.teardown(worker=None)  # what is tested; also the clean-up should the above fail
    assert len(watchdogs) == 2, "each open session has its memory watchdog"
    assert episodes.done(), "the held episodes were ended by the teardown"
    assert all(task.done() for task in watchdogs)
    assert loop.is_closed() and not asyncio.all_tasks(loop)
    plugin.teardown(worker=None)  # again, as Dask does after a setup that failed: nothing left


async def _watchdogs() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "datagen-page-memory"]
