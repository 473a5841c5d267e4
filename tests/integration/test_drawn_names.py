"""Issue 44 on real Chromium: a control's name quotes only text the screen draws where the
element is. tests/fixtures/pages/drawn/names.html holds labels and texts the DOM has but the
screen does not show: TodoMVC's "mark all" label at `font-size: 0` (only its `❯` glyph drawn),
an icon button's word moved off-screen, a transparent button text, a visually hidden label
(1 px, clipped), face-down cards whose values lie under their backs, a label under a popup.
Each such control carries `data-undrawn` (words no name of it may quote), a drawn one
`data-drawn` (words it is named by).

tests/fixtures/pages/drawn/grid.html: a 3×3 grid of empty clickable cells below "Score", a
field whose caption comes first in the DOM but is drawn below it, and three unlabelled
checkboxes in a list below "Tasks": every cell has a row, and every description lets a reader
find its element (the ordinal counts the stated group, the quoted anchor is the drawn text
nearest it, or its group, on the stated side: the field is "above" its caption).

Which control a row is about, which texts are drawn, the grid's cells and reading order are
read by this test's own Playwright code (the element at the row's point, a label standing
for its control, its own hit tests), never from datagen's scan.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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


# ---------------------------------------------- unnamed controls: rows a reader can follow

# The test's own reading of the page: every text node the screen draws (a size, ink, inside
# the viewport, and the element at its centre is its own), and the grid's cells.
TEXTS_JS = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const text = t.textContent.trim().replace(/:$/, '');
    const host = t.parentElement;
    if (!/[a-z]/i.test(text) || !host || host.closest('script, style')) continue;
    const st = getComputedStyle(host);
    if (parseFloat(st.fontSize) < 1 || st.color === 'rgba(0, 0, 0, 0)') continue;
    const range = document.createRange();
    range.selectNodeContents(t);
    const r = range.getBoundingClientRect();
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    if (r.width < 2 || x < 0 || y < 0 || x > innerWidth || y > innerHeight) continue;
    const at = document.elementFromPoint(x, y);
    if (!at || !host.contains(at)) continue;
    out.push({ text, left: r.left, top: r.top, right: r.right, bottom: r.bottom });
  }
  return out;
}"""
BOXES_JS = """(sel) => [...document.querySelectorAll(sel)].map((n) => {
  const r = n.getBoundingClientRect();
  return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
})"""
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"]
SIDES = {"below": "above", "above": "below", "right of": "left", "left of": "right"}
IN_GROUP = re.compile(
    r"the (?P<ordinal>\w+) of (?P<size>\w+) cells in the grid "
    r'(?P<relation>below|above|right of|left of) "(?P<anchor>[^"]+)"$'
)

Box = dict[str, float]


def nearest(texts: list[dict[str, Any]], box: Box, side: str) -> str:
    """The drawn text nearest the box on that side (where the text is drawn from it)."""

    def gap(t: dict[str, Any]) -> Any:
        across = min(box["right"], t["right"]) > max(box["left"], t["left"])
        along = min(box["bottom"], t["bottom"]) > max(box["top"], t["top"])
        if side == "above" and across and t["bottom"] <= box["top"] + 2:
            return box["top"] - t["bottom"]
        if side == "below" and across and t["top"] >= box["bottom"] - 2:
            return t["top"] - box["bottom"]
        if side == "left" and along and t["right"] <= box["left"] + 2:
            return box["left"] - t["right"]
        if side == "right" and along and t["left"] >= box["right"] - 2:
            return t["left"] - box["right"]
        return None

    found = [(g, str(t["text"])) for t in texts if (g := gap(t)) is not None]
    return min(found)[1] if found else ""


def reading(boxes: list[Box]) -> list[Box]:
    """Rows of tops within 8 px, then left to right: the order a reader counts in."""
    rows: list[list[Box]] = []
    for b in sorted(boxes, key=lambda b: (b["top"], b["left"])):
        if rows and b["top"] - rows[-1][0]["top"] <= 8:
            rows[-1].append(b)
        else:
            rows.append([b])
    return [b for row in rows for b in sorted(row, key=lambda b: b["left"])]


def holds(box: Box, x: float, y: float) -> bool:
    return box["left"] <= x <= box["right"] and box["top"] <= y <= box["bottom"]


@dataclass(frozen=True)
class GridPage:
    rows: list[tuple[GroundingRow, str]]  # kept rows, each with its click's description
    texts: list[dict[str, Any]]
    cells: list[Box]
    field: Box
    checkboxes: list[Box]
    scale: float


@pytest.fixture(scope="module")
def grid(browser_plugin: ReadyPlugin, host: BrowserHost, pages: SiteServer) -> GridPage:
    async def scenario() -> GridPage:
        async with host.session() as session:
            await session.goto(pages.base_url + "drawn/grid.html")
            obs = await session.observe()
            rows = accepted_rows(obs, host.version)
            said = [
                describe(obs, Decision(action=Click(x=r.point_px[0], y=r.point_px[1])))
                for r in rows
            ]
            texts = await session.page.evaluate(TEXTS_JS)
            cells = await session.page.evaluate(BOXES_JS, "#grid .cell")
            (field,) = await session.page.evaluate(BOXES_JS, "#nick")
            checkboxes = await session.page.evaluate(BOXES_JS, "#tasks input")
            return GridPage(
                list(zip(rows, said, strict=True)),
                texts,
                cells,
                field,
                checkboxes,
                obs.device_scale_factor,
            )

    return browser_plugin.run(scenario())


