"""Grounding annotations from the live DOM at the moment of a screenshot.

    Observation ─► grounding_rows() ─► list[GroundingRow]

Boxes come from `getBoundingClientRect` (CSS px, clipped to the viewport) and are converted
to screenshot pixels and to [0, 1]. The referring expression is built from the accessible
name, visible text, placeholder and role, the way a person would point at the element, and
made unique within the screenshot (by the nearest heading, else by order).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from datagen.records import Element, GroundingRow, Observation

ROLE_NOUNS = {
    "button": "button",
    "link": "link",
    "textbox": "text field",
    "searchbox": "search box",
    "spinbutton": "number field",
    "checkbox": "checkbox",
    "radio": "radio button",
    "switch": "toggle",
    "tab": "tab",
    "combobox": "drop-down",
    "listbox": "list",
    "menuitem": "menu item",
    "menuitemcheckbox": "menu item",
    "menuitemradio": "menu item",
    "option": "option",
    "slider": "slider",
    "treeitem": "tree item",
    "img": "image",
}
# Elements without a role (listener-only spans, divs, SVG shapes): named by what they look like.
TAG_NOUNS = {"li": "list item", "td": "cell", "tr": "row", "img": "image", "label": "label"}
SVG_TAGS = {"svg", "path", "rect", "circle", "ellipse", "polygon", "polyline", "line", "g", "use"}
# What singles an element out, by where its words came from (`Element.name_source`).
KIND_BY_SOURCE = {
    "aria-label": "name",
    "labelledby": "label",
    "label": "label",
    "content": "name",
    "alt": "name",
    "title": "name",
    "nearby": "nearby",
    "field-name": "field-name",
    "appearance": "appearance",
}
ORDINALS: tuple[str, ...] = (
    *("first", "second", "third", "fourth", "fifth"),
    *("sixth", "seventh", "eighth", "ninth", "tenth"),
)


def ordinal_word(n: int) -> str:
    """1 → first … 10 → tenth, then 11th, 21st, 22nd, 23rd, 101st."""
    if n <= len(ORDINALS):
        return ORDINALS[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


ROW_PX = 8  # elements whose tops are this close read as one line (reading order: rows, then x)


@dataclass(frozen=True)
class Expression:
    """The parts of `the second checked "Remember me" checkbox under "Sign in"`."""

    noun: str
    label: str = ""
    state: str = ""
    placeholder: str = ""
    field_name: str = ""
    kind: str = ""

    def render(self, ordinal: int = 0, context: str = "") -> str:
        words = ["the"]
        if ordinal:
            words.append(ordinal_word(ordinal))
        if self.state:
            words.append(self.state)
        if self.label:
            words.append(f'"{self.label}"')
        words.append(self.noun)
        if self.placeholder:
            words.append(f'with placeholder "{self.placeholder}"')
        elif self.field_name:
            words.append(f'named "{self.field_name}"')
        if context:
            words.append(f'under "{context}"')
        return " ".join(words)


def noun(element: Element, nouns: dict[str, str] = ROLE_NOUNS) -> str:
    """What the element is called: by its role (in `nouns`), else its tag (`graphic` for SVG
    shapes)."""
    if element.role in nouns:
        return nouns[element.role]
    if element.tag in SVG_TAGS:
        return "graphic"
    return TAG_NOUNS.get(element.tag, "element")


def base_expression(element: Element) -> Expression | None:
    """How a person would point at the element from its own words alone; None if it has none.
    Built only from what the screenshot shows (never ids, classes or a checkbox's `value`), or,
    for an unlabeled field, its `name` attribute (kind `field-name`, filterable)."""
    what = noun(element)
    state = ""
    if element.checked is not None:
        state = "checked" if element.checked else "unchecked"
    source = element.name_source or "content"
    if element.name and source == "appearance":  # an unnamed shape, by its colour
        return Expression(what, state=element.name, kind="appearance")
    if element.name and source != "field-name":
        return Expression(what, label=element.name, state=state, kind=KIND_BY_SOURCE[source])
    if element.placeholder:
        return Expression(what, placeholder=element.placeholder, kind="placeholder")
    if element.name:
        return Expression(what, field_name=element.name, kind="field-name")
    if element.text and element.editable:  # a filled field with nothing else: its content
        return Expression(what, label=element.text, state=state, kind="value")
    if element.text:
        return Expression(what, label=element.text, state=state, kind="name")
    return None


def referring_expression(element: Element) -> str:
    """`the "Add to cart" button`, `the search box with placeholder "Search products"`; "" if
    the element has nothing a person could refer to it by. Not yet unique: see `expressions`."""
    expression = base_expression(element)
    return expression.render() if expression else ""


def expressions(elements: Sequence[Element]) -> dict[int, tuple[str, str]]:
    """A referring expression for each element, unique within the screenshot, and its kind.

    Elements that would read the same are told apart by their context (the nearest heading,
    legend or labelled region: `the "Submit" button under "Sign in"`), else by their place in
    reading order among the same-named ones on screen (`the second "Edit" button`, kind
    `position`). Elements with no words of their own get "" (rejected downstream).
    """
    bases = {e.index: base_expression(e) for e in elements}
    groups: dict[str, list[Element]] = defaultdict(list)
    out: dict[int, tuple[str, str]] = {}
    for e in elements:
        base = bases[e.index]
        if base is None:
            out[e.index] = ("", "")
        else:
            groups[base.render().lower()].append(e)
    for group in groups.values():
        if len(group) == 1:
            base = bases[group[0].index]
            assert base is not None
            out[group[0].index] = (base.render(), base.kind)
            continue
        by_context: dict[str, list[Element]] = defaultdict(list)
        for e in group:
            by_context[e.context.lower()].append(e)
        for context, members in by_context.items():
            ranked = reading_order(members if context else group)
            for e in members:
                base = bases[e.index]
                assert base is not None
                if context and len(members) == 1:
                    out[e.index] = (base.render(context=e.context), "context")
                else:
                    position = ranked.index(e) + 1
                    out[e.index] = (base.render(position, e.context if context else ""), "position")
    return out


def reading_order(elements: list[Element]) -> list[Element]:
    """Elements as a person reads them: rows of tops within ROW_PX, then left to right (the
    order of `the second "Edit" button` here and in action descriptions). A row starts at
    the highest top not yet placed and holds every top within ROW_PX below it (binning tops by
    `round(y / ROW_PX)` split 100 and 104 into two rows)."""
    rows: list[list[Element]] = []
    for element in sorted(elements, key=lambda e: (e.box.y, e.box.x)):
        if rows and element.box.y - rows[-1][0].box.y <= ROW_PX:
            rows[-1].append(element)
        else:
            rows.append([element])
    return [e for row in rows for e in sorted(row, key=lambda e: (e.box.x, e.box.y))]


def grounding_rows(
    obs: Observation,
    *,
    run_id: str,
    schema_version: str,
    task_id: str,
    episode_id: str,
    browser_version: str,
    step_index: int,
    limit: int,
) -> list[GroundingRow]:
    """One row per visible interactive element (at most `limit`), validity decided later."""
    scale = obs.device_scale_factor
    width, height = obs.image_width, obs.image_height
    named = expressions(obs.elements)
    rows = []
    for element in obs.elements[:limit]:
        b = element.box
        box_px = (b.x * scale, b.y * scale, (b.x + b.width) * scale, (b.y + b.height) * scale)
        rows.append(
            GroundingRow(
                run_id=run_id,
                schema_version=schema_version,
                task_id=task_id,
                episode_id=episode_id,
                browser_version=browser_version,
                step_index=step_index,
                element_index=element.index,
                referring_expression=named[element.index][0],
                expression_kind=named[element.index][1],
                role=element.role,
                tag=element.tag,
                name=element.name,
                text=element.text,
                selector=element.selector,
                bbox_px=(
                    round(box_px[0], 2),
                    round(box_px[1], 2),
                    round(box_px[2], 2),
                    round(box_px[3], 2),
                ),
                bbox_css=(b.x, b.y, b.x + b.width, b.y + b.height),
                bbox_norm=(
                    box_px[0] / width,
                    box_px[1] / height,
                    box_px[2] / width,
                    box_px[3] / height,
                ),
                point_px=(
                    round((box_px[0] + box_px[2]) / 2, 2),
                    round((box_px[1] + box_px[3]) / 2, 2),
                ),
                image_width=width,
                image_height=height,
                hit_test=element.hit,
                url=obs.url,
            )
        )
    return rows
