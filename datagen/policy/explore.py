"""Explore policy: no model. A seeded, coverage-guided walk over interactive elements.

    Observation ─► Explorer.decide() ─► Decision(click/type/key/scroll/back/goto, target)

It prefers elements never acted on, then ones new in the current page state (a page's lone
text field, not a search box, weighs FIELD_WEIGHT times as much in the draw); it clicks at the
centre of their visible box (only elements whose centre hit-tests to them, so the click reaches
them), types plausible values into fields it has just focused, and completes what it typed
before anything else (below). Every action it takes has its DOM target recorded, so the data has
ground truth.

It finishes what it starts: after typing into a field, the natural next actions come first:
Enter in the field (only right after the typing, while the field has the focus), or a
visible completing button beside it (`Add`, `Save`, `Search`, a submit input; in the field's
row to its right, or just below it); Enter first with `submit_probability` or where there is no
such button; one a step, until the field no longer holds the typed text (the app took it), the
page changed address, or each was tried. So an episode never ends on
`nothing new` while a typed value is unsubmitted. A field clicked without typing (the
`type_probability` draw) counts as never acted on once more, so it gets a second draw soon
(and an episode whose only field drew "no" does not stop there).

It does not repeat itself: it never types a value into a field that already holds it (the
field's current value is the element's `text`, read by the element scan: `el.value` of a text
field, whitespace collapsed, its first 120 characters); a field holding other text is selected
(Control+A) before the typing, so the new value replaces it instead of landing at the click's
caret inside it; and it stops with `done` once the page
offers nothing new: every candidate in view was tried on this page state and the last
observation showed no element the episode had not seen (where nothing is in view, after one
scroll or back on that state). Elements below the fold are reached only by that scroll.
A state seen before and reached again by a different path (from another state: deleting a
list's only item brings back the empty list it started as) is a place to go on from, not a
reason to stop: its elements count as untried there once more (issue 44: explore stopped on
the empty list with steps left and never added a second item). Each new way into a state
reopens it once, so the walk still ends: there are finitely many ways in.

It stays on task: links that lead out of the episode's scope are not chosen while anything in
scope is (never when the URL guard would block them), nor is an element whose click led away
before; it never goes back from the start page (that leaves the site for about:blank); and on a
page out of scope, an error or a blank page it goes back, then to the start URL.
"""

from __future__ import annotations

import hashlib
import random

from datagen.config import ExplorePolicyConfig
from datagen.policy.targets import (
    FALLBACK_VALUES,
    VALUES_BY_NAME,
    VALUES_BY_TYPE,
    Typed,
    blocked,
    completers,
    holds,
    leads_out,
)
from datagen.records import (
    Action,
    Back,
    Click,
    Decision,
    Done,
    Element,
    Goto,
    Key,
    Observation,
    Scroll,
    TaskSpec,
    TypeText,
)
from datagen.scope import Scope, page_problem
from datagen.url import path_of