def test_every_cell_of_a_grid_of_unnamed_cells_has_a_row(grid: GridPage) -> None:
    for cell in grid.cells:
        mine = [
            r
            for r, _ in grid.rows
            if holds(cell, r.point_px[0] / grid.scale, r.point_px[1] / grid.scale)
        ]
        assert len(mine) == 1, (cell, [r.referring_expression for r, _ in grid.rows])


def test_a_cells_ordinal_counts_its_grid_and_its_anchor_is_the_nearest_drawn_text(
    grid: GridPage,
) -> None:
    box = {
        "left": min(c["left"] for c in grid.cells),
        "top": min(c["top"] for c in grid.cells),
        "right": max(c["right"] for c in grid.cells),
        "bottom": max(c["bottom"] for c in grid.cells),
    }
    ordered = reading(grid.cells)
    checked = 0
    for row, description in grid.rows:
        x, y = row.point_px[0] / grid.scale, row.point_px[1] / grid.scale
        if not holds(box, x, y):
            continue
        for said in (row.referring_expression, description):
            m = IN_GROUP.search(said)
            assert m, said
            assert m["size"] in ("9", "nine") and len(grid.cells) == 9, said
            assert holds(ordered[ORDINALS.index(m["ordinal"])], x, y), said
            assert m["anchor"] == nearest(grid.texts, box, SIDES[m["relation"]]), said
            checked += 1
    assert checked == 18


def test_no_description_leaves_the_reader_guessing(grid: GridPage) -> None:
    """Own words, a relation to drawn text, or an ordinal that says among which group: never
    `Click the element`, `Click the sixth element`."""
    cells = [
        d
        for r, d in grid.rows
        if any(holds(c, r.point_px[0] / grid.scale, r.point_px[1] / grid.scale) for c in grid.cells)
    ]
    assert len(cells) == 9
    for description in cells:
        assert '"' in description or " icon " in description, description


# ------------------------------- controls with a role and no words: placed as drawn (issue 44)

RELATION = re.compile(r'(?P<relation>below|above|right of|left of) "(?P<anchor>[^"]+)"$')
IN_LIST = re.compile(
    r"the (?P<ordinal>\w+) of (?P<size>\w+) checkboxes in the list "
    r'(?P<relation>below|above|right of|left of) "(?P<anchor>[^"]+)"$'
)


def union(boxes: list[Box]) -> Box:
    return {
        "left": min(b["left"] for b in boxes),
        "top": min(b["top"] for b in boxes),
        "right": max(b["right"] for b in boxes),
        "bottom": max(b["bottom"] for b in boxes),
    }


def rows_in(grid: GridPage, box: Box) -> list[tuple[GroundingRow, str]]:
    return [
        (r, d)
        for r, d in grid.rows
        if holds(box, r.point_px[0] / grid.scale, r.point_px[1] / grid.scale)
    ]


def test_a_label_drawn_below_its_field_is_said_above_it(grid: GridPage) -> None:
    """The caption comes first in the DOM and is drawn under the field: the field is `above`
    it, and the caption is the drawn text nearest the field on that side."""
    (caption,) = [t for t in grid.texts if t["text"] == "Your nickname"]
    assert caption["top"] >= grid.field["bottom"] - 2  # the page's premise, read by the test
    ((row, description),) = rows_in(grid, grid.field)
    for said in (row.referring_expression, description):
        m = RELATION.search(said)
        assert m, said
        assert m["relation"] == "above", said
        assert m["anchor"] == nearest(grid.texts, grid.field, SIDES[m["relation"]]), said


def test_unlabelled_checkboxes_are_placed_by_their_list_or_their_nearest_text(
    grid: GridPage,
) -> None:
    """Each checkbox is said by its place in the list (the ordinal counts the list, the
    anchor is the drawn text nearest the list on the stated side) or by the drawn text nearest
    it on the stated side where that alone tells it apart."""
    assert len(grid.checkboxes) == 3
    group = union(grid.checkboxes)
    ordered = reading(grid.checkboxes)
    placed = 0
    for box in grid.checkboxes:
        ((row, description),) = rows_in(grid, box)
        for said in (row.referring_expression, description):
            m = IN_LIST.search(said)
            if m:
                assert m["size"] in ("3", "three"), said
                assert ordered[ORDINALS.index(m["ordinal"])] == box, said
                assert m["anchor"] == nearest(grid.texts, group, SIDES[m["relation"]]), said
            else:
                r = RELATION.search(said)
                assert r and said.count('"') == 2, said  # its role, its state, its anchor only
                assert r["anchor"] == nearest(grid.texts, box, SIDES[r["relation"]]), said
            placed += 1
    assert placed == 6
