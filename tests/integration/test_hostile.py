"""Hostile pages, each handled on purpose: dialogs, pop-ups, downloads, beforeunload, pages
that navigate away, full-screen requests, huge DOMs, infinite JS loops, renderer crashes."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError

from datagen.browser.session import Session
from datagen.browser.triage import hung
from datagen.pipeline.failures import failure
from datagen.records import Action, Click, RejectReason, SuccessCheck, TaskSpec, Wait
from datagen.sink.storage import LocalStorage
from datagen.source.serve import SiteServer
from tests.helpers import Local, ReadyPlugin, eventually, make_config, read

pytestmark = pytest.mark.browser


def task(pages: SiteServer, name: str, *actions: Action, **extra: Any) -> TaskSpec:
    return TaskSpec(
        id=name,
        start_url=f"{pages.base_url}hostile/{name}.html",
        instruction=name,
        actions=actions,
        **extra,
    )


def test_hostile_pages_end_as_episodes_or_the_right_rejects(
    browser_plugin: ReadyPlugin, local: Local, pages: SiteServer, tmp_path: Path
) -> None:
    # The pages that hang are bounded by a short step timeout in a shard of their own; the others
    # get the default, so a loaded machine's slow step is not taken for a hang.
    tasks = [
        task(pages, "dialogs", Click(x=120, y=40)),
        task(pages, "popup", Click(x=120, y=40)),
        task(pages, "download", Click(x=120, y=40), Click(x=120, y=100)),
        task(pages, "beforeunload", Click(x=120, y=100)),
        task(pages, "navaway", Wait(seconds=0.5)),
        task(pages, "fullscreen", Click(x=120, y=40)),
        task(pages, "huge"),
        task(pages, "loop", Click(x=120, y=40)),
        TaskSpec(  # solved at step 1, and the page hangs right after: the final look is bounded
            # (not at step 0: a check passing before any action is a check_passes_at_start reject)
            id="hang-after-solved",
            # a light page: its first look is well inside the 4 s step limit on a loaded
            # machine (huge.html's 20,000 buttons took over 4 s there, and the reject named
            # step 0's observation, not the final one)
            start_url=f"{pages.base_url}hostile/loop.html",
            instruction="Be solved, then hang.",
            actions=(Wait(seconds=0.1),),
            check=SuccessCheck(
                js="(window.__checks = (window.__checks || 0) + 1) > 1 && "
                "setTimeout(() => { while (true) {} }, 0) > 0"
            ),
        ),
    ]
    hanging = {"loop", "hang-after-solved"}
    results = []
    for shard, step_timeout_s in ((5, 30), (6, 4)):
        config = make_config(
            tmp_path,
            policy={"type": "scripted"},
            run={"max_steps": 4, "step_timeout_s": step_timeout_s},
        )
        mine = [t for t in tasks if (t.id in hanging) == (shard == 6)]
        results.append(local.run(config, shard, mine, timeout=300).result)
    episodes = {e["task_id"]: e for s in (5, 6) for e in read(tmp_path / "out", "episodes", s)}
    rejects = {
        r["task_id"]: r
        for s in (5, 6)
        for r in read(tmp_path / "out", "rejects", s)
        if r["stage"] != "grounding"
    }
    assert set(episodes) | set(rejects) == {t.id for t in tasks} and not set(episodes) & set(
        rejects
    )
    assert episodes["dialogs"]["dialogs"] >= 3  # alert on load, then confirm and prompt: dismissed
    assert episodes["popup"]["popups"] >= 2  # window.open on load and a target=_blank link
    assert episodes["popup"]["final_url"].endswith("/popup.html")  # the episode kept its page
    assert episodes["download"]["n_steps"] == 3  # downloads refused, the episode went on
    assert episodes["beforeunload"]["final_url"].endswith("/dialogs.html")  # no prompt held it
    assert episodes["navaway"]["final_url"].endswith("/popup.html")
    assert "fullscreen" in episodes and "huge" in episodes
    huge_steps = [s for s in read(tmp_path / "out", "steps", 5) if s["task_id"] == "huge"]
    assert huge_steps[0]["n_elements"] == 400  # capped, not 20,000
    assert rejects["loop"]["reason"] == "timeout_step"  # an infinite JS loop: bounded
    assert rejects["hang-after-solved"]["reason"] == "timeout_step"
    assert "final observation" in rejects["hang-after-solved"]["detail"]
    assert results[1].rejects >= 2 and browser_plugin.host.connected  # the browser survived it


def test_renderer_crash_is_flagged_and_classified(
    browser_plugin: ReadyPlugin, local: Local, pages: SiteServer, tmp_path: Path
) -> None:
    config = make_config(tmp_path, policy={"type": "scripted"})
    host = browser_plugin.host
    ctx = local.context(config)

    async def scenario() -> tuple[Session, PlaywrightError | None]:
        async with host.session() as session:
            await session.goto(f"{pages.base_url}hostile/fullscreen.html")
            with contextlib.suppress(PlaywrightError, TimeoutError):  # the answer may never come
                await asyncio.wait_for(session.cdp.send("Page.crash"), 2)  # as an OOM page ends
            # the crash reported (asserted below), not a fixed 0.5 s that load could overrun
            await eventually(lambda: session.events.crashed, within_s=30)
            try:
                await session.observe()
            except PlaywrightError as exc:
                return session, exc
            return session, None

    session, error = browser_plugin.run(scenario(), timeout=60)
    assert session.events.crashed and error is not None
    stage, reason, _ = browser_plugin.run(failure(error, session, ctx, task(pages, "fullscreen")))
    assert (stage, reason) == ("episode", RejectReason.RENDERER_CRASH)
    assert browser_plugin.run(host.responsive())  # one page crashed, not the browser


def test_non_html_start_urls(local: Local, pages: SiteServer, tmp_path: Path) -> None:
    """JSON is shown as text and a PDF in Chromium's viewer: both are pages, so episodes."""
    config = make_config(tmp_path, policy={"type": "scripted"}, run={"max_steps": 2})
    tasks = [
        TaskSpec(id="json", start_url=f"{pages.base_url}hostile/data.json", instruction="x"),
        TaskSpec(id="pdf", start_url=f"{pages.base_url}hostile/report.pdf", instruction="x"),
    ]
    local.run(config, 6, tasks, timeout=60)
    episodes = {e["task_id"] for e in read(tmp_path / "out", "episodes", 6)}
    rejects = {
        r["task_id"]: r["reason"]
        for r in read(tmp_path / "out", "rejects", 6)
        if r["stage"] == "task"
    }
    assert episodes == {"json", "pdf"} and not rejects


