"""What explore types and where it completes it, and the links it keeps away from (explore.py).

Explorer ─► a value for a field (`VALUES_BY_TYPE`, `VALUES_BY_NAME`), the buttons that
    complete it (`completers`), whether a field holds it (`holds`), links out of the scope
    or blocked by the URL guard (`leads_out`, `blocked`)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from datagen.records import Element, Observation
from datagen.scope import Scope
from datagen.url import BadUrl, split_url

# Values a person would type, by the field's input type or by words in its name.
VALUES_BY_TYPE = {
    "email": ["alex.morgan@example.com", "sam.lee@example.org"],
    "password": ["Sunflower!2024", "Correct-Horse-42"],
    "tel": ["+1 555 0100", "020 7946 0958"],
    "number": ["3", "12", "42"],
    "url": ["https://example.com"],
    "date": ["2024-05-17"],
    "search": ["lamp", "blue", "report", "coffee"],
}
VALUES_BY_NAME = {
    "name": ["Alex Morgan", "Sam Lee", "Priya Patel"],
    "email": VALUES_BY_TYPE["email"],
    "password": VALUES_BY_TYPE["password"],
    "search": VALUES_BY_TYPE["search"],
    "filter": ["eng", "sales", "an"],
    "city": ["Lisbon", "Toronto"],
    "phone": VALUES_BY_TYPE["tel"],
}
FALLBACK_VALUES = ["Buy groceries", "Call the dentist", "Quarterly report", "hello world"]
# The words of a button that completes what was typed beside it (its name or text).
COMPLETING = re.compile(
    r"^\W*(?:(?:add|save|submit|create|post|send|go|search|find|ok|done|apply|update|enter|"
    r"sign in|log in|login|continue|next|reply|comment|subscribe|confirm)\b|\+)",
    re.IGNORECASE,
)
NEAR_RIGHT_PX = 480  # how far right of a field, on its row, a completing button may be
NEAR_BELOW_PX = 160  # how far below a field's bottom edge (a form's submit row)


@dataclass
class Typed:
    """A value typed into a field and not yet seen taken: what completes it is tried next."""

    selector: str
    text: str
    url: str
    tried: set[str] = field(default_factory=set)  # "Enter", or completing buttons' selectors


def completers(obs: Observation, field: Element | None, scope: Scope) -> list[Element]:
    """Visible buttons that complete what was typed into `field`: named `Add`, `Save`,
    `Search`, … (or a submit input), on the field's row to its right or just below it, nearest
    first; never a link out of scope."""
    if field is None:
        return []
    f = field.box
    found: list[tuple[float, Element]] = []
    for e in obs.elements:
        if e.selector == field.selector or not (e.hit and e.stable) or leads_out(e, scope):
            continue
        words = e.name or e.text
        if e.role != "button" or not (COMPLETING.search(words) or e.input_type == "submit"):
            continue
        b = e.box
        same_row = b.y < f.y + f.height and b.y + b.height > f.y
        if same_row and 0 <= b.x - (f.x + f.width) <= NEAR_RIGHT_PX:
            found.append((b.x - (f.x + f.width), e))
        elif 0 <= b.y - (f.y + f.height) <= NEAR_BELOW_PX and b.x < f.x + f.width:
            found.append((NEAR_RIGHT_PX + b.y - (f.y + f.height), e))
    return [e for _, e in sorted(found, key=lambda pair: pair[0])]


def holds(element: Element | None, text: str) -> bool:
    """Does the field already hold this text (its value as the element scan read it:
    whitespace collapsed, the first 120 characters)? Typing it again would repeat it."""
    if element is None:
        return False
    wanted = " ".join(text.split()).lower()
    return bool(wanted) and wanted in element.text.lower()


def leads_out(element: Element, scope: Scope) -> bool:
    """A link to a page out of the scope (an empty href: not a link, or not known)."""
    href = element.href
    if not href or scheme_of(href) == "javascript":  # runs on this page
        return False
    return not scope.contains(href)  # mailto:, tel: and other schemes lead out too


def blocked(element: Element, scope: Scope) -> bool:
    """A link the URL guard would block (checked without DNS), or one whose href does not parse
    (a page can write `http://[::1` or a port out of range; the browser keeps it as written)."""
    scheme = scheme_of(element.href)
    if scheme is None:
        return True
    if scope.blocked is None or scheme not in ("http", "https"):
        return False
    return scope.blocked(element.href) is not None


def scheme_of(href: str) -> str | None:
    """The href's scheme, lower-cased; None when the href does not parse."""
    try:
        return split_url(href)[0]
    except BadUrl:
        return None
