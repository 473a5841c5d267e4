"""The independent checker's own reading of a synthesised task's words (issue 43): a small
grammar for the instruction templates datagen writes (datagen/annotate/tasks.py, decide.py),
with no datagen import. Pure; bench/taskread.py decides a reading on a live page.

    "Check "Buy milk""                      ─► Reading(state: a checkable "Buy milk", on)
    "Make the "Cart" button show 1"         ─► Reading(count: a button "Cart" showing 1)
    "Choose "Large" in "Size""              ─► Reading(choose: "Size" shows "Large")
    "Go to page 5" / "Go to the next page"  ─► Reading(page: the pager's current page)
    "Open the "Pricing" page"               ─► Reading(open: the URL a link "Pricing" goes to)
    "Add "Buy milk" to the list"            ─► Reading(add: the text shown once more than before)
    "Type "Ann" into "Name", then press "Send""
                                            ─► Reading(steps: the acts, in order)
    "Press the show password icon button"   ─► Reading(steps: a click on a button whose
                                               accessible name is "show password")

Words that describe an end state are read from the page; words that describe acts (press,
open, toggle, type, an accessible name's own act such as `Add "Smart Watch" to cart`) are read
from what the replay clicked and typed, as the checker saw it. Words this grammar does not
know are no reading (`parse` → None): the checker reports them, never counts them as done.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

# the roles of the element each click verb names (datagen's words: "press" a button, "open" a
# link, "toggle" a checkbox, "switch to" a tab, "click" anything else)
PRESSED = frozenset({"button", "menuitem"})
LINKS = frozenset({"link"})
TOGGLES = frozenset({"checkbox", "switch", "menuitemcheckbox"})
TABS = frozenset({"tab"})
# the roles a state's words name: "Check" a checkbox, "Turn on" a switch, "Select" a radio
STATES = {
    "check": (TOGGLES, True),
    "uncheck": (TOGGLES, False),
    "turn on": (frozenset({"switch", "checkbox"}), True),
    "turn off": (frozenset({"switch", "checkbox"}), False),
    "select": (frozenset({"radio", "option", "checkbox", "switch"}), True),
}
# a count's control, named in the words ("the "Cart" button"); none named: any element
NOUNS = frozenset({"button", "link", "tab", "menuitem"})
# the first word of an element's accessible name that is its own act ("Add Smart Watch to
# cart", "Delete "Buy milk"", "Sort by Salary"): a click on that element, said by its name
ACTS = frozenset(
    (
        *("add", "remove", "delete", "sort", "open", "close", "show", "hide", "clear", "edit"),
        *("mark", "increase", "decrease", "filter", "save", "archive", "restore", "expand"),
        *("collapse", "select", "view", "download", "copy", "reset", "undo", "go"),
    )
)
PAGES = ("next", "previous", "first", "last")

STATE = re.compile(r'(?P<verb>check|uncheck|turn on|turn off|select) "(?P<name>.+)"', re.I)
COUNT = re.compile(
    r'make (?:the )?"(?P<name>.+?)"(?: (?P<noun>button|link|tab|menuitem))? '
    r'(?:show (?P<n>\d+)|read "(?P<now>.+)")',
    re.I,
)
CHOOSE = re.compile(r'choose "(?P<value>.*?)" in "(?P<name>.+)"', re.I)
PAGE = re.compile(r"go to (?:page (?P<n>\d+)|the (?P<rel>next|previous|first|last) page)", re.I)
OPEN_PAGE = re.compile(r'open the "(?P<name>.+)" page', re.I)
ADD = re.compile(r'add "(?P<text>.+)"(?P<list> to the list)?', re.I)
TYPE = re.compile(r'type "(?P<text>.*?)"(?: into "(?P<field>.+)")?', re.I)
KEY = re.compile(r"press (?P<combo>[^\"\s]+)", re.I)
CLICK = re.compile(
    r'(?P<verb>press|open|toggle|click|switch to the) "(?P<name>.+)"(?P<tab> tab)?', re.I
)
# an icon-only control, named by its icon's word, unquoted (its accessible name: not drawn)
ICON = re.compile(
    r"(?P<verb>press|open|toggle|click|switch to) the (?P<name>[^\"]+?) "
    r"(?P<noun>icon button|icon link|icon|tab|switch|checkbox|menu item|radio button)",
    re.I,
)
ICON_ROLES = {
    "icon button": frozenset({"button"}),
    "icon link": LINKS,
    "tab": TABS,
    "switch": frozenset({"switch"}),
    "checkbox": frozenset({"checkbox"}),
    "menu item": PRESSED | frozenset({"menuitemcheckbox", "menuitemradio"}),
    "radio button": frozenset({"radio"}),
    "icon": frozenset(),
}
IN = re.compile(r'(?P<act>.+) in "(?P<context>[^"]+)"', re.I)
# datagen quotes a text with a `"` in it in single quotes (`type 'Say "hi"'`), one with both
# kinds in curly ones: read as double quotes (the templates above match around inner ones)
SINGLE = re.compile(r"(?<!\w)'([^']*\"[^']*)'(?!\w)")
CURLY = re.compile("\u201c(.*?)\u201d")
THEN = ", then "


@dataclass(frozen=True)
class Step:
    """One act the words ask for: `click` an element called `name` (drawn or accessible; one
    of `roles`, any where empty; with `context` drawn around it; `label`: `name` is the
    element's accessible name, its own act), `type` `text` (into a field called `name`), or
    `key` `text` (a key combination)."""

    kind: str
    name: str = ""
    roles: frozenset[str] = frozenset()
    context: str = ""
    text: str = ""
    label: bool = False


@dataclass(frozen=True)
class Reading:
    """What the words ask, as the checker reads it: `kind` (state, count, choose, page, open,
    add, steps) with its `subject` (an element's name, a text), `value` (a count's number or
    name, a choice, a page), the `roles` meant, `on` (a state's), `steps` (steps: the acts)."""

    kind: str
    subject: str = ""
    value: str = ""
    roles: frozenset[str] = frozenset()
    on: bool = True
    steps: tuple[Step, ...] = ()

    def describe(self) -> str:
        if self.kind == "steps":
            return " then ".join(f"{s.kind} {s.name or s.text!r}" for s in self.steps)
        return f"{self.kind} {self.subject!r} {self.value!r}".strip()


def unquote(text: str) -> str:
    """An accessible name from the words that quote a drawn part of it (`Add "Smart Watch" to
    cart` → `Add Smart Watch to cart`), quotes of the site's own kept as written elsewhere."""
    return text.replace('"', "")


def _click(phrase: str) -> Step | None:
    """One click in words: `press "X"`, `open "X"`, `toggle "X"`, `switch to the "X" tab`,
    `click "X"`, an icon-only control (`press the show password icon button`), `go to page
    5`, an element's own act (`Add "Smart Watch" to cart`), or one of these `in "context"`."""
    inside = IN.fullmatch(phrase)
    if inside:
        step = _click(inside["act"])
        if step is not None:
            return replace(step, context=inside["context"])
    found = CLICK.fullmatch(phrase)
    if found and (found["verb"].lower() == "switch to the") == bool(found["tab"]):
        roles = {"press": PRESSED, "open": LINKS, "toggle": TOGGLES, "click": frozenset()}
        return Step("click", found["name"], roles.get(found["verb"].lower(), TABS))
    icon = ICON.fullmatch(phrase)
    if icon:  # its accessible name, as the words say it (lower case)
        return Step("click", icon["name"], ICON_ROLES[icon["noun"].lower()], label=True)
    page = PAGE.fullmatch(phrase)
    if page:
        name = f"page {page['n']}" if page["n"] else f"{page['rel']} page"
        return Step("click", name, label=True)
    words = phrase.split()
    # the act's own word may come quoted, as drawn (`"Delete" "Buy milk"`)
    if words and words[0].strip('"').lower() in ACTS and '"' in phrase:
        return Step("click", unquote(phrase), label=True)
    return None


def _step(phrase: str) -> Step | None:
    typed = TYPE.fullmatch(phrase)
    if typed:
        return Step("type", typed["field"] or "", text=typed["text"])
    key = KEY.fullmatch(phrase)
    if key:
        return Step("key", text=key["combo"])
    return _click(phrase)


def _whole(words: str) -> Reading | None:
    """The templates that name an end state, each the whole instruction."""
    if found := STATE.fullmatch(words):
        roles, on = STATES[found["verb"].lower()]
        return Reading("state", found["name"], roles=roles, on=on)
    if found := COUNT.fullmatch(words):
        noun = found["noun"]
        roles = frozenset({noun.lower()}) if noun else frozenset()
        if found["n"] is not None:
            return Reading("count", found["name"], found["n"], roles)
        return Reading("count", found["name"], found["now"], roles, on=False)  # a name to read
    if found := CHOOSE.fullmatch(words):
        return Reading("choose", found["name"], found["value"])
    if found := PAGE.fullmatch(words):
        return Reading("page", value=found["n"] or found["rel"].lower())
    if found := OPEN_PAGE.fullmatch(words):
        return Reading("open", found["name"], roles=LINKS)
    if found := ADD.fullmatch(words):
        return Reading("add", found["text"], "list" if found["list"] else "")
    return None


def parse(words: str) -> Reading | None:
    """The checker's reading of an instruction; None for words it does not know."""
    words = SINGLE.sub(r'"\1"', CURLY.sub(r'"\1"', " ".join(words.split())))
    if not words:
        return None
    whole = _whole(words) if THEN not in words else None  # steps: none of these templates
    if whole is not None:
        return whole
    steps = [_step(p) for p in words.split(THEN)]
    if any(s is None for s in steps):
        return None
    return Reading("steps", steps=tuple(s for s in steps if s is not None))
