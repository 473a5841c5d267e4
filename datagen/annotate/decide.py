"""Words that decide (issue 43): an instruction must name what its check reads.

    a demonstration step's element (drawn name, accessible name, context) ─► labelled()
        ─► "Add "Smart Watch" to cart", "Sort by "SALARY"", "Go to page 5"
    an effect's kind and subject + the instruction's words ─► decides()

Pure; annotate/tasks.py writes the instruction and asks `decides` before it keeps one. A read
of the first exported tasks found `Press "Add to cart"` checked by "Smart Watch added to cart"
(the words do not say which product: one of twelve like buttons) and the table's `Press "5"`
checked by one row's text (the row is what the check reads, the page is what the words ask
for: sorting first, or paging by "Next", shows another row on page 5). So:

- an element's accessible name may give the words when it says what the drawn name does not
  (`aria-label="Add Smart Watch to cart"` on a drawn "Add to cart"), and only with a part of it
  that is drawn (the product's heading, the button's own text), quoted as drawn; the rest of it
  is a verb and its particles, never a thing the screen does not show;
- a step on one of several like elements ("Add to cart" ×12) needs such a part, its mark, and a
  check that reads the mark ("Smart Watch added to cart", not "Added ✓");
- a check that reads content (a line, an element, a URL part) is kept only when the words
  share a word with it ("Press "Save changes"" for "Settings saved", "Sort by "SALARY"" for
  `&sort=salary&`; not "Go to page 5" for a row "Chloe Mensah").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from datagen.annotate.words import exact_quote

# the first word of an accessible name that is an instruction ("Add Smart Watch to cart")
VERBS = frozenset(
    (
        *("add", "remove", "delete", "sort", "open", "close", "show", "hide", "clear", "edit"),
        *("mark", "increase", "decrease", "filter", "save", "archive", "restore", "expand"),
        *("collapse", "select", "view", "download", "copy", "reset", "undo"),
    )
)
# names of a pager's buttons ("Page 5", "Next page"): a place to go to, said as one
PAGER = re.compile(r"(page \d+|(next|previous|first|last) page)")
# words of the instruction templates (tasks.py), which name no thing on the page
TEMPLATE = frozenset(
    (
        *("press", "type", "into", "then", "open", "click", "toggle", "switch", "the", "tab"),
        *("choose", "check", "uncheck", "turn", "select", "and", "for", "list"),
    )
)
WORD = re.compile(r"[^\W_]+")
SUFFIXES = ("ing", "ed", "es", "s", "e", "d")


def stem(word: str) -> str:
    """`word` lower-cased, one inflection off ("saved", "save" → "sav"; "added" → "add")."""
    word = word.lower()
    for end in SUFFIXES:
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def words_of(text: str) -> set[str]:
    """The stems of the words in `text` that may name a thing: 3+ characters, a letter among
    them (a bare number names nothing: "5" is in many a row)."""
    return {stem(w) for w in WORD.findall(text) if len(w) >= 3 and not w.isdigit()}


def _find(part: str, text: str) -> int:
    """Where `part` stands in `text` as whole words, any case (-1: nowhere)."""
    found = re.search(rf"(?<!\w){re.escape(part)}(?!\w)", text, re.IGNORECASE)
    return found.start() if found else -1


def pager(name: str) -> str | None:
    """A pager's button or link in words ("Page 5" → "Go to page 5", "Next page" → "Go to the
    next page"); None for any other name."""
    lower = name.lower()
    if not PAGER.fullmatch(lower):
        return None
    return f"Go to {'' if lower[-1].isdigit() else 'the '}{lower}"


def labelled(name: str, label: str, drawn: Sequence[str]) -> tuple[str, str] | None:
    """Words from an element's accessible name `label` where it says more than its drawn
    `name` ("Add Smart Watch to cart" → `Add "Smart Watch" to cart`), and the drawn part they
    quote (one of `drawn`, first found first); None when the label is no instruction or names
    nothing drawn. A state after a comma is not the act ("Sort by Salary, currently
    ascending")."""
    said = label.split(", ")[0].strip()
    if not said or said.lower() == name.lower():
        return None
    lower = said.lower()
    place = pager(said)
    if place is not None:  # a place, not a thing: its number is its drawn name
        return place, name
    verb = lower.split()[0]
    if verb not in VERBS:
        return None
    for part in (p for p in drawn if p):
        at = _find(part, said[len(verb) :])  # after the verb: a drawn "Add" names no thing
        if at < 0:
            continue
        at += len(verb)
        end = at + len(part)
        if said[at - 1 : at] == '"' and said[end : end + 1] == '"':
            return said, part  # quoted by the site already (`Delete "Buy milk"`)
        return f"{said[:at]}{exact_quote(part)}{said[end:]}", part
    return None


def decides(subject: str, words: str, marks: Sequence[str]) -> bool:
    """Do `words` name what a check on `subject` (an effect's line, element name, URL part)
    reads? Every mark (the drawn
    part that said which of several like elements a step acted on) must be read by it, and the
    check's subject must share a word with the instruction's own (not its template's). For
    the words tasks.instruction writes from the effect itself (`Check "X"`, `Choose "V" in
    "X"`, `Open the "X" page`) this is not asked: they name the subject."""
    read = words_of(subject)
    if any(not words_of(mark) <= read for mark in marks):
        return False
    return bool(read & (words_of(words) - TEMPLATE))
