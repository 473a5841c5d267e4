"""The independent checker's grammar of task words (bench/taskwords.py, issue 43) reads every
instruction datagen's synthesis writes: the words are generated here by datagen's own
`annotate.tasks.instruction` over every effect kind, role and kind of demonstration, so that a
new template without a reading fails this test. And the acts a replay did are matched to the
words' steps as the checker means (bench/taskread.py's pure part).
"""

from __future__ import annotations

import functools
import itertools

import pytest

from bench.taskread import Seen, did, matches
from bench.taskwords import Reading, Step, parse
from datagen.annotate.tasks import KINDS, Act, Effect, instruction
from datagen.records import ElementCheck, SuccessCheck

# the roles that change the words: a switch's and a radio's state, a count's noun, an item added
ROLES = ("checkbox", "switch", "radio", "button", "link", "combobox", "listitem", "generic")
# subjects that share words with the demonstrations below (datagen keeps such words only)
SUBJECTS: tuple[str, ...] = ("Buy milk", "Smart Watch added to cart", "Chloe Mensah")
SUBJECTS += ("Save changes", "salary", "Notifications", "Pricing", "Cart 1", "Page 2 of 5")
SUBJECTS += ('Say "hello"', 'Bob\'s "big" day')  # quoted in single quotes, in curly ones
WAS = {"Cart 1": "Cart 0", "Page 2 of 5": "Page 1 of 5"}
DEMOS: tuple[tuple[Act, ...], ...] = (
    (Act("click", "link", "Pricing"),),
    (Act("click", "link", "Page 5"),),
    (Act("click", "link", "Next page"),),
    (Act("click", "link", "Pricing", equals=2, context="Plans"),),
    (Act("click", "button", "Save changes"),),
    (Act("click", "menuitem", "Save changes"),),
    (Act("click", "tab", "Notifications"),),
    (Act("click", "checkbox", "Buy milk"),),
    (Act("click", "switch", "Buy milk"),),
    (Act("click", "radio", "Buy milk"),),
    (Act("click", "generic", "Buy milk"),),
    (Act("type", "textbox", "New todo", text="Buy milk"), Act("key", text="Enter")),
    (Act("type", "textbox", "", text="Buy milk"), Act("click", "button", "Add")),
    (Act("type", "textbox", "Name", text="Chloe Mensah"), Act("click", "button", "Save changes")),
    (Act("type", "textbox", "Message", text='Say "hello"'), Act("click", "button", "Send")),
    (Act("type", "textbox", "Message", text='Bob\'s "big" day'), Act("key", text="Enter")),
    (
        Act("click", "button", "Add to cart", "", "Add Smart Watch to cart", "Smart Watch", 12),
        Act("click", "button", "Cart 1"),
    ),
    (Act("click", "button", "5", equals=3, context="Chloe Mensah"),),
    (Act("click", "button", "Delete", label='Delete "Buy milk"'),),
    (Act("click", "button", "SALARY", label="Sort by Salary, currently ascending"),),
    (Act("click", "button", "5", label="Page 5"),),
    (Act("click", "button", "Next", label="Next page"),),
    (Act("scroll"),),
    # icon-only controls: their names are their aria-labels, never drawn
    (Act("click", "button", "Save changes", shown=False),),
    (Act("click", "link", "Pricing", shown=False),),
    (Act("click", "tab", "Notifications", shown=False),),
    (Act("click", "switch", "Buy milk", shown=False),),
    (Act("click", "generic", "Buy milk", shown=False),),
    (Act("click", "button", "Remove", equals=3, context="Chloe Mensah", shown=False),),
)


def effects() -> list[Effect]:
    """An effect of every kind on every role and subject, with each state and a value."""
    found = []
    for kind, role, subject in itertools.product(KINDS, ROLES, SUBJECTS):
        if kind == "count" and subject not in WAS:
            continue  # a count is a name that changed in its digits
        checks = [SuccessCheck(element=ElementCheck(role=role, name=subject))]
        if kind == "state":
            checks = [
                SuccessCheck(element=ElementCheck(role=role, name=subject, state=s))
                for s in ("checked", "unchecked")
            ]
        elif kind == "value":
            checks = [SuccessCheck(element=ElementCheck(role=role, name=subject, value="Large"))]
        elif kind == "url":
            checks = [SuccessCheck(url_contains="/pricing")]
        elif kind == "text":
            checks = [SuccessCheck(text_present=subject)]
        for check in checks:
            found.append(
                Effect(kind, f"{kind}:{subject}", check, subject, role, WAS.get(subject, ""))
            )
    return found


@functools.cache
def written() -> dict[str, Reading | None]:
    """Every instruction datagen writes for the effects and demonstrations above, read."""
    words = {
        said
        for effect, demo in itertools.product(effects(), DEMOS)
        if (said := instruction(effect, demo)) is not None
    }
    return {w: parse(w) for w in sorted(words)}