SELECT_ROLES = {"combobox", "listbox"}
# Observations in a row without an element the episode had not seen, before it may stop. The
# observation after an action waits for the page to settle, so one is enough; each more would
# cost a repeated action on every page (and the state key, a digest of every element in view,
# already makes a tried state one with nothing new in it).
QUIET_STEPS = 1
FIELD_WEIGHT = 4  # a page's lone text field, against 1 for any other element (`_pick`)


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
        self.seen: set[tuple[str, str, str]] = set()  # (page path, selector, name) observed
        self.quiet = 0  # observations in a row that showed no element not in `seen`
        self.empty: set[str] = set()  # page states where nothing was in view to act on
        self.typed: Typed | None = None  # a typed value not yet completed
        self.passed: set[tuple[str, str]] = set()  # (state, field) clicked without typing once
        self.typed_into: set[str] = set()  # fields typed into
        self.enter_first = False  # the submit_probability draw for the value being typed
        self.came_from: str | None = None  # the state of the last observation decided on
        self.ways_in: dict[str, set[str]] = {}  # state -> the states it was reached from

    def strayed(self, reason: str, url: str) -> None:
        """The pipeline says: the last action led off the scope (it brought the page back)."""
        self.pending = []
        self.typed = None
        if self.last is not None:
            self.led_away.add(self.last.selector)

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision:
        state = _state_key(obs)
        self._arrive(state)
        decision = self._decide(obs, task, state)
        self.came_from = state
        return decision

    def _arrive(self, state: str) -> None:
        """Note how the walk got to this state; a state seen before, reached from a state it
        was never reached from, is reopened: its elements count as untried in it once more.
        The page looking like an earlier screen is no reason to stop while steps are left (a
        list emptied by its delete button is where the next add starts)."""
        came = self.came_from
        if came is None or came == state:  # the start, or an action that changed nothing
            self.ways_in.setdefault(state, set())
            return
        ways = self.ways_in.get(state)
        if ways is not None and came not in ways:
            self.visited = {(s, sel) for s, sel in self.visited if s != state}
            self.empty.discard(state)
        self.ways_in.setdefault(state, set()).add(came)

    def _decide(self, obs: Observation, task: TaskSpec, state: str) -> Decision:
        scope = self.scope or Scope.for_task("site", task.start_url)
        stray = page_problem(obs.url, scope)
        if stray is not None:
            return self._way_back(scope, stray.reason.value)
        self.returning = False
        self._count_new(obs)
        if self.pending:
            action, target = self.pending.pop(0)
            # The page may have re-rendered since the click: record the element as it is now.
            current = next(
                (e for e in obs.elements if target and e.selector == target.selector), None
            )
            if not (isinstance(action, TypeText) and holds(current, action.text)):
                if isinstance(action, TypeText) and target is not None:
                    self.typed = Typed(target.selector, action.text, obs.url)
                    self.typed_into.add(target.selector)
                return Decision(action=action, target=current, note="follow-up")
            self.pending = []  # it holds the text already (filled in meanwhile): nor submit it
        completing = self._complete(obs, scope)
        if completing is not None:
            return completing
        # only where a click lands on it, and never at a box that moved while it was observed
        reachable = [e for e in obs.elements if e.hit and e.stable and not blocked(e, scope)]
        inside = [
            e for e in reachable if e.selector not in self.led_away and not leads_out(e, scope)
        ]
        choices = inside or reachable  # out-of-scope links only when nothing else is there
        if not choices:
            return self._no_target(obs, scope, state)
        # Coverage first: elements never acted on, then ones new in this page state.
        never = [e for e in choices if e.selector not in self.clicked]
        fresh = [e for e in choices if (state, e.selector) not in self.visited]
        if not fresh and self.quiet >= QUIET_STEPS:
            return self._stop(f"each of the {len(choices)} elements in view tried in this state")
        element = self._pick(never or fresh or choices)
        self.last = element
        self.visited.add((state, element.selector))
        self.clicked.add(element.selector)
        drew_no = self._plan_follow_up(element)
        if drew_no and (state, element.selector) not in self.passed:
            self.passed.add((state, element.selector))  # a second draw soon, not a stop
            self.visited.discard((state, element.selector))
            self.clicked.discard(element.selector)
        return Decision(
            action=_click(element, obs),
            target=element,
            note="new" if never else ("new-state" if fresh else "revisit"),
        )

    def _pick(self, pool: list[Element]) -> Element:
        """A random element of the pool. A page's lone text field (the only one in the pool,
        not typed into yet, not a search box) weighs FIELD_WEIGHT times as much: on a list
        app it is the page's one way to add something, and among a dozen rows' controls it
        was otherwise reached too late in a step budget. A form's several fields keep equal
        weights (the walk's breadth), and a search narrows what is shown, adding nothing."""
        fields = [
            e
            for e in pool
            if e.editable and e.role != "searchbox" and e.selector not in self.typed_into
        ]
        if len(fields) != 1:
            return self.rng.choice(pool)
        weights = [FIELD_WEIGHT if e is fields[0] else 1 for e in pool]
        return self.rng.choices(pool, weights)[0]

    def _plan_follow_up(self, element: Element) -> bool:
        """After focusing a field: type into it (completed by `_complete`); after a select:
        pick. True: a field the `type_probability` draw left untyped (a field clicked without
        typing stays untried in its page state once, so a page whose one field drew "no" gets
        a second draw instead of a stop)."""
        if element.role in SELECT_ROLES:
            self.pending = [(Key(combo="ArrowDown"), element), (Key(combo="Enter"), element)]
        elif element.editable and self.rng.random() >= self.config.type_probability:
            return self.config.type_probability > 0
        elif element.editable:
            text = self._value_for(element)
            if text is None:
                return False  # it holds every value we would type: clicking it was the step
            self.pending = [(TypeText(text=text), element)]
            # drawn here, before the typing (the walk's draws stay in their order); used once
            # the value is typed, by `_complete`
            self.enter_first = self.rng.random() < self.config.submit_probability
            if element.text.strip():  # replace what it holds, as a person would: typed at the
                # click's caret, the text would land inside it ("Pick up the parceQuarterlyl")
                self.pending.insert(0, (Key(combo="Control+A"), element))
        return False

    def _complete(self, obs: Observation, scope: Scope) -> Decision | None:
        """The next way to complete the typed value (Enter in its field, a completing button
        beside it), or None once it is taken (the field no longer holds it, the page moved)
        or each way was tried."""
        typed = self.typed
        if typed is None:
            return None
        current = next((e for e in obs.elements if e.selector == typed.selector), None)
        taken = typed.tried and (
            current is None or obs.url != typed.url or not holds(current, typed.text)
        )
        if taken:
            self.typed = None
            return None
        buttons = [
            e.selector
            for e in completers(obs, current, scope)
            if e.selector not in typed.tried and e.selector not in self.led_away
        ]
        # Enter only right after the typing, while the field still has the focus (a key goes
        # to the focused element: after a button's click it would press the button again)
        enter = [] if typed.tried or current is None else ["Enter"]
        if not enter and not buttons:
            self.typed = None
            return None
        if enter and (not buttons or self.enter_first):
            way = "Enter"
        else:
            way = buttons[0] if len(buttons) == 1 else self.rng.choice(buttons[:2])
        typed.tried.add(way)
        if way == "Enter":
            self.last = current
            return Decision(action=Key(combo="Enter"), target=current, note="complete: Enter")
        button = next(e for e in obs.elements if e.selector == way)
        self.last = button
        self.clicked.add(button.selector)
        return Decision(action=_click(button, obs), target=button, note="complete: button")

    def _value_for(self, element: Element) -> str | None:
        """A plausible value the field does not already hold; None when it holds them all."""
        if element.input_type in VALUES_BY_TYPE:
            values = VALUES_BY_TYPE[element.input_type]
        else:
            words = f"{element.name} {element.placeholder}".lower()
            values = next((v for k, v in VALUES_BY_NAME.items() if k in words), FALLBACK_VALUES)
        new = [v for v in values if not holds(element, v)]
        return self.rng.choice(new) if new else None

    def _count_new(self, obs: Observation) -> None:
        """Note the elements in view; `quiet` counts observations in a row with none new."""
        path = path_of(obs.url)
        seen = {(path, e.selector, e.name) for e in obs.elements}
        self.quiet = 0 if seen - self.seen or not self.seen else self.quiet + 1
        self.seen |= seen

    def _stop(self, why: str) -> Decision:
        """The page offers nothing new: end the episode rather than repeat an old action."""
        self.last = None
        return Decision(action=Done(), note=f"nothing new: {why}")

    def _no_target(self, obs: Observation, scope: Scope, state: str) -> Decision:
        """Nothing clickable in view: scroll down, or go back (never from the start page:
        behind it is about:blank); stop when that was done on this state and showed nothing."""
        if state in self.empty and self.quiet >= QUIET_STEPS:
            return self._stop("nothing to act on in view, after a scroll or back")
        self.empty.add(state)
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


def _click(element: Element, obs: Observation) -> Click:
    """A click at the centre of the element's box, in screenshot pixels."""
    x, y = element.box.centre
    scale = obs.device_scale_factor
    return Click(x=round(x * scale, 1), y=round(y * scale, 1))


def _state_key(obs: Observation) -> str:
    """A page state: path and fragment, plus a digest of what is clickable in view."""
    names = "|".join(sorted(f"{e.selector}:{e.name}" for e in obs.elements))
    digest = hashlib.sha1(names.encode()).hexdigest()[:10]
    return f"{path_of(obs.url)}#{obs.url.partition('#')[2]}@{digest}"
