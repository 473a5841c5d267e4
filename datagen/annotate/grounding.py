"""Grounding annotations from the live DOM at the moment of a screenshot.

    Observation ─► grounding_rows() ─► list[GroundingRow]

Boxes come from `getBoundingClientRect` (CSS px, clipped to the viewport) and are converted
to screenshot pixels and to [0, 1]. The referring expression is built the way a person would
point at the element, from what the screenshot shows (issue 34): the name it shows or the
label a user reads beside it in its row, what a filled field holds or a drop-down shows, a
drawn placeholder, an icon's glyph or word (an icon-only control's accessible name stands in
for its icon, unquoted: `the settings icon button`), else its role and state placed by the
drawn text nearest it, from the side that text is drawn on (`the empty text field above "Your
nickname"`: the caption is drawn under it), or alone where no text is near (`the unchecked
checkbox`); then made unique within the screenshot (by that text beside it, its place in its
group of like controls, `the second of three checkboxes in the list below "Tasks"`, the
nearest heading, else by order: `the second of two icon buttons`). Every element gets
one. Quoted text is text the screenshot shows; never the HTML `name` attribute, an id, a
class name, or an aria-label over text the control shows (the accessible name has its own
column, `accessible_name`). Every quoted text goes through `quote`, the one quoting rule of
expressions and action descriptions; `name_source` on the row says where the name came from.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from datagen.annotate.nouns import ROLE_NOUNS, SVG_TAGS, TAG_NOUNS, noun
from datagen.annotate.words import NUMBERS, ordinal_word, plural, quote
from datagen.config.urls import strip_credentials
from datagen.records import Element, GroundingRow, Observation

__all__ = ["ROLE_NOUNS", "SVG_TAGS", "TAG_NOUNS", "Expression", "expressions", "noun", "quote"]

# What singles an element out, by where its words came from (`Element.name_source`).
KIND_BY_SOURCE = {
    "aria-label": "name",
    "labelledby": "label",
    "label": "label",
    "sibling-label": "label",
    "content": "name",
    "alt": "name",
    "title": "name",
    "nearby": "nearby",
    "field-name": "field-name",
    "appearance": "appearance",
    "glyph": "icon",
    "icon": "icon",
}
# An icon-only control's accessible name (not shown on the screen): it stands in for the icon,
# said as the icon's word (`the settings icon button`), never quoted as if it were written there.
UNSHOWN_NAMES = {"aria-label", "alt", "title"}
ICON_WORDS = 3  # an accessible name longer than this is a sentence, not what an icon shows


def icon_word(name: str) -> str:
    """An icon-only control's accessible name said as its icon (`Settings` → `settings`);
    "" for one that is no icon's word (longer than ICON_WORDS words, or quoting something:
    `Delete "Buy milk"` says which row, which the text beside it says on the screen)."""
    words = name.lower().split()
    if len(words) > ICON_WORDS or any(c in name for c in "\"'“”«»:"):
        return ""
    return " ".join(words)


# What an unnamed control that draws an icon is called.
ICON_NOUNS = {"button": "icon button", "link": "icon link"}
# A relational expression says where the element is from its anchor text: the anchor lies to
# the element's left, so the element is right of it.
RELATION = {"left": "right of", "right": "left of", "above": "below", "below": "above"}
# What a group member with no words is called, by how the group is laid (issue 44): a grid's
# `cell`, else an `item` of its row, column or list (a role's own noun wins: `checkboxes`).
GROUP_NOUNS = {"grid": "cell"}
ROW_PX = 8  # elements whose tops are this close read as one line (reading order: rows, then x)


@dataclass(frozen=True)
class Expression:
    """The parts of `the second checked "Remember me" checkbox under "Sign in"`, `the trash
    icon button right of "Buy milk"`, `the text field containing "hello"`."""

    noun: str
    label: str = ""  # words shown on or for the element (quoted)
    state: str = ""
    placeholder: str = ""
    field_name: str = ""
    value: str = ""  # what a filled field holds, the option a drop-down shows
    shows: bool = False  # the value is a drop-down's shown option (`showing`, not `containing`)
    icon: str = ""  # the icon's word (unquoted: it is drawn, not written)
    colour: str = ""  # an unnamed shape's colour
    anchor: str = ""  # label-like text beside it in its row
    side: str = ""  # where the anchor lies: left | right | above | below
    kind: str = ""  # `group`: said by its place in its group (`expressions` calls it position)
    group_size: int = 0  # the like controls of its group (a grid's cells)
    group_index: int = 0  # its place among them in reading order
    group_kind: str = ""  # grid | row | column | list
    group_anchor: str = ""  # the drawn text nearest the group
    group_side: str = ""  # where that text is drawn from the group

    @property
    def words(self) -> bool:
        """Does it say anything of the element itself (not only where it is)?"""
        return bool(
            self.label
            or self.placeholder
            or self.field_name
            or self.value
            or self.icon
            or self.colour
        )

    def anchored(self) -> Expression | None:
        """The same, said from the anchor text beside it (`… right of "Buy milk"`); None when it
        has no anchor."""
        if not self.anchor or self.side not in RELATION:
            return None
        return replace(self, kind="relation")

    def render(
        self, ordinal: int = 0, context: str = "", *, state: bool = True, of: int = 0
    ) -> str:
        """`of`: how many read the same, said for an element with no words of its own (`the
        second of two icon buttons`)."""
        if self.kind == "group":
            return self._render_group()
        words = ["the"]
        if ordinal:
            words.append(ordinal_word(ordinal))
        many = bool(ordinal and of > 1)
        if many:
            words.append(f"of {NUMBERS.get(of, str(of))}")
        if self.state and state:
            words.append(self.state)
        if self.colour:
            words.append(self.colour)
        if self.label:
            words.append(quote(self.label))
        if self.icon:
            words.append(f"{self.icon} icon")
        words.append(plural(self.noun) if many else self.noun)
        if self.placeholder:
            words.append(f"with placeholder {quote(self.placeholder)}")
        elif self.value:
            words.append(f"{'showing' if self.shows else 'containing'} {quote(self.value)}")
        elif self.field_name:
            words.append(f"named {quote(self.field_name)}")
        if self.kind == "relation":
            words.append(f"{RELATION[self.side]} {quote(self.anchor)}")
        if context:
            words.append(f"under {quote(context)}")
        return " ".join(words)

    def _render_group(self) -> str:
        """`the sixth of 9 cells in the grid below "Score"`: its place among the like controls
        of its group, which the reader finds by the drawn text nearest the group."""
        noun = self.noun if self.noun != "element" else GROUP_NOUNS.get(self.group_kind, "item")
        size = NUMBERS.get(self.group_size, str(self.group_size))
        words = ["the", ordinal_word(self.group_index), "of", size, plural(noun)]
        words += ["in the", self.group_kind or "group"]
        if self.group_anchor and self.group_side in RELATION:
            words.append(f"{RELATION[self.group_side]} {quote(self.group_anchor)}")
        return " ".join(words)


def group_form(element: Element, expression: Expression) -> Expression | None:
    """The element said by its place in its group of like controls (`the sixth of 9 cells in
    the grid below "Score"`), for one with no words of its own in a group of two or more;
    None otherwise."""
    if element.group_size < 2 or not element.group_index or expression.words:
        return None
    return replace(
        expression,
        kind="group",
        group_size=element.group_size,
        group_index=element.group_index,
        group_kind=element.group_kind,
        group_anchor=element.group_anchor,
        group_side=element.group_anchor_side,
    )


def base_expression(element: Element, nouns: dict[str, str] = ROLE_NOUNS) -> Expression:
    """How a person would point at the element, from what the screenshot shows of it.

    In this order: the name it shows or the label a user reads (for a field or toggle, one
    beside it in its row); an icon-only control's icon (its glyph, quoted: it is drawn; its
    icon word or accessible name, unquoted); for a field, what it holds (kind `value`) while it
    holds text, for a drop-down the option it shows, else its placeholder while drawn; then,
    with no name at all, its role and state (`the empty text field`, kind `role`), placed by
    the text around it when there is some (`… below "Focus into the textbox."`, kind
    `relation`). Never ids, class names, the HTML `name` attribute or a checkbox's `value`."""
    what = noun(element, nouns)
    state = ""
    if element.checked is not None:
        state = "checked" if element.checked else "unchecked"
    source = element.name_source or "content"
    anchor, side = element.anchor, element.anchor_side
    if element.name and source == "appearance":  # an unnamed shape, by its colour
        return Expression(what, colour=element.name, kind="appearance")
    if element.name and source == "icon":
        return Expression(
            what, icon=element.name, state=state, kind="icon", anchor=anchor, side=side
        )
    if element.name and source in UNSHOWN_NAMES:
        word = icon_word(element.name)
        if word:
            return Expression(what, icon=word, state=state, kind="icon", anchor=anchor, side=side)
        what = ICON_NOUNS.get(what, what)  # a sentence of a name: the icon placed, not named
    if element.name and source != "field-name" and source not in UNSHOWN_NAMES:
        kind = KIND_BY_SOURCE.get(source, "name")
        return Expression(
            what, label=element.name, state=state, kind=kind, anchor=anchor, side=side
        )
    filled = element.editable and element.text.strip()
    if filled and element.input_type == "password":  # drawn as dots: not what it holds
        dots = Expression(what, state="filled", kind="role", anchor=anchor, side=side)
        return dots.anchored() or dots
    if filled:  # a filled field: what it holds (its placeholder is not drawn)
        return Expression(what, value=element.text, state=state, kind="value")
    if element.tag == "select" and element.text.strip():  # the option it shows
        return Expression(
            what, value=element.text, shows=True, kind="value", anchor=anchor, side=side
        )
    if element.placeholder and element.placeholder_shown:
        return Expression(what, placeholder=element.placeholder, kind="placeholder")
    if element.text and not element.editable:
        return Expression(
            what, label=element.text, state=state, kind="name", anchor=anchor, side=side
        )
    if element.name_source == "graphic":
        what = ICON_NOUNS.get(what, what)
    if element.editable and not element.text.strip():
        state = "empty"
    bare = Expression(what, state=state, kind="role", anchor=anchor, side=side)
    return bare.anchored() or bare


