"""Explore policy: no model. A seeded, coverage-guided walk over interactive elements.

    Observation ─► Explorer.decide() ─► Decision(click/type/key/scroll/back, target)

It prefers elements never acted on, then ones new in the current page state; it clicks at the centre of
their visible box (only elements whose centre hit-tests to them, so the click reaches
them), types plausible values into fields it has just focused, and sometimes submits with
Enter. Every action it takes has its DOM target recorded, so the data has ground truth.
"""

from __future__ import annotations

import hashlib
import random
from urllib.parse import urlsplit

from datagen.config import ExplorePolicy
from datagen.records import (
    Action,
    Back,
    Click,
    Decision,
    Element,
    Key,
    Observation,
    Scroll,
    TaskSpec,
    TypeText,
)

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

    def __init__(self, config: ExplorePolicy, seed: int) -> None:
        self.config = config
        self.rng = random.Random(seed)
        self.visited: set[tuple[str, str]] = set()
        self.clicked: set[str] = set()
        self.pending: list[tuple[Action, Element | None]] = []

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision:
        if self.pending:
            action, target = self.pending.pop(0)
            # The page may have re-rendered since the click: record the element as it is now.
            current = next(
                (e for e in obs.elements if target and e.selector == target.selector), None
            )
            return Decision(action=action, target=current, note="follow-up")
        state = _state_key(obs)
        reachable = [e for e in obs.elements if e.hit]
        if not reachable:
            return self._no_target(obs)
        # Coverage first: elements never acted on, then ones new in this page state.
        never = [e for e in reachable if e.selector not in self.clicked]
        fresh = [e for e in reachable if (state, e.selector) not in self.visited]
        element = self.rng.choice(never or fresh or reachable)
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

    def _no_target(self, obs: Observation) -> Decision:
        """Nothing clickable in view: scroll down, or go back."""
        if self.rng.random() < 0.7:
            return Decision(action=Scroll(dy=obs.image_height * 0.6), note="no target")
        return Decision(action=Back(), note="no target")


def _state_key(obs: Observation) -> str:
    """A page state: path and fragment, plus a digest of what is clickable in view."""
    parts = urlsplit(obs.url)
    names = "|".join(sorted(f"{e.selector}:{e.name}" for e in obs.elements))
    digest = hashlib.sha1(names.encode()).hexdigest()[:10]
    return f"{parts.path}#{parts.fragment}@{digest}"
