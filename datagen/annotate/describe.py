"""Action descriptions: what a step did, in words, from its action and its DOM target.

    Observation + Decision(action, target) ─► describe() ─► StepRow.action_description
    Decision.trace (vlm: the model's own words) ─► StepRow.model_action_description

Deterministic: the same observation and decision always give the same words, and only what the
step row holds goes into them (the action, the target element as the observation saw it, the
other elements of that observation for ambiguity). The rules, written down in docs/output.md:

- **Target.** The words of its grounding expression (`annotate/grounding.py`,
  `base_expression`) without its checked state: `the "<name>" <noun>` from the element's
  accessible name or the label a user reads beside it in its row, `the <noun> containing "…"`
  for a filled field, `the <noun> with placeholder "…"` while the placeholder is drawn, an
  icon's glyph (`the "×" button`) or word (`the trash icon button`), an unnamed SVG shape by
  its colour (`the blue graphic`), else its role and state placed by the drawn text nearest
  it, from the side that text is drawn on (`the button right of "Buy milk"`, `the field above
  "Your nickname"` for a caption drawn under it), or by its place in its group of like
  controls (`the second of three checkboxes in the list below "Tasks"`), else its role with an
  ordinal that says among how many (`the second of two checkboxes`). Never coordinates for an
  element target (issue 34).
- **Target of a click without one** (scripted and model actions): the smallest element of the
  observation whose box holds the point, as the DOM saw it; `Click at (x, y)` only where no
  element is there.
- **Nouns** by role: `field` (textbox), `search field`, `number field`, `button`, `link`,
  `checkbox`, `radio button`, `toggle` (switch), `tab`, `drop-down` (combobox), `menu item`,
  `option`, `cell`, `list item`, …; elements without a role by their tag (`list item`,
  `cell`, `graphic`), `element` only when neither says anything (docs: the same tables as the
  grounding expressions, but `field` for a textbox).
- **Ordinal** only when the words are ambiguous: when another element of the same
  observation reads the same (same words ignoring case), the text beside it in its row tells
  them apart when it can (`the "×" button right of "Buy milk"`), else the target gets its place
  in reading order among them (rows of tops within 8 px, then left to right; the order the
  grounding table's `position` expressions use): `the second "Submit" button`.
- **Verbs** by action and role: a click on a checkbox is `Check` or `Uncheck` (from its
  `checked` state before the click; `Click` when unknown), on a switch `Turn on` / `Turn off`,
  on a radio button, menu radio item or option `Select`; `Type "…" into …`, `Press Enter`
  (`Press Enter in …` when the key went to a recorded target), `Scroll down` / `up` /
  `left` / `right` (both axes: `Scroll down and right`), `Go back`, `Go to <url>`,
  `Wait 1.5 seconds`, `Finish` / `Finish with the answer "42"`; a click on no element:
  `Click at (x, y)`.
- **Quoting** (`grounding.quote`, shared with the expressions). Names, typed text and answers
  go in straight double quotes, whitespace collapsed, a `"` inside them written `'`, cut to
  QUOTE_CHARS at a word boundary with `…`; URLs are not quoted and cut to URL_CHARS.

The vlm policy's own words (`model_action_description`) are never derived here: they are the
model's description of the element it clicked (`ModelTrace.action_description`), verbatim, or
null when its answer carries none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from datagen.annotate.grounding import (
    ROLE_NOUNS,
    Expression,
    base_expression,
    group_form,
    reading_order,
)
from datagen.annotate.words import QUOTE_CHARS, quote
from datagen.records import (
    Back,
    Click,
    Decision,
    Done,
    Element,
    Goto,
    Key,
    Observation,
    Scroll,
    TypeText,
    Wait,
)

__all__ = ["QUOTE_CHARS", "describe", "element_at", "model_description", "quote"]

URL_CHARS = 200
NOUNS = {**ROLE_NOUNS, "textbox": "field", "searchbox": "search field"}
CHECK_VERBS = {  # role → (verb when unchecked, verb when checked) before the click
    "checkbox": ("Check", "Uncheck"),
    "menuitemcheckbox": ("Check", "Uncheck"),
    "switch": ("Turn on", "Turn off"),
}
SELECT_ROLES = {"radio", "menuitemradio", "option"}


def describe(obs: Observation, decision: Decision) -> str:
    """The step's action in words, from its DOM target when it has one (see the module doc)."""
    action, target = decision.action, decision.target
    match action:
        case Click(x=x, y=y):
            target = target or element_at(obs, x, y)
            if target is None:
                return f"Click at ({x:.0f}, {y:.0f})"
            return f"{_click_verb(target)} {_phrase(obs, target, (x, y))}"
        case TypeText(text=text):
            typed = f"Type {quote(text)}"
            return f"{typed} into {_phrase(obs, target)}" if target else typed
        case Key(combo=combo):
            pressed = f"Press {combo}"
            return f"{pressed} in {_phrase(obs, target)}" if target else pressed
        case Scroll(dx=dx, dy=dy):
            return _scroll(dx, dy)
        case Goto(url=url):
            return f"Go to {url if len(url) <= URL_CHARS else url[: URL_CHARS - 1] + '…'}"
        case Back():
            return "Go back"
        case Wait(seconds=seconds):
            return f"Wait {seconds:g} second{'' if seconds == 1 else 's'}"
        case Done(answer=answer):
            return f"Finish with the answer {quote(answer)}" if answer.strip() else "Finish"
    raise AssertionError(f"no description for {action!r}")  # mypy: every action is matched


