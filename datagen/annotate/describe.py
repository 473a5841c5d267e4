"""Action descriptions: what a step did, in words, from its action and its DOM target.

    Observation + Decision(action, target) ─► describe() ─► StepRow.action_description
    Decision.trace (vlm: the model's own words) ─► StepRow.model_action_description

Deterministic: the same observation and decision always give the same words, and only what the
step row holds goes into them (the action, the target element as the observation saw it, the
other elements of that observation for ambiguity). The rules, written down in docs/output.md:

- **Target.** `the "<name>" <noun>`: the element's accessible name, falling back to its
  placeholder, then (for elements that are not fields: a field's text is its value) its
  visible text. An unnamed SVG shape is named by its colour, unquoted (`the blue graphic`).
  An element with no words at all is placed instead: `the button at (412, 230)` (screenshot
  pixels: the click's point, else the element's centre).
- **Nouns** by role: `field` (textbox), `search field`, `number field`, `button`, `link`,
  `checkbox`, `radio button`, `toggle` (switch), `tab`, `drop-down` (combobox), `menu item`,
  `option`, …; elements without a role by their tag (`list item`, `cell`, `graphic`) or
  `element` (docs: the same table as the grounding expressions, but `field` for a textbox).
- **Ordinal** only when the words are ambiguous: when another element of the same
  observation reads the same (same noun, same name ignoring case), the target gets its place
  in reading order among them (rows of tops within 8 px, then left to right; the order the
  grounding table's `position` expressions use): `the second "Submit" button`.
- **Verbs** by action and role: a click on a checkbox is `Check` or `Uncheck` (from its
  `checked` state before the click; `Click` when unknown), on a switch `Turn on` / `Turn off`,
  on a radio button, menu radio item or option `Select`; `Type "…" into …`, `Press Enter`
  (`Press Enter in …` when the key went to a recorded target), `Scroll down` / `up` /
  `left` / `right` (both axes: `Scroll down and right`), `Go back`, `Go to <url>`,
  `Wait 1.5 seconds`, `Finish` / `Finish with the answer "42"`; a click without a target
  (a model clicking empty space): `Click at (x, y)`.
- **Quoting.** Names, typed text and answers go in straight double quotes, whitespace
  collapsed, a `"` inside them written `'`, cut to QUOTE_CHARS at a word boundary with `…`;
  URLs are not quoted and cut to URL_CHARS.

The vlm policy's own words (`model_action_description`) are never derived here: they are the
model's description of the element it clicked (`ModelTrace.action_description`), verbatim, or
null when its answer carries none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from datagen.annotate.grounding import ROLE_NOUNS, noun, ordinal_word, reading_order
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

QUOTE_CHARS = 80  # longer names and texts are cut (at a word boundary) and end in "…"
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


def quote(text: str) -> str:
    """`"Buy milk"`: whitespace collapsed, `"` written `'`, at most QUOTE_CHARS characters
    (cut at a word boundary when there is one in the last third, ending in `…`)."""
    flat = re.sub(r"\s+", " ", text).strip().replace('"', "'")
    if len(flat) > QUOTE_CHARS:
        cut = flat[: QUOTE_CHARS - 1]
        space = cut.rfind(" ")
        cut = cut[:space] if space > QUOTE_CHARS * 2 // 3 else cut
        flat = cut.rstrip() + "…"
    return f'"{flat}"'


def label(element: Element) -> str:
    """The words naming the element, quoted (an SVG shape's colour unquoted); "" for none."""
    if element.name and element.name_source == "appearance":
        return element.name
    words = element.name or element.placeholder or ("" if element.editable else element.text)
    return quote(words) if words.strip() else ""


def _phrase(obs: Observation, target: Element, point: tuple[float, float] | None = None) -> str:
    """`the second "Submit" button`, `the "Email" field`, `the button at (412, 230)`."""
    what, words = noun(target, NOUNS), label(target)
    if not words:
        if point is None:
            scale = obs.device_scale_factor
            point = (target.box.centre[0] * scale, target.box.centre[1] * scale)
        return f"the {what} at ({point[0]:.0f}, {point[1]:.0f})"
    place = _place(obs.elements, target, what, words)
    return " ".join(["the", *([ordinal_word(place)] if place else []), words, what])


def _place(elements: Sequence[Element], target: Element, what: str, words: str) -> int:
    """The target's place in reading order among the elements that read the same; 0 when
    none does (or the target is not among the observation's elements)."""
    same = [e for e in elements if noun(e, NOUNS) == what and label(e).lower() == words.lower()]
    if len(same) < 2:
        return 0
    ranked = reading_order(same)
    for position, element in enumerate(ranked, start=1):
        if element.index == target.index and element.selector == target.selector:
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