def test_every_instruction_datagen_writes_has_a_reading() -> None:
    readings = written()
    assert len(readings) > 40, readings
    unread = [w for w, r in readings.items() if r is None]
    assert not unread, f"words bench/taskwords.py cannot read (add their template): {unread}"


def test_the_instructions_cover_every_kind_of_reading() -> None:
    """The grid above reaches every template (else the first test proves less than it says)."""
    readings = [r for r in written().values() if r is not None]
    assert {r.kind for r in readings} == {
        "state",
        "count",
        "choose",
        "page",
        "open",
        "add",
        "steps",
    }
    steps = [s for r in readings for s in r.steps]
    assert {s.kind for s in steps} == {"click", "type", "key"}
    assert any(s.label for s in steps) and any(s.context for s in steps)
    clicked = {s.roles for s in steps if s.kind == "click"}
    assert len(clicked) >= 4, clicked  # press, open, toggle, switch to … tab, click


@pytest.mark.parametrize(
    ("words", "reading"),
    [
        ('Check "Buy milk"', ("state", "Buy milk", "", True)),
        ('Uncheck "Buy milk"', ("state", "Buy milk", "", False)),
        ('Turn off "Dark mode"', ("state", "Dark mode", "", False)),
        ('Make the "Cart" button show 1', ("count", "Cart", "1", True)),
        ('Make "Page 1 of 5" read "Page 2 of 5"', ("count", "Page 1 of 5", "Page 2 of 5", False)),
        (
            'Choose "Price: Low to High" in "Sort by"',
            ("choose", "Sort by", "Price: Low to High", True),
        ),
        ("Go to page 5", ("page", "", "5", True)),
        ("Go to the next page", ("page", "", "next", True)),
        ('Open the "Pricing" page', ("open", "Pricing", "", True)),
        ('Add "Buy milk" to the list', ("add", "Buy milk", "list", True)),
        ('Add "Buy milk"', ("add", "Buy milk", "", True)),
    ],
)
def test_words_of_an_end_state(words: str, reading: tuple[str, str, str, bool]) -> None:
    found = parse(words)
    assert found is not None
    assert (found.kind, found.subject, found.value, found.on) == reading


def test_words_of_acts_are_steps_in_order() -> None:
    found = parse('Add "Smart Watch" to cart, then press "Cart 1"')
    assert found is not None and found.kind == "steps"
    assert found.steps == (
        Step("click", "Add Smart Watch to cart", label=True),
        Step("click", "Cart 1", frozenset({"button", "menuitem"})),
    )
    typed = parse('Type "Ann" into "Name", then press Enter')
    assert typed is not None
    assert typed.steps == (Step("type", "Name", text="Ann"), Step("key", text="Enter"))
    inside = parse('Press "5" in "Chloe Mensah"')
    assert inside is not None and inside.steps[0].context == "Chloe Mensah"
    assert parse('Press "Delete "Buy milk""') == Reading(
        "steps", steps=(Step("click", 'Delete "Buy milk"', frozenset({"button", "menuitem"})),)
    )


@pytest.mark.parametrize("words", ["", "Frobnicate the widget", 'Make it "pop"', "Press"])
def test_words_it_does_not_know_are_no_reading(words: str) -> None:
    assert parse(words) is None


def test_acts_done_match_the_steps_in_order_and_by_role_name_and_context() -> None:
    add = Seen("click", "button", ["Add to cart"], "Add Smart Watch to cart", ["Smart Watch $99"])
    other = Seen("click", "button", ["Add to cart"], "Add Yoga Mat to cart", ["Yoga Mat $25"])
    cart = Seen("click", "button", ["Cart 1"])
    steps = parse('Add "Smart Watch" to cart, then press "Cart 1"')
    assert steps is not None
    assert did(steps.steps, [add, Seen("key", text="Enter"), cart])
    assert not did(steps.steps, [cart, add])  # out of order
    assert not did(steps.steps, [other, cart])  # another product
    row = parse('Press "5" in "Chloe Mensah"')
    assert row is not None
    five = Seen("click", "button", ["5"], context=["5", "Chloe Mensah Design 5"])
    assert matches(row.steps[0], five)
    assert not matches(row.steps[0], Seen("click", "button", ["5"], context=["Grace Quinn 5"]))
    assert not matches(row.steps[0], Seen("click", "link", ["5"], context=["Chloe Mensah"]))
    typed = parse('Type "Ann" into "Name"')
    assert typed is not None
    assert did(typed.steps, [Seen("type", "textbox", ["Name"], text="Ann")])
    assert not did(typed.steps, [Seen("type", "textbox", ["Email"], text="Ann")])
    eye = parse("Press the show password icon button")  # an icon-only control's aria-label
    assert eye is not None
    assert matches(eye.steps[0], Seen("click", "button", [], "Show password"))
    assert not matches(eye.steps[0], Seen("click", "button", [], "Hide password"))
    assert not matches(eye.steps[0], Seen("click", "link", [], "Show password"))