def test_browser_memory_admission_and_recycling(browser_plugin: ReadyPlugin) -> None:
    host = browser_plugin.host

    async def scenario() -> tuple[tuple[float, int], int, float, bool, int]:
        async with host.session():
            inside = (host.memory_mb(max_age_s=0), host.open_contexts)
        before = host.episodes
        limit = host.config.memory_limit_mb
        object.__setattr__(host.config, "memory_limit_mb", 1)  # far below any real browser
        try:
            started = asyncio.get_running_loop().time()
            await host.admit(0)  # nothing else running: never waits
            waited_alone = asyncio.get_running_loop().time() - started
            async with host.session():  # another episode is running, and we are over the limit
                try:
                    await asyncio.wait_for(host.admit(1), 1.5)
                    waited = False
                except TimeoutError:
                    waited = True
        finally:
            object.__setattr__(host.config, "memory_limit_mb", limit)
        await host.restart()  # what recycling does between shards
        after = host.episodes
        async with host.session() as session:
            await session.page.set_content("<p>fresh</p>")
        return inside, before, waited_alone, waited, after

    (memory, contexts), before, waited_alone, waited, after = browser_plugin.run(
        scenario(), timeout=60
    )
    assert 20 < memory < 4000 and contexts == 1
    assert before >= 1 and after == 0 and host.connected
    assert waited_alone < 0.5 and waited


def test_an_episode_past_its_own_limit_is_a_timeout_episode(
    local: Local, pages: SiteServer, tmp_path: Path
) -> None:
    config = make_config(
        tmp_path,
        policy={"type": "scripted"},
        run={"episode_timeout_s": 1.5, "step_timeout_s": 30},
    )
    slow = task(pages, "huge", Wait(seconds=1), Wait(seconds=1), Wait(seconds=1))
    local.run(config, 6, [slow], timeout=60, storage=LocalStorage(tmp_path / "o"))
    (reject,) = [r for r in read(tmp_path / "o", "rejects", 6) if r["stage"] != "grounding"]
    assert (reject["stage"], reject["reason"]) == ("task", "timeout_episode")


def test_only_the_episode_limit_is_a_timeout_episode(
    browser_plugin: ReadyPlugin, local: Local, pages: SiteServer, tmp_path: Path
) -> None:
    """A TimeoutError from deeper down (a library's own wait) is not the episode running out of
    time: it is a browser error that says where it came from."""
    config = make_config(tmp_path, policy={"type": "scripted"})
    ctx = local.context(config)

    async def stray() -> None:  # a library's own wait running out, as asyncio raises it
        await asyncio.wait_for(asyncio.sleep(5), 0.01)

    try:
        asyncio.run(stray())
    except TimeoutError as exc:
        error = exc
    spec = task(pages, "huge")
    stage, reason, detail = browser_plugin.run(failure(error, None, ctx, spec))
    assert (stage, reason) == ("task", RejectReason.BROWSER_ERROR)
    assert detail.startswith("TimeoutError: at ") and "in stray" in detail
    _, reason, _ = browser_plugin.run(failure(error, None, ctx, spec, expired=True))
    assert reason == RejectReason.TIMEOUT_EPISODE


def test_an_error_on_a_page_stuck_in_a_script_counts_as_a_hung_page(
    browser_plugin: ReadyPlugin, pages: SiteServer
) -> None:
    """Chromium sometimes answers a screenshot of a page stuck in a script with an error
    ("Unable to capture screenshot") instead of waiting: that is a hung page (timeout_step),
    not a browser error. A page that still runs scripts is not hung."""
    host = browser_plugin.host
    error = PlaywrightError("Protocol error (Page.captureScreenshot): Unable to capture screenshot")

    async def scenario(name: str) -> bool:
        async with host.session() as session:
            await session.goto(f"{pages.base_url}hostile/{name}.html")
            # spin-onload starts its endless loop 300 ms after load: both pages get 0.6 s, and
            # spin-onload until its loop has begun (on a loaded machine 0.6 s may not do)
            await asyncio.sleep(0.6)
            if name == "spin-onload":
                await eventually(lambda: not_answering(session), within_s=30)
            return await hung(session, error)

    async def not_answering(session: Session) -> bool:
        return not await session.answers(timeout_s=0.5)

    assert browser_plugin.run(scenario("spin-onload"), timeout=60) is True
    assert browser_plugin.run(scenario("huge"), timeout=60) is False
