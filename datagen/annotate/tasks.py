"""Tasks from an episode's effects: what its needed steps changed, as checks and words (issue 43).

    PageState before the demonstration (twice) + after each of its steps ─► effects()
        ─► Effect(kind, key, SuccessCheck) ─► instruction(effect, demonstration) ─► words

Pure: the states come from a sealed replay of a verified episode's needed steps (observed:
pipeline/synthesis.py, which also proves each candidate by replays). An effect is what differs
between the start state and the state after the demonstration's first k steps: the URL (path,
query, else each new `key=value` pair of its fragment), an element that appeared or
disappeared (role, name), a control's state (checked) or shown value (a drop-down's option),
text that became visible, a control that shows another number (`count`). Words are kept
only where they name what the check reads (decide.py). What differs between two
observations of the start state moves by itself (a clock, a counter, a random token): it is
never used, nor anything that looks like it once its digits are masked. A line of text that
changed in its digits alone ("Visitors 100" ─► "Visitors 198") is no effect either: a counter
that ticks between two observations too slowly to be caught would otherwise become a task. A
control's name that changed in its digits alone (the shop's "Cart 0" ─► "Cart 1") is one, a
`count`, as the episode caused it: the one control of its role and name but for the digits,
before and after, its reading steady between the observations of the start; the proof's
sealed replays then confirm it (synthesis.py: a control that ticks by itself reads otherwise
on the second replay, or had moved between the start's observations).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from datagen.annotate.decide import decides, labelled, pager
from datagen.annotate.grounding import ICON_NOUNS, icon_word
from datagen.annotate.nouns import ROLE_NOUNS
from datagen.annotate.words import exact_quote
from datagen.records import ElementCheck, ElementState, PageState, SuccessCheck
from datagen.url import fragment_of, path_of, query_of

KINDS = ("state", "value", "url", "count", "appeared", "text", "disappeared")  # most telling first
DIGITS = re.compile(r"\d+")
# a line of text worth a check: a message, a heading; not a paragraph (it would be brittle)
TEXT_LEN = (3, 80)
# roles whose shown value is a choice a person makes (not a field's typed text)
CHOICES = frozenset({"combobox", "listbox", "radiogroup", "spinbutton", "slider"})
SWITCHES = {"switch": ("Turn on", "Turn off"), "radio": ("Select", "Select")}
# a control's name of words and one number at its end ("Cart 1", "Inbox (3)"): its words
COUNTED = re.compile(r"(?P<words>.*[^\W\d_].*?)[\s:]*\(?(?P<n>\d+)\)?")
# roles a control's words name in an instruction ("the "Cart" button")
NOUNS = frozenset({"button", "link", "tab", "menuitem"})


@dataclass(frozen=True)
class Effect:
    """One change the demonstration made, and the check that sees it: `kind` (KINDS), `key`
    (what it changed, for deduplication), `subject` (the element or text it is about)."""

    kind: str
    key: str
    check: SuccessCheck
    subject: str = ""
    role: str = ""
    was: str = ""  # a `count`'s name before ("Cart 0"; its subject: "Cart 1")


@dataclass(frozen=True)
class Act:
    """One demonstration step as words need it: click / type / key / other, the element it
    acted on (role, name; its accessible name as `label`, `equals` like elements on the page
    and the drawn `context` that tells it from them), and what it typed or pressed."""

    kind: str
    role: str = ""
    name: str = ""
    text: str = ""
    label: str = ""
    context: str = ""
    equals: int = 1
    shown: bool = True  # `name` is drawn (an icon-only control's aria-label, alt, title is not)


def mask(text: str) -> str:
    """`text` with every run of digits as `#`: a clock's or a counter's every reading alike."""
    return DIGITS.sub("#", text)


def lines(text: str) -> set[str]:
    """The non-empty lines of a body text, stripped."""
    return {line.strip() for line in text.splitlines() if line.strip()}


def volatile(first: PageState, second: PageState) -> set[str]:
    """Masked lines, names and values that differ between two observations of the start state."""
    moved = {mask(s) for s in lines(first.text) ^ lines(second.text)}
    a = {(e.role, e.name, e.text, e.checked) for e in first.elements}
    b = {(e.role, e.name, e.text, e.checked) for e in second.elements}
    for _, name, text, _ in a ^ b:
        moved |= {mask(name), mask(text)} - {""}
    return moved


def _unique(state: PageState) -> dict[tuple[str, str], ElementState]:
    """Named elements that are the only one of their role and name on the page, and not
    covered: a covered control is not on screen (and it may go by another name then: a
    grid's "Add to cart" under a drawer is "Add Yoga Mat to cart" by its aria-label)."""
    seen: dict[tuple[str, str], list[ElementState]] = {}
    for e in state.elements:
        if e.name:
            seen.setdefault((e.role, e.name), []).append(e)
    # `generic`: a box with words but no role a reader (or a checker) can name it by
    return {
        k: v[0] for k, v in seen.items() if len(v) == 1 and k[0] not in ("generic", "") and v[0].hit
    }


def _url_part(before: str, after: str) -> str | None:
    """The part of `after`'s URL (path, else query) that `before`'s does not contain."""
    b_path, a_path, b_query, a_query = (
        path_of(before),
        path_of(after),
        query_of(before),
        query_of(after),
    )
    if a_path != b_path and a_path not in ("", "/"):
        return a_path + (f"?{a_query}" if a_query else "")
    if a_query and a_query != b_query and f"?{a_query}" not in before:
        return f"?{a_query}"
    return None


def _fragment_parts(before: str, after: str) -> list[str]:
    """The pairs of `after`'s fragment that `before`'s lacks, each as the URL spells it with
    its separators (`#page=5&`, `&sort=salary&`, `&dir=asc`): a page's own state in its URL
    (a table's page and sort), one check each; a fragment of no pairs as a whole."""
    b_frag, a_frag = fragment_of(before), fragment_of(after)
    if not a_frag or a_frag == b_frag:
        return []
    if "=" not in a_frag:
        return [f"#{a_frag}"]
    pairs, had = a_frag.split("&"), set(b_frag.split("&"))
    return [
        ("#" if i == 0 else "&") + pair + ("&" if i < len(pairs) - 1 else "")
        for i, pair in enumerate(pairs)
        if pair not in had and "=" in pair
    ]


def _element(kind: str, e: ElementState, **check: str | None) -> Effect:
    spec = ElementCheck(role=e.role, name=e.name, **check)
    key = f"{kind}:{e.role}:{e.name}:{spec.state}:{spec.value or ''}"
    return Effect(kind, key, SuccessCheck(element=spec), e.name, e.role)


def _masked_names(state: PageState) -> set[tuple[str, str]]:
    return {(e.role, mask(e.name)) for e in state.elements}


def _by_mask(state: PageState) -> dict[tuple[str, str], list[ElementState]]:
    found: dict[tuple[str, str], list[ElementState]] = {}
    for e in state.elements:
        found.setdefault((e.role, mask(e.name)), []).append(e)
    return found


def _renumbered(
    start: PageState, after: PageState, before: dict[tuple[str, str], ElementState]
) -> dict[tuple[str, str], ElementState]:
    """Controls of `after` that are one of `start`'s but for their digits ("Cart 0" ─►
    "Cart 1"), by their name now, each with the element before: the one element of that role
    and masked name on either page, on screen on both (`before`: `start`'s unique ones)."""
    was_by, pairs = _by_mask(start), {}
    for key, now in _by_mask(after).items():
        was = was_by.get(key, [])
        if len(now) == len(was) == 1 and was[0].name != now[0].name:
            pairs[(now[0].role, now[0].name)] = was[0]
    # on screen before: a covered control is not on screen (_unique)
    return {k: e for k, e in pairs.items() if before.get((e.role, e.name)) is e}


def _element_effects(start: PageState, after: PageState) -> list[Effect]:
    before, now = _unique(start), _unique(after)
    found: list[Effect] = []
    was_there, still_there = _masked_names(start), _masked_names(after)
    counted = _renumbered(start, after, before)
    for key, e in now.items():
        was = before.get(key)
        if was is None:
            if (e.role, mask(e.name)) not in was_there:  # new, not a renumbered one
                found.append(_element("appeared", e))
            elif key in counted:  # the same control, showing another number
                found.append(replace(_element("count", e), was=counted[key].name))
        elif e.checked is not None and was.checked is not None and e.checked != was.checked:
            found.append(_element("state", e, state="checked" if e.checked else "unchecked"))
        elif e.role in CHOICES and e.text and e.text != was.text:
            found.append(_element("value", e, value=e.text))
    names = {(x.role, x.name) for x in after.elements}
    for key, e in before.items():
        if key not in names and (e.role, mask(e.name)) not in still_there:
            found.append(_element("disappeared", e, state="absent"))
    return found


def effects(start: PageState, again: PageState, after: PageState) -> list[Effect]:
    """What changed from `start` to `after`, most telling kinds first, without anything that
    moved between the two observations of the start (`start`, `again`) or that already holds
    on either of them."""
    moved = volatile(start, again)
    found = _element_effects(start, after)
    part = _url_part(start.url, after.url)
    for url in [part] if part is not None else _fragment_parts(start.url, after.url):
        found.append(Effect("url", f"url:{url}", SuccessCheck(url_contains=url), url))
    shown = lines(start.text) | lines(again.text)
    renumbered = {mask(line) for line in shown}  # a line there before but for its digits
    names = {e.name for e in after.elements}
    for line in sorted(lines(after.text) - shown):
        if mask(line) in renumbered:
            continue
        if TEXT_LEN[0] <= len(line) <= TEXT_LEN[1] and line not in names:
            found.append(Effect("text", f"text:{line}", SuccessCheck(text_present=line), line))
    kept = [
        f
        for f in found
        if mask(f.subject) not in moved
        and f.check.holds_on(start) is False
        and f.check.holds_on(again) is False
    ]
    return sorted(kept, key=lambda f: KINDS.index(f.kind))


# what an icon-only control is called after its icon's word (`the settings icon button`)
ICON_ROLES = {**ICON_NOUNS, "switch": "switch"}
# a click's verb by the role clicked (`press "Send"`; a tab: `switch to the "Inbox" tab`)
VERBS = {"link": "open", "checkbox": "toggle", "switch": "toggle", "button": "press",
         "menuitem": "press"}  # fmt: skip


def _click(act: Act, drawn: Sequence[str], marks: list[str]) -> str | None:
    """A click in words; its accessible name's when that says more (decide.labelled), else
    its drawn name's; None for one of several like elements nothing drawn tells apart. The
    drawn part that tells it apart goes on `marks` (the check must read it)."""
    said = labelled(act.name, act.label, (act.context, *drawn, act.name))
    said = said or labelled("", act.name, drawn)  # named as an act: `Delete "Buy milk"`
    if said is not None:
        if act.equals > 1:
            marks.append(said[1])
        return said[0][0].lower() + said[0][1:]
    if act.equals > 1:
        alone = _click(replace(act, equals=1), (), []) if act.context else None
        if alone is None:
            return None
        marks.append(act.context)
        return f"{alone} in {exact_quote(act.context)}"
    if act.shown:
        name = exact_quote(act.name)
        if act.role == "tab":
            return f"switch to the {name} tab"
    else:  # an icon-only control: its name is the icon's word, never quoted (not written)
        word = icon_word(act.name)
        if not word:
            return None
        name = f"the {word} {ICON_ROLES.get(act.role) or ROLE_NOUNS.get(act.role, 'icon')}"
        if act.role == "tab":
            return f"switch to {name}"
    return f"{VERBS.get(act.role, 'click')} {name}"


def _steps(acts: Sequence[Act], drawn: Sequence[str], marks: list[str]) -> str | None:
    """The demonstration in a person's words ("type "Ann" into "Name", then press "Send"");
    None when a step's element has no name shown (words would name what is not there), or
    is one of several like elements that nothing drawn tells apart. `drawn`: text on the
    screen at the last step (the effect's subject, where it was there before)."""
    said: list[str] = []
    for i, act in enumerate(acts):
        if act.kind == "click":
            words = _click(act, drawn if i == len(acts) - 1 else (), marks) if act.name else None
            if words is None:
                return None
            said.append(words)
        elif act.kind == "type":
            field = f" into {exact_quote(act.name)}" if act.name else ""
            said.append(f"type {exact_quote(act.text)}{field}")
        elif act.kind == "key":
            said.append(f"press {act.text}")
        else:
            return None
    return ", then ".join(said) or None


def _count(effect: Effect) -> str:
    """A control that shows another number, in words its check decides (a control of that
    role and name): `Make the "Cart" button show 1` when its name is words and a number that
    changed at its end, else `Make the "Page 1 of 5" button read "Page 2 of 5"`. From the
    control alone: whichever step made the number, the check reads the control."""
    was, now = COUNTED.fullmatch(effect.was), COUNTED.fullmatch(effect.subject)
    noun = f" {effect.role}" if effect.role in NOUNS else ""
    the = "the " if noun else ""
    if was is not None and now is not None and was["words"] == now["words"]:
        return f"Make {the}{exact_quote(now['words'])}{noun} show {now['n']}"
    return f"Make {the}{exact_quote(effect.was)}{noun} read {exact_quote(effect.subject)}"


def instruction(effect: Effect, acts: Sequence[Act]) -> str | None:
    """An instruction a person would give for `effect`, from its kind and the demonstration's
    element names (all of them on the screen when acted on); None when none can be written
    without naming what is not shown."""
    last = acts[-1] if acts else Act("other")
    typed = [a.text for a in acts if a.kind == "type" and a.text]
    subject = exact_quote(effect.subject)
    named = last.kind == "click" and last.shown  # its drawn name: the effect's words may quote it
    if effect.kind == "state" and named and last.name == effect.subject:
        on = effect.check.element is not None and effect.check.element.state == "checked"
        if effect.role in SWITCHES:
            verb = SWITCHES[effect.role][0 if on else 1]
        else:
            verb = "Check" if on else "Uncheck"
        return f"{verb} {subject}"
    if effect.kind == "count":
        return _count(effect)
    if effect.kind == "value" and effect.check.element is not None:
        return f"Choose {exact_quote(effect.check.element.value or '')} in {subject}"
    if effect.kind == "url" and named and last.role == "link" and last.name and last.equals == 1:
        return pager(last.name) or f"Open the {exact_quote(last.name)} page"
    if effect.kind in ("appeared", "text") and typed and any(t in effect.subject for t in typed):
        added = next(t for t in typed if t in effect.subject)
        where = " to the list" if effect.role in ("listitem", "checkbox", "row") else ""
        if len(acts) <= 3:
            return f"Add {exact_quote(added)}{where}"
    if effect.kind == "disappeared" and last.kind == "click" and effect.subject == last.name:
        return None  # what was pressed went (or greyed out): that says it was pressed, no more
    marks: list[str] = []
    drawn = (effect.subject,) if effect.kind in ("disappeared", "state", "value") else ()
    steps = _steps(acts, drawn, marks)
    if not steps or not decides(effect.subject, steps, marks):
        return None  # the words would not say what the check reads (decide.py)
    return steps[0].upper() + steps[1:]