def model_description(decision: Decision) -> str | None:
    """The model's own words for its action (vlm policy), verbatim; None when it gave none."""
    if decision.trace is None:
        return None
    return decision.trace.action_description


def element_at(obs: Observation, x_px: float, y_px: float) -> Element | None:
    """The smallest element of the observation whose box holds the point (screenshot px) and
    whose centre a click reaches: what a click there lands on, per the DOM at that moment."""
    scale = obs.device_scale_factor
    return element_under(obs.elements, x_px / scale, y_px / scale)


def element_under(elements: Sequence[Element], x: float, y: float) -> Element | None:
    """`element_at` on a list of elements, the point in CSS px (a replay's hit test)."""
    inside = [
        e
        for e in elements
        if e.box.x <= x <= e.box.x + e.box.width and e.box.y <= y <= e.box.y + e.box.height
    ]
    hit = [e for e in inside if e.hit] or inside
    return min(hit, key=lambda e: e.box.width * e.box.height, default=None)


def _expression(element: Element) -> Expression:
    """The element's grounding expression with description nouns; a placeholder read as its
    name (`the "Search" field`, as a person says it)."""
    expression = base_expression(element, NOUNS)
    if expression.placeholder or expression.field_name:
        words = expression.placeholder or expression.field_name
        expression = replace(expression, label=words, placeholder="", field_name="")
    return expression


def _phrase(obs: Observation, target: Element, point: tuple[float, float] | None = None) -> str:
    """`the second "Submit" button`, `the "Email" field`, `the button right of "Buy milk"`,
    `the second checkbox` (never coordinates: every element has words, issue 34)."""
    expression = _expression(target)
    grouped = group_form(target, expression)
    if grouped is not None and expression.kind != "relation":
        return grouped.render()  # no words, no text beside it: its place in its group
    words = expression.render(state=False)
    same = _same(obs.elements, words)
    if len(same) < 2 or not any(_is(e, target) for e in same):
        return words
    anchored = expression.anchored()
    if anchored is not None and expression.kind != "relation":
        said = anchored.render(state=False)
        if len(_same(obs.elements, said, anchored=True)) < 2:
            return said
    if grouped is not None:
        return grouped.render()
    place = _place(same, target)
    # an ordinal says among which: `the second of two checkboxes` for one with no words
    of = 0 if expression.words else len(same)
    return expression.render(place, state=False, of=of) if place else words


def _same(elements: Sequence[Element], words: str, *, anchored: bool = False) -> list[Element]:
    """The elements that read `words` (ignoring case)."""
    out = []
    for e in elements:
        expression: Expression | None = _expression(e)
        if expression is not None and anchored:
            expression = expression.anchored()
        if expression is not None and expression.render(state=False).lower() == words.lower():
            out.append(e)
    return out


def _is(element: Element, target: Element) -> bool:
    return element.index == target.index and element.selector == target.selector


def _place(same: list[Element], target: Element) -> int:
    """The target's place in reading order among the elements that read the same."""
    for position, element in enumerate(reading_order(same), start=1):
        if _is(element, target):
            return position
    return 0


def _click_verb(target: Element) -> str:
    if target.role in CHECK_VERBS and target.checked is not None:
        on, off = CHECK_VERBS[target.role]
        return off if target.checked else on
    return "Select" if target.role in SELECT_ROLES else "Click"


def _scroll(dx: float, dy: float) -> str:
    """`Scroll down`, `Scroll down and right`; a vertical move is named first."""
    moved = (("down", dy), ("up", -dy), ("right", dx), ("left", -dx))
    ways = [way for way, amount in moved if amount > 0]
    return "Scroll " + " and ".join(ways) if ways else "Scroll"
