"""Is a quoted anchor the drawn text nearest its element on the side the expression states?

Part of the independent grounding oracle (`oracle/`), which never imports `datagen`: its own
reading of the page's drawn text and its own geometry.

An expression may place a control with no words of its own by the text nearest it
(`the empty text field above "Caption"`: the caption is drawn below the field) or place its
group by the text nearest the group (`the second of 3 checkboxes in the list below "Tasks"`).
Such a quote may come from outside the control's row (`data-gt-row`); it is acceptable when it
is the drawn text nearest the element (or its group) on the stated side, as the screen draws
it now. The side is where the text is drawn: `above "X"` says X is drawn below the element.

A text counts as drawn here when its text node has a box at least 2 px wide inside the
viewport, a font size of 1 px or more, a colour that is not transparent, an element that is
shown (`checkVisibility`, opacity included), and a hit test at its centre lands on its own
element (nothing painted over it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from playwright.async_api import Page

Box = tuple[float, float, float, float]  # x1, y1, x2, y2 in CSS px of the top-level viewport

EDGE_PX = 2.0  # a text this far into the element's box still lies on that side
TIE_PX = 1.0  # texts this close in distance are equally near
SIZE_PX = 2.0  # like members of a group: the same width or height within this
# The relation as written → the side the quoted text is drawn on, from the element.
SIDES = {"above": "below", "below": "above", "right of": "left", "left of": "right"}
RELATION = r"(?P<relation>above|below|right of|left of) \"(?P<anchor>[^\"]*)\""
GROUP = re.compile(
    r"the \w+ of (?P<size>\w+) [\w ]+? in the (?:grid|list|row|column|group) " + RELATION
)
PLAIN = re.compile(RELATION)
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}

DRAWN_TEXTS_JS = """() => {
  const out = [];
  const clear = (c) => !c || c === 'transparent' || /^rgba\\([^)]*,\\s*0(\\.0+)?\\)$/.test(c);
  const walker = document.createTreeWalker(document.body || document.documentElement,
    NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const text = t.textContent.replace(/\\s+/g, ' ').trim().replace(/[:*]+$/, '').trim();
    const host = t.parentElement;
    if (!/\\p{L}/u.test(text) || !host || host.closest('script, style, template')) continue;
    if (host.checkVisibility && !host.checkVisibility(
      { opacityProperty: true, visibilityProperty: true })) continue;
    const st = getComputedStyle(host);
    if (parseFloat(st.fontSize) < 1 || clear(st.color)) continue;
    const range = document.createRange();
    range.selectNodeContents(t);
    const r = range.getBoundingClientRect();
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    if (r.width < 2 || r.height < 2 || x < 0 || y < 0 || x > innerWidth || y > innerHeight) continue;
    const at = document.elementFromPoint(x, y);
    if (!at || !host.contains(at)) continue;
    out.push([text, r.left, r.top, r.right, r.bottom]);
  }
  return out;
}"""


@dataclass(frozen=True)
class DrawnText:
    """One text node the screen draws, with its box."""

    text: str
    box: Box


async def drawn_texts(page: Page) -> list[DrawnText]:
    """The top document's drawn text nodes (a frame's text places nothing outside it)."""
    found = await page.evaluate(DRAWN_TEXTS_JS)
    return [DrawnText(str(t), (float(a), float(b), float(c), float(d))) for t, a, b, c, d in found]


def gap(box: Box, text: Box, side: str) -> float | None:
    """How far `text` lies from `box` on `side` (left | right | above | below: where the text
    is), or None when it is not on that side (it must overlap the box across that side)."""
    across = min(box[2], text[2]) - max(box[0], text[0]) > 0
    along = min(box[3], text[3]) - max(box[1], text[1]) > 0
    if side == "above" and across and text[3] <= box[1] + EDGE_PX:
        return box[1] - text[3]
    if side == "below" and across and text[1] >= box[3] - EDGE_PX:
        return text[1] - box[3]
    if side == "left" and along and text[2] <= box[0] + EDGE_PX:
        return box[0] - text[2]
    if side == "right" and along and text[0] >= box[2] - EDGE_PX:
        return text[0] - box[2]
    return None


def _norm(text: str) -> str:
    return " ".join(text.replace('"', "'").lower().split())


def nearest_is(quote: str, box: Box, side: str, texts: Iterable[DrawnText]) -> bool:
    """Is `quote` (a cut one by its start) the drawn text nearest `box` on `side`?"""
    want = _norm(quote.rstrip("…"))
    found = [(g, _norm(t.text)) for t in texts if (g := gap(box, t.box, side)) is not None]
    if not want or not found:
        return False
    least = min(g for g, _ in found)
    return any(g <= least + TIE_PX and text.startswith(want) for g, text in found)


def _union(boxes: Sequence[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def group_box(box: Box, like: Sequence[Box], size: int) -> Box:
    """The box of the element's group of `size`: it and the `size - 1` like boxes (same width
    or height) nearest it, by their centres."""

    def centre(b: Box) -> tuple[float, float]:
        return ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)

    def same(b: Box) -> bool:
        return (
            abs((b[2] - b[0]) - (box[2] - box[0])) <= SIZE_PX
            or abs((b[3] - b[1]) - (box[3] - box[1])) <= SIZE_PX
        )

    cx, cy = centre(box)
    others = sorted(
        (b for b in like if b != box and same(b)),
        key=lambda b: (centre(b)[0] - cx) ** 2 + (centre(b)[1] - cy) ** 2,
    )
    return _union([box, *others[: max(0, size - 1)]])


def placed(
    quote: str, expression: str, box: Box, like: Sequence[Box], texts: Sequence[DrawnText]
) -> bool:
    """Does the expression quote `quote` as an anchor that is the drawn text nearest the
    element (box `box`), or nearest its group (`like`: the boxes of targets of its tag), on the
    side it states?"""
    grouped = []  # where a group's anchor is said: it places the group, not the element
    for m in GROUP.finditer(expression):
        grouped.append(m.span("relation"))
        if _norm(m["anchor"]) != _norm(quote):
            continue
        raw = m["size"]
        size = int(raw) if raw.isdigit() else NUMBERS.get(raw, 0)
        if size >= 2 and nearest_is(quote, group_box(box, like, size), SIDES[m["relation"]], texts):
            return True
    for m in PLAIN.finditer(expression):
        if m.span("relation") in grouped:
            continue
        if _norm(m["anchor"]) == _norm(quote) and nearest_is(
            quote, box, SIDES[m["relation"]], texts
        ):
            return True
    return False
