"""What an observation costs the page, counted on real Chromium: one evaluate before the
screenshot (settle, wall signals and scan together), one after it (the re-measure), and the
scan's 35 KB function sent once per document, not once per observation. And the page memory
check's upper bound: all the browser's processes hold at least what the page's renderer does.
And a page already loaded is known so without asking Playwright."""

from __future__ import annotations

from typing import Any

import pytest

from datagen.browser.memory import private_mb
from datagen.browser.observe import loaded, settle_load
from datagen.browser.walls import on_page
from datagen.source.serve import SiteServer
from tests.helpers import ReadyPlugin

pytestmark = pytest.mark.browser


def test_an_observation_is_two_round_trips_and_the_scan_is_sent_once_a_document(
    browser_plugin: ReadyPlugin, pages: SiteServer
) -> None:
    host = browser_plugin.host

    async def scenario() -> tuple[list[list[int]], list[Any]]:
        async with host.session() as session:
            sent: list[int] = []  # the size of each evaluated script, in order
            evaluate, send = session.page.evaluate, session.cdp.send

            async def counted(expression: str, arg: Any = None) -> Any:
                sent.append(len(expression))
                return await evaluate(expression, arg)

            async def counted_cdp(method: str, params: Any = None) -> Any:
                if method == "Runtime.evaluate":  # Camera._call's way into the page
                    sent.append(len(params["expression"]))
                return await send(method, params)

            session.page.evaluate = counted  # type: ignore[method-assign]
            session.cdp.send = counted_cdp  # type: ignore[method-assign,assignment]
            per_observation = []
            walls = []
            for url in ("occluded.html", "select-open.html"):
                await session.goto(pages.base_url + url)
                for _ in range(2):
                    sent.clear()
                    obs = await session.observe()
                    assert obs.elements
                    per_observation.append(list(sent))
                    sent.clear()
                    walls.append(await on_page(session, observed=True))
                    assert sent == []  # the wall was read with the observation
            return per_observation, walls

    per_observation, walls = browser_plugin.run(scenario())
    assert walls == [None] * len(walls)
    # each document gets the function once, at its first observation (a probe that finds
    # nothing, the install, the re-measure); after that, a call by key and the re-measure
    sizes = [[n > 10_000 for n in calls] for calls in per_observation]
    assert sizes == [[False, True, False], [False, False]] * 2, per_observation


def test_the_memory_bound_covers_the_pages_renderer(
    browser_plugin: ReadyPlugin, pages: SiteServer
) -> None:
    host = browser_plugin.host

    async def scenario() -> tuple[float, float]:
        async with host.session() as session:
            await session.goto(pages.base_url + "occluded.html")
            await session.observe()
            memory = session.camera.memory
            assert memory is not None
            await memory._find_renderers()  # the exact way: a trace names the page's process
            own = sum(private_mb(p) for p in memory._renderers)
            return own, host.private_total_mb(relist=True)

    own, bound = browser_plugin.run(scenario())
    assert 0 < own <= bound


def test_only_renderers_are_ever_the_pages_processes(
    browser_plugin: ReadyPlugin, pages: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace that named every process of the browser (its own, the GPU process, utilities)
    as the page's: only the renderers among them are kept, the ones a page above its ceiling
    would have killed."""
    from datagen.browser import memory as memory_module

    host = browser_plugin.host

    async def scenario() -> tuple[set[int], set[int], int]:
        async with host.session() as session:
            await session.goto(pages.base_url + "occluded.html")
            await session.observe()
            memory = session.camera.memory
            assert memory is not None
            everyone = host._browser_processes()

            async def every_pid(_: object) -> set[int]:
                return {p.pid for p in everyone}

            monkeypatch.setattr(memory_module, "_frame_pids", every_pid)
            await memory._find_renderers()
            kept = {p.pid for p in memory._renderers}
            renderers = {p.pid for p in everyone if "--type=renderer" in p.cmdline()}
            return kept, renderers, everyone[0].pid

    kept, renderers, main = browser_plugin.run(scenario())
    assert kept and kept <= renderers and main not in kept


def test_a_loaded_page_is_known_loaded_without_asking_playwright(
    browser_plugin: ReadyPlugin, pages: SiteServer
) -> None:
    """After every action the session waits for `load`; a page already loaded is answered from
    Playwright's own record of the main frame's load states (no waiter, no driver messages).
    Fails if this Playwright keeps no such record (the wait would then always ask it)."""
    host = browser_plugin.host

    async def scenario() -> tuple[bool, bool, list[str]]:
        async with host.session() as session:
            fresh = loaded(session.page)  # about:blank has loaded too
            await session.goto(pages.base_url + "occluded.html")
            asked: list[str] = []
            wait = session.page.wait_for_load_state

            async def counted(*args: Any, **kwargs: Any) -> None:
                asked.append("load")
                await wait(*args, **kwargs)

            session.page.wait_for_load_state = counted  # type: ignore[method-assign]
            await settle_load(session.page, 5.0)
            return fresh, loaded(session.page), asked

    fresh, after_goto, asked = browser_plugin.run(scenario())
    assert fresh and after_goto and asked == []
