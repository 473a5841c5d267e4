"""Issue 44 on real Chromium: a control's name quotes only text the screen draws where the
element is. tests/fixtures/pages/drawn/names.html holds labels and texts the DOM has but the
screen does not show: TodoMVC's "mark all" label at `font-size: 0` (only its `❯` glyph drawn),
an icon button's word moved off-screen, a transparent button text, a visually hidden label
(1 px, clipped), face-down cards whose values lie under their backs, a label under a popup.
Each such control carries `data-undrawn` (words no name of it may quote), a drawn one
`data-drawn` (words it is named by).

Which control a row is about is read by this test's own Playwright code (the element at the
row's point, a label standing for its control), never from datagen's scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from bench.grounding import accepted_rows
from datagen.annotate.describe import describe
from datagen.browser.host import BrowserHost
from datagen.config import BrowserConfig
from datagen.records import Click, Decision, GroundingRow
from datagen.source.serve import SiteServer
from tests.helpers import ReadyPlugin

pytestmark = pytest.mark.browser

# The element a click at (x, y) reaches, a label standing for its control, and the nearest
# ancestor that carries the page author's annotation.
OWNER_JS = """(p) => {
  let n = document.elementFromPoint(p.x, p.y);
  if (n && n.tagName === 'LABEL' && n.control) n = n.control;
  const m = n && n.closest('[data-undrawn], [data-drawn]');
  return m ? { undrawn: m.dataset.undrawn || '', drawn: m.dataset.drawn || '' } : null;
}"""


@dataclass(frozen=True)
class Said:
    """A kept grounding row, the description of a click at its point, and the annotation of
    the control there."""

    row: GroundingRow
    description: str
    undrawn: str
    drawn: str


@pytest.fixture(scope="module")
def host(browser_plugin: ReadyPlugin, pages: SiteServer) -> Iterator[BrowserHost]:
    host = BrowserHost(BrowserConfig(), allow=[pages.origin])
    browser_plugin.run(host.start(), timeout=120)
    try:
        yield host
    finally:
        browser_plugin.run(host.close(), timeout=60)


@pytest.fixture(scope="module")
def said(browser_plugin: ReadyPlugin, host: BrowserHost, pages: SiteServer) -> list[Said]:
    async def scenario() -> list[Said]:
        async with host.session() as session:
            await session.goto(pages.base_url + "drawn/names.html")
            # the page's premise, read by the test: the "mark all" label is drawn at size 0
            size = await session.page.eval_on_selector(
                "label[for=toggle-all]", "(l) => getComputedStyle(l).fontSize"
            )
            assert size == "0px"
            obs = await session.observe()
            out = []
            for row in accepted_rows(obs, host.version):
                x, y = row.point_px
                scale = obs.device_scale_factor
                owner = await session.page.evaluate(OWNER_JS, {"x": x / scale, "y": y / scale})
                click = Decision(action=Click(x=x, y=y))
                out.append(
                    Said(
                        row,
                        describe(obs, click),
                        owner["undrawn"] if owner else "",
                        owner["drawn"] if owner else "",
                    )
                )
            return out

    return browser_plugin.run(scenario())


def test_a_checkbox_whose_label_is_drawn_at_size_0_is_not_named_by_it(said: list[Said]) -> None:
    toggle = [s for s in said if s.undrawn == "Mark all"]
    assert toggle, [s.row.referring_expression for s in said]
    for s in toggle:
        assert s.row.role == "checkbox"
        assert "mark all" not in s.row.referring_expression.lower(), s.row
        assert "mark all" not in s.description.lower(), s.description
        assert "mark all" not in s.row.name.lower(), s.row.name
        assert s.row.accessible_name == "Mark all as complete"  # kept in its own column


def test_no_name_quotes_text_the_screen_does_not_draw(said: list[Said]) -> None:
    undrawn = {s.undrawn for s in said if s.undrawn}
    # every such control has a row: the icon button, the transparent one, the search field,
    # the newsletter field, the toggle
    assert {"Mark all", "Prev", "Secret", "Search the site", "Newsletter email"} <= undrawn
    for s in said:
        words = s.undrawn.lower()
        if not words:
            continue
        for text in (s.row.referring_expression, s.description, s.row.name, s.row.text):
            assert f'"{words}' not in text.lower() and words not in text.lower(), (s.row, text)


def test_drawn_names_are_still_quoted(said: list[Said]) -> None:
    drawn = {s.drawn: s for s in said if s.drawn}
    assert set(drawn) >= {"Remember me", "7"}
    for words, s in drawn.items():
        assert f'"{words}"' in s.row.referring_expression, s.row.referring_expression
        assert f'"{words}"' in s.description, s.description
