"""The settle's quiet window ends early only when nothing on the page can change it by itself.

`calm.html` renders a result after each kind of work an app schedules (a posted message, a frame
callback, an idle callback, a fetch, an XHR, a chain of them) or at once; its own
MutationObserver counts every change (`changes`) independently of datagen. (A resize
observer reports in a frame's rendering steps: a page that uses one waits for a painted frame.
An intersection observer reports some time after: a page that uses one is never calm.) With a quiet window
far longer than any of those renders (5 s), a settle that ends before it ended early: it must
then hold what the page rendered, and the page must not change after it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from datagen.browser.host import BrowserHost
from datagen.browser.observe import SETTLE_JS
from datagen.source.serve import SiteServer
from tests.helpers import ReadyPlugin

pytestmark = pytest.mark.browser

# datagen's settle and the page's own record of itself, read in one go (nothing in between)
SETTLED = f"""async (args) => {{
  const result = await ({SETTLE_JS})(args);
  return {{ result, done: window.done || null, changes: window.changes }};
}}"""
LONG_WINDOW = {"quietMs": 5000, "timeoutMs": 20000}
AFTER_S = 0.5  # long after any of the page's renders would have come


async def settled_after(
    host: BrowserHost, pages: SiteServer, button: str, window: dict[str, int]
) -> dict[str, Any]:
    """calm.html's `button` clicked, then datagen's settle with `window`, read with the page's
    own record of itself."""
    async with host.session() as session:
        await session.goto(pages.base_url + "calm.html")
        await session.page.click(f"#{button}")
        return dict(await session.page.evaluate(SETTLED, window))


HOWS = ["sync", "message", "frame", "idle", "fetch", "xhr", "chain", "resize"]


@pytest.mark.parametrize("how", HOWS)
def test_an_early_settle_holds_the_render_and_nothing_follows(
    browser_plugin: ReadyPlugin, patient_host: BrowserHost, pages: SiteServer, how: str
) -> None:
    async def scenario() -> tuple[dict[str, Any], int]:
        async with patient_host.session() as session:
            await session.goto(pages.base_url + "calm.html")
            await session.page.click(f"#{how}")
            settled = await session.page.evaluate(SETTLED, LONG_WINDOW)
            await asyncio.sleep(AFTER_S)
            return settled, int(await session.page.evaluate("window.changes"))

    settled, changes_later = browser_plugin.run(scenario(), timeout=60)
    assert settled["result"] == {"quiet": True, "early": True}, settled
    assert settled["done"] == how  # the render was waited for
    assert changes_later == settled["changes"]  # and nothing came after the settle


def test_an_intersection_observers_report_is_waited_for(
    browser_plugin: ReadyPlugin, patient_host: BrowserHost, pages: SiteServer
) -> None:
    """Its report comes in a task some time after a frame: the page waits the window out (no
    early end), and holds the report when it ends."""

    window = {"quietMs": 300, "timeoutMs": 20000}
    settled = browser_plugin.run(settled_after(patient_host, pages, "observer", window), timeout=60)
    assert settled["result"] == {"quiet": True, "early": False}, settled
    assert settled["done"] == "observer"


def test_a_ticker_is_never_calm(
    browser_plugin: ReadyPlugin, patient_host: BrowserHost, pages: SiteServer
) -> None:
    """An interval under a second rewriting the page: the window is never cut short."""

    window = {"quietMs": 5000, "timeoutMs": 1500}
    settled = browser_plugin.run(settled_after(patient_host, pages, "ticker", window), timeout=60)
    assert settled["result"] == {"quiet": False}, settled


# A ticker of the page's own (tracked by page_init.js) that changes nothing, and a forged
# record of one more that has not run for a second: what a ticker held back by a starved
# renderer looks like to the settle when its wait's timer runs before the ticker's overdue
# tick (a loaded machine; the slow first render's loader passed for a settled page so).
TICKERS = """(starved) => {
  const state = window[Symbol.for('datagen.page')];
  const id = setInterval(() => {}, 25);
  if (starved) state.intervals.set(id + 1e6, { delay: 25, at: performance.now() - 1000 });
  return state.intervals.size;
}"""


@pytest.mark.parametrize("starved", [False, True])
def test_a_ticker_held_back_past_its_time_is_waited_for(
    browser_plugin: ReadyPlugin, patient_host: BrowserHost, pages: SiteServer, starved: bool
) -> None:
    """A ticker that runs and changes nothing lets the page settle; one overdue never does
    (the window ends at its limit, not quiet)."""

    async def scenario() -> tuple[int, dict[str, Any]]:
        async with patient_host.session() as session:
            await session.goto(pages.base_url + "calm.html")
            tickers = int(await session.page.evaluate(TICKERS, starved))
            window = {"quietMs": 50, "timeoutMs": 1500}
            return tickers, dict(await session.page.evaluate(SETTLED, window))

    tickers, settled = browser_plugin.run(scenario(), timeout=60)
    assert tickers == 1 + starved
    assert settled["result"] == ({"quiet": False} if starved else {"quiet": True, "early": False})