def referring_expression(element: Element) -> str:
    """`the "Add to cart" button`, `the search box with placeholder "Search products"`. Not yet unique: see `expressions`."""
    return base_expression(element).render()


def expressions(elements: Sequence[Element]) -> dict[int, tuple[str, str]]:
    """A referring expression for each element, unique within the screenshot, and its kind.

    Elements that would read the same are told apart by the text beside them in their row
    (`the "×" button right of "Buy milk"`, kind `relation`), else by their context (the
    nearest heading, legend or labelled region: `the "Submit" button under "Sign in"`), else by
    their place in reading order among the same-named ones on screen (`the second "Edit"
    button`; for elements with no words of their own, how many: `the second of two icon
    buttons`; kind `position`). Every control gets one (issue 34: a control with no name is
    named by its role and its place, not dropped); only an element with no role, no words and
    no text near it gets "" (rejected downstream as no_referring_expression).
    """
    bases = {e.index: base_expression(e) for e in elements}
    for e in elements:  # no words and no text beside it: its place in its group (issue 44)
        grouped = group_form(e, bases[e.index])
        if grouped is not None and bases[e.index].kind != "relation":
            bases[e.index] = grouped
    groups: dict[str, list[Element]] = defaultdict(list)
    out: dict[int, tuple[str, str]] = {}
    for e in elements:
        base = bases[e.index]
        if base.kind == "role" and base.noun == "element":  # no role, no words, nothing near:
            out[e.index] = ("", "")  # not a control anyone names (no_referring_expression)
        else:
            groups[base.render().lower()].append(e)
    taken = set(groups)
    for group in groups.values():
        if len(group) == 1:
            base = bases[group[0].index]
            out[group[0].index] = (base.render(), _kind(base))
            continue
        rest = _by_anchor(group, bases, taken, out)
        by_context: dict[str, list[Element]] = defaultdict(list)
        for e in rest:
            by_context[e.context.lower()].append(e)
        for context, members in by_context.items():
            ranked = reading_order(members if context else group)
            for e in members:
                base = bases[e.index]
                grouped = group_form(e, base)
                if grouped is not None:  # same words and text beside: its group says where
                    out[e.index] = (grouped.render(), "position")
                elif context and len(members) == 1:
                    out[e.index] = (base.render(context=e.context), "context")
                else:
                    position = ranked.index(e) + 1
                    of = 0 if base.words else len(ranked)
                    where = e.context if context else ""
                    out[e.index] = (base.render(position, where, of=of), "position")
    return out


def _kind(expression: Expression) -> str:
    """The row's `expression_kind`: a group member's place is a `position`."""
    return "position" if expression.kind == "group" else expression.kind


def _by_anchor(
    group: list[Element],
    bases: dict[int, Expression],
    taken: set[str],
    out: dict[int, tuple[str, str]],
) -> list[Element]:
    """Name the members of a group of same-reading elements that the text beside them tells
    apart (into `out`); the others are returned."""
    anchored: dict[str, list[Element]] = defaultdict(list)
    for e in group:
        said = bases[e.index].anchored()
        anchored[said.render().lower() if said else ""].append(e)
    rest = []
    for key, members in anchored.items():
        if not key or len(members) > 1 or key in taken:
            rest += members
            continue
        anchor = bases[members[0].index].anchored()
        assert anchor is not None
        out[members[0].index] = (anchor.render(), "relation")
        taken.add(key)
    return rest


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
                name_source=element.name_source,
                accessible_name=element.accessible_name,
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
                url=strip_credentials(obs.url),
            )
        )
    return rows
