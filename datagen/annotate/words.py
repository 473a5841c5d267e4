"""The words expressions and descriptions are made of: ordinals, counts, plurals and the one
quoting rule (grounding.py, describe.py)."""

from __future__ import annotations

import re

ORDINALS: tuple[str, ...] = (
    *("first", "second", "third", "fourth", "fifth"),
    *("sixth", "seventh", "eighth", "ninth", "tenth"),
)
QUOTE_CHARS = 80  # longer names and texts are cut (at a word boundary) and end in "…"


def ordinal_word(n: int) -> str:
    """1 → first … 10 → tenth, then 11th, 21st, 22nd, 23rd, 101st."""
    if n <= len(ORDINALS):
        return ORDINALS[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def quote(text: str) -> str:
    """`"Buy milk"`: the one quoting rule of expressions and descriptions. Whitespace
    collapsed, a `"` inside written `'`, at most QUOTE_CHARS characters: longer text is cut at
    the last word boundary that keeps at least half of it (else mid-word) and ends in `…`."""
    flat = re.sub(r"\s+", " ", text).strip().replace('"', "'")
    if len(flat) > QUOTE_CHARS:
        cut = flat[: QUOTE_CHARS - 1]
        space = cut.rfind(" ")
        cut = cut[:space] if space >= QUOTE_CHARS // 2 else cut
        flat = cut.rstrip(" ,;:-–") + "…"
    return f'"{flat}"'


def exact_quote(text: str) -> str:
    """`text` quoted as it is, for a task's instruction (tasks.py, decide.py): what it says to
    type must be what the demonstration types, so nothing in it is rewritten or cut. Double
    quotes; single ones around a text with a `"` in it (`type 'Say "hi"'`), curly ones around
    a text with both."""
    if '"' not in text:
        return f'"{text}"'
    return f"'{text}'" if "'" not in text else f"\u201c{text}\u201d"


# exact_quote's three ways, read back: curly quotes, single ones around a text with a `"`
# in it, double ones (what the first two took is blanked before the next is looked for)
QUOTED = (
    re.compile("\u201c(.*?)\u201d"),
    re.compile(r"(?<!\w)'([^']*\"[^']*)'(?!\w)"),
    re.compile(r'"([^"]+)"'),
)


def quoted_texts(words: str) -> list[str]:
    """The texts `words` quote as exact_quote does, in the order they stand."""
    found: list[tuple[int, str]] = []

    def take(match: re.Match[str]) -> str:
        found.append((match.start(), match.group(1)))
        return " " * len(match.group(0))

    for pattern in QUOTED:
        words = pattern.sub(take, words)
    return [text for _, text in sorted(found)]


NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def plural(noun: str) -> str:
    """checkbox → checkboxes, text field → text fields."""
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")
