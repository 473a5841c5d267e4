"""A page's state as a check reads it, and checks decided on it without a browser.

    browser (a live page's element scan) ─► PageState ─► holds(check, state)
    recorded Observation + its body text  ─► PageState ─► holds(check, state)

A synthesised task's check (issue 43) must mean the same on a live page and on a recorded
observation: the `element` kind is decided here, by one pure function, on both (the live
side scans the page's elements first: browser/session.py), and `url_contains` and
`text_present` read the URL and the body's text in both places alike. A `js` check has no
offline meaning (None: undecided).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from datagen.records.base import Frozen
from datagen.records.observations import Element


class ElementCheck(Frozen):
    """An element the page must (or must not) show: its role and name as a person sees them,
    and what it must be."""

    role: str = Field(description="the element's role (button, link, checkbox, combobox, …)")
    name: str = Field(description="its name as drawn on the screen (exact)")
    state: Literal["present", "absent", "checked", "unchecked"] = Field(
        "present",
        description="present: one such element is shown; absent: none is; checked/unchecked: "
        "one is shown in that state (a checkbox, radio, switch, pressed button)",
    )
    value: str | None = Field(
        None, description="the value it must show (a drop-down's option, a field's text)"
    )


class ElementState(Frozen):
    """What a check reads of one element: role, name, shown text or value, checked state."""

    role: str
    name: str
    text: str = ""
    checked: bool | None = None
    # its box centre hit-tests to it: not covered (a drawer over a grid's buttons)
    hit: bool = True


class PageState(Frozen):
    """What checks read of a page at one moment: URL, body text, visible elements."""

    url: str
    text: str = Field("", description="document.body.innerText")
    elements: tuple[ElementState, ...] = ()

    @classmethod
    def of(cls, url: str, text: str, elements: Iterable[Element]) -> PageState:
        """The state of a page scanned as `elements` (an Observation's, a live scan's)."""
        return cls(
            url=url,
            text=text,
            elements=tuple(
                ElementState(role=e.role, name=e.name, text=e.text, checked=e.checked, hit=e.hit)
                for e in elements
            ),
        )


def element_holds(check: ElementCheck, state: PageState) -> bool:
    """Does the page show (or not show) the element as `check` asks?"""
    same = [e for e in state.elements if (e.role, e.name) == (check.role, check.name)]
    if check.value is not None:
        same = [e for e in same if e.text == check.value]
    if check.state == "absent":
        return not same
    if check.state == "checked":
        return any(e.checked is True for e in same)
    if check.state == "unchecked":
        return any(e.checked is False for e in same)
    return bool(same)
