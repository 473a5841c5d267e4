"""Explore policy: no model. A seeded, coverage-guided walk over interactive elements.

    Observation ─► Explorer.decide() ─► Decision(click/type/key/scroll/back/goto, target)

It prefers elements never acted on, then ones new in the current page state; it clicks at the
centre of their visible box (only elements whose centre hit-tests to them, so the click reaches
them), types plausible values into fields it has just focused, and sometimes submits with
Enter. Every action it takes has its DOM target recorded, so the data has ground truth.

It stays on task: links that lead out of the episode's scope are not chosen while anything in
scope is (never when the URL guard would block them), nor is an element whose click led away
before; it never goes back from the start page (that leaves the site for about:blank); and on a
page out of scope, an error or a blank page it goes back, then to the start URL.
"""

from __future__ import annotations

import hashlib
import random
from urllib.parse import urlsplit

from datagen.browser.guard import BadUrl, split_url
from datagen.config import ExplorePolicyConfig
from datagen.records import (
    Action,
    Back,
    Click,
    Decision,
    Element,
    Goto,
    Key,
    Observation,
    Scroll,
    TaskSpec,
    TypeText,
)
from datagen.scope import Scope, page_problem

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
SELECT_ROLES = {"combobox", "listbox"}


class Explorer:
    """Coverage-guided random walk; deterministic for a given seed and page behaviour."""

    name = "explore"

    def __init__(self, config: ExplorePolicyConfig, seed: int, scope: Scope | None = None) -> None:
        self.config = config
        self.rng = random.Random(seed)
        self.scope = scope
        self.visited: set[tuple[str, str]] = set()
        self.clicked: set[str] = set()
        self.pending: list[tuple[Action, Element | None]] = []
        self.led_away: set[str] = set()  # selectors whose action left the scope
        self.last: Element | None = None
        self.returning = False  # the last decision was a way back from a bad page

    def strayed(self, reason: str, url: str) -> None:
        """The pipeline says: the last action led off the scope (it brought the page back)."""
        self.pending = []
        if self.last is not None:
            self.led_away.add(self.last.selector)

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision:
        scope = self.scope or Scope.for_task("site", task.start_url)
        stray = page_problem(obs.url, scope)
        if stray is not None:
            return self._way_back(scope, stray.reason.value)
        self.returning = False
        if self.pending:
            action, target = self.pending.pop(0)
            # The page may have re-rendered since the click: record the element as it is now.
            current = next(
                (e for e in obs.elements if target and e.selector == target.selector), None
            )
            return Decision(action=action, target=current, note="follow-up")
        state = _state_key(obs)
        # only where a click lands on it, and never at a box that moved while it was observed
        reachable = [e for e in obs.elements if e.hit and e.stable and not _blocked(e, scope)]
        inside = [
            e for e in reachable if e.selector not in self.led_away and not _leads_out(e, scope)
        ]
        choices = inside or reachable  # out-of-scope links only when nothing else is there
        if not choices:
            return self._no_target(obs, scope)
        # Coverage first: elements never acted on, then ones new in this page state.
        never = [e for e in choices if e.selector not in self.clicked]
        fresh = [e for e in choices if (state, e.selector) not in self.visited]
        element = self.rng.choice(never or fresh or choices)
        self.last = element
        self.visited.add((state, element.selector))
        self.clicked.add(element.selector)
        x, y = element.box.centre
        scale = obs.device_scale_factor
        click = Click(x=round(x * scale, 1), y=round(y * scale, 1))
        self._plan_follow_up(element)
        return Decision(
            action=click,
            target=element,
            note="new" if never else ("new-state" if fresh else "revisit"),
        )

    def _plan_follow_up(self, element: Element) -> None:
        """After focusing a field: type into it (and maybe submit); after a select: pick."""
        if element.role in SELECT_ROLES:
            self.pending = [(Key(combo="ArrowDown"), element), (Key(combo="Enter"), element)]
        elif element.editable and self.rng.random() < self.config.type_probability:
            self.pending = [(TypeText(text=self._value_for(element)), element)]
            if self.rng.random() < self.config.submit_probability:
                self.pending.append((Key(combo="Enter"), element))

    def _value_for(self, element: Element) -> str:
        if element.input_type in VALUES_BY_TYPE:
            return self.rng.choice(VALUES_BY_TYPE[element.input_type])
        words = f"{element.name} {element.placeholder}".lower()
        for key, values in VALUES_BY_NAME.items():
            if key in words:
                return self.rng.choice(values)
        return self.rng.choice(FALLBACK_VALUES)

    def _no_target(self, obs: Observation, scope: Scope) -> Decision:
        """Nothing clickable in view: scroll down, or go back (never from the start page:
        behind it is about:blank)."""
        self.last = None
        if self.rng.random() < 0.7 or scope.is_start(obs.url):
            return Decision(action=Scroll(dy=obs.image_height * 0.6), note="no target")
        return Decision(action=Back(), note="no target")

    def _way_back(self, scope: Scope, why: str) -> Decision:
        """On a page that is no data (out of scope, an error, blank): back first, then the
        start URL (when back did not help, or there is nothing in scope to go back to)."""
        self.strayed(why, "")
        self.last = None
        first, self.returning = not self.returning, True
        if first and self.visited:
            return Decision(action=Back(), note=f"return: {why}")
        return Decision(action=Goto(url=scope.start), note=f"restart: {why}")


def _leads_out(element: Element, scope: Scope) -> bool:
    """A link to a page out of the scope (an empty href: not a link, or not known)."""
    href = element.href
    if not href or _scheme(href) == "javascript":  # runs on this page
        return False
    return not scope.contains(href)  # mailto:, tel: and other schemes lead out too


def _blocked(element: Element, scope: Scope) -> bool:
    """A link the URL guard would block (checked without DNS), or one whose href does not parse
    (a page can write `http://[::1` or a port out of range; the browser keeps it as written)."""
    scheme = _scheme(element.href)
    if scheme is None:
        return True
    if scope.blocked is None or scheme not in ("http", "https"):
        return False
    return scope.blocked(element.href) is not None


def _scheme(href: str) -> str | None:
    """The href's scheme, lower-cased; None when the href does not parse."""
    try:
        return split_url(href)[0]
    except BadUrl:
        return None


def _state_key(obs: Observation) -> str:
    """A page state: path and fragment, plus a digest of what is clickable in view."""
    parts = urlsplit(obs.url)  # the page's own URL: Chromium's, always parses
    names = "|".join(sorted(f"{e.selector}:{e.name}" for e in obs.elements))
    digest = hashlib.sha1(names.encode()).hexdigest()[:10]
    return f"{parts.path}#{parts.fragment}@{digest}"
