"""Transitions and animations that will end: a short one (at most a second left) is
fast-forwarded to its end by the settle, a longer one is waited for, up to the settle's limit.

`transitions.html` keeps its own record, independently of datagen: which animations had
`Animation.finish` called on them (fast-forwarded), and which fired their end event."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import FloatRect

from datagen.browser.host import BrowserHost
from datagen.browser.observe import SETTLE_JS
from datagen.records import Observation
from datagen.source.serve import SiteServer
from tests.helpers import ReadyPlugin

pytestmark = pytest.mark.browser

RECORD = """() => ({
  finished: window.finished, ended: window.ended,
  running: document.getAnimations().filter((a) => a.playState === 'running').length,
})"""


def test_a_short_transition_is_fast_forwarded_and_observed_at_its_end(
    browser_plugin: ReadyPlugin, patient_host: BrowserHost, pages: SiteServer
) -> None:
    """The drawer slides in over 800 ms: the observation shows it in place, its Close button
    boxed where Playwright finds it afterwards, and the page saw the transition finished and
    ended (its `transitionend` fired) without anything left running."""

    async def scenario() -> tuple[Observation, dict[str, Any], FloatRect | None, str]:
        async with patient_host.session() as session:
            await session.goto(pages.base_url + "transitions.html")
            await session.observe()
            await session.page.click("#open")
            obs = await session.observe()
            record = await session.page.evaluate(RECORD)
            box = await session.page.locator("#close").bounding_box()
            transform = await session.page.evaluate(
                "getComputedStyle(document.getElementById('drawer')).transform"
            )
            return obs, record, box, transform

    obs, record, box, transform = browser_plugin.run(scenario(), timeout=60)
    assert record["finished"] == ["drawer"], record
    assert "drawer" in record["ended"], record
    assert record["running"] == 0
    assert transform in ("none", "matrix(1, 0, 0, 1, 0, 0)")
    assert obs.stable and not obs.settle_timed_out
    close = [e for e in obs.elements if e.name == "Close drawer"]
    assert len(close) == 1 and box is not None
    seen = close[0].box
    assert abs(seen.x - box["x"]) <= 1 and abs(seen.y - box["y"]) <= 1, (seen, box)


def test_an_animation_longer_than_a_second_is_not_fast_forwarded(
    browser_plugin: ReadyPlugin, patient_host: BrowserHost, pages: SiteServer
) -> None:
    """A 4 s fade: the settle waits for it up to its limit (here 600 ms) and says it is not
    quiet; the page's animation was left to run at its own pace."""

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with patient_host.session() as session:
            await session.goto(pages.base_url + "transitions.html")
            await session.page.click("#fade-slow")
            result = await session.page.evaluate(SETTLE_JS, {"quietMs": 50, "timeoutMs": 600})
            return dict(result), await session.page.evaluate(RECORD)

    result, record = browser_plugin.run(scenario(), timeout=60)
    assert result == {"quiet": False}
    assert record["finished"] == [] and record["running"] == 1, record


def test_a_longer_animation_that_ends_within_the_limit_is_waited_for(
    browser_plugin: ReadyPlugin, patient_host: BrowserHost, pages: SiteServer
) -> None:
    """A 1.5 s fade with a 20 s limit: the settle ends quiet once the page's own `animationend`
    fired, and never fast-forwarded it."""

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with patient_host.session() as session:
            await session.goto(pages.base_url + "transitions.html")
            await session.page.click("#fade-medium")
            result = await session.page.evaluate(SETTLE_JS, {"quietMs": 50, "timeoutMs": 20000})
            opacity = await session.page.evaluate(
                "getComputedStyle(document.getElementById('medium')).opacity"
            )
            return dict(result), await session.page.evaluate(RECORD), opacity

    result, record, opacity = browser_plugin.run(scenario(), timeout=60)
    assert result["quiet"] is True, result
    assert record["finished"] == [] and "medium" in record["ended"], record
    assert opacity == "1"
