"""Action descriptions (datagen/annotate/describe.py) per action type, and the rules for names,
ordinals, quoting and the model's own words, on hand-made Element/Observation records."""

from __future__ import annotations

import asyncio
import io

import pytest
from PIL import Image

from datagen.annotate.describe import QUOTE_CHARS, describe, model_description, quote
from datagen.annotate.words import ordinal_word
from datagen.config import VlmPolicyConfig
from datagen.policy.vlm import VlmPolicy
from datagen.records import (
    Action,
    Back,
    Click,
    Decision,
    Done,
    Element,
    Goto,
    Key,
    ModelTrace,
    Observation,
    Scroll,
    TaskSpec,
    TypeText,
    Wait,
)
from tests.fakes import FakeEngine
from tests.helpers import button, observation


def el(index: int = 0, x: float = 10, y: float = 20, **kw: object) -> Element:
    return Element.model_validate({**button(index, x, y).model_dump(), **kw})


def obs(*elements: Element, scale: float = 1.0) -> Observation:
    return observation(elements, scale=scale)


def said(action: Action, target: Element | None = None, *others: Element) -> str:
    """The description of `action` on `target`, in an observation of `target` and `others`."""
    elements = ((target,) if target else ()) + others
    return describe(obs(*elements), Decision(action=action, target=target))


def click_on(target: Element) -> Click:
    x, y = target.box.centre
    return Click(x=x, y=y)


@pytest.mark.parametrize(
    ("element", "words"),
    [
        (el(name="Add to cart"), 'Click the "Add to cart" button'),
        (el(tag="a", role="link", name="Docs"), 'Click the "Docs" link'),
        (el(tag="input", role="textbox", name="Email", editable=True), 'Click the "Email" field'),
        (el(role="tab", name="Settings"), 'Click the "Settings" tab'),
        (el(tag="select", role="combobox", name="Sort by"), 'Click the "Sort by" drop-down'),
        (el(role="menuitem", name="Rename"), 'Click the "Rename" menu item'),
        (el(role="checkbox", name="I accept the terms", checked=False), None),
        (
            el(role="checkbox", name="Remember me", checked=True),
            'Uncheck the "Remember me" checkbox',
        ),
        (el(role="checkbox", name="Chip", checked=None), 'Click the "Chip" checkbox'),
        (el(role="switch", name="Dark mode", checked=False), 'Turn on the "Dark mode" toggle'),
        (el(role="switch", name="Dark mode", checked=True), 'Turn off the "Dark mode" toggle'),
        (el(role="radio", name="Yearly", checked=False), 'Select the "Yearly" radio button'),
        (el(role="option", name="Large"), 'Select the "Large" option'),
        (el(tag="li", role="generic", name="Walk the dog"), 'Click the "Walk the dog" list item'),
        (el(tag="circle", role="generic", name="blue", name_source="appearance"), None),
    ],
)
def test_click_on_a_target(element: Element, words: str | None) -> None:
    expected = {
        "I accept the terms": 'Check the "I accept the terms" checkbox',
        "blue": "Click the blue graphic",
    }
    assert said(click_on(element), element) == (words or expected[element.name])


def test_names_fall_back_to_placeholder_then_text() -> None:
    field = el(tag="input", role="textbox", placeholder="What needs to be done?", editable=True)
    assert said(TypeText(text="Buy milk"), field) == (
        'Type "Buy milk" into the "What needs to be done?" field'
    )
    assert said(click_on(el(text="Open"))) == "Click at (60, 35)"  # no target: the point
    assert said(click_on(el(text="Open")), el(text="Open")) == 'Click the "Open" button'
    # a field's text is its value, not a name: a filled field is told by what it holds
    filled = el(tag="input", role="textbox", text="hello", editable=True, x=100, y=200)
    assert said(TypeText(text="x"), filled) == 'Type "x" into the field containing "hello"'


def test_unnamed_targets_are_named_by_role_never_by_coordinates() -> None:
    icon = el(x=100, y=50)
    decision = Decision(action=Click(x=301, y=131), target=icon)
    assert describe(obs(icon, scale=2.0), decision) == "Click the button"
    assert describe(obs(icon, scale=2.0), Decision(action=Key(combo="Enter"), target=icon)) == (
        "Press Enter in the button"
    )
    other = el(1, x=300, y=50)
    assert (
        describe(obs(icon, other), decision) == "Click the first of two buttons"
    )  # among which: both
    box = el(2, tag="input", role="checkbox", checked=False, x=10, y=200)
    check = Decision(action=Click(x=12, y=202), target=box)
    assert describe(obs(box), check) == "Check the checkbox"


def test_ordinal_only_when_ambiguous_in_reading_order() -> None:
    # reading order: rows (tops within 8 px), then left to right; DOM order does not count
    right = el(0, x=400, y=100, name="Submit")
    left = el(1, x=40, y=104, name="submit")  # same words, ignoring case
    below = el(2, x=10, y=300, name="Submit")
    link = el(3, x=10, y=10, tag="a", role="link", name="Submit")  # another noun
    other = el(4, x=10, y=400, name="Cancel")
    scene = obs(right, left, below, link, other)  # in DOM order

    def on(target: Element, seen: Observation = scene) -> str:
        return describe(seen, Decision(action=click_on(target), target=target))

    assert on(left) == 'Click the first "submit" button'
    assert on(right) == 'Click the second "Submit" button'
    assert on(below) == 'Click the third "Submit" button'
    assert on(link) == 'Click the "Submit" link'
    assert on(other) == 'Click the "Cancel" button'
    assert on(right, obs(right, link, other)) == 'Click the "Submit" button'


def test_ordinal_words() -> None:
    expected = {1: "first", 2: "second", 10: "tenth", 11: "11th", 12: "12th", 13: "13th"}
    expected |= {21: "21st", 22: "22nd", 23: "23rd", 101: "101st", 111: "111th"}
    assert {n: ordinal_word(n) for n in expected} == expected


def test_keys_and_typing() -> None:
    assert said(Key(combo="Enter")) == "Press Enter"
    assert said(Key(combo="Control+A")) == "Press Control+A"
    select = el(tag="select", role="combobox", name="Country")
    assert said(Key(combo="ArrowDown"), select) == 'Press ArrowDown in the "Country" drop-down'
    assert said(TypeText(text="Buy milk")) == 'Type "Buy milk"'
    search = el(tag="input", role="searchbox", name="Search", editable=True)
    assert said(TypeText(text="lamp"), search) == 'Type "lamp" into the "Search" search field'


@pytest.mark.parametrize(
    ("action", "words"),
    [
        (Scroll(dy=480), "Scroll down"),
        (Scroll(dy=-480), "Scroll up"),
        (Scroll(dx=600), "Scroll right"),
        (Scroll(dx=-600), "Scroll left"),
        (Scroll(dx=100, dy=200), "Scroll down and right"),
        (Scroll(), "Scroll"),
        (Back(), "Go back"),
        (Goto(url="https://example.com/a?b=1"), "Go to https://example.com/a?b=1"),
        (Wait(seconds=1.5), "Wait 1.5 seconds"),
        (Wait(seconds=1), "Wait 1 second"),
        (Done(), "Finish"),
        (Done(answer="  "), "Finish"),
        (Done(answer="42"), 'Finish with the answer "42"'),
        (Click(x=412.4, y=229.6), "Click at (412, 230)"),
    ],
)
def test_actions_without_a_target(action: Action, words: str) -> None:
    assert said(action) == words


def test_quoting_and_truncation() -> None:
    assert quote('Say  "hi"\n now') == "\"Say 'hi' now\""
    long = "word " * 40
    cut = quote(long)
    assert cut.endswith('…"') and len(cut) <= QUOTE_CHARS + 2 and " …" not in cut
    assert cut[1:-2] == long[: len(cut) - 3]  # cut at a word boundary
    unbroken = "x" * 200
    assert quote(unbroken) == '"' + "x" * (QUOTE_CHARS - 1) + '…"'
    url = "https://example.com/" + "a" * 300
    went = said(Goto(url=url))
    assert went.startswith("Go to https://example.com/") and went.endswith("…")
    assert len(went) == len("Go to ") + 200


def test_model_words_are_the_models_own() -> None:
    trace = ModelTrace(
        model="m",
        standin=True,
        prompt_profile="p",
        prompt_version="1",
        roles="policy",
        raw_output="{}",
        action_description="the blue Add to cart button",
    )
    assert model_description(Decision(action=Click(x=1, y=1), trace=trace)) == (
        "the blue Add to cart button"
    )
    silent = trace.model_copy(update={"action_description": None})
    assert model_description(Decision(action=Key(combo="Enter"), trace=silent)) is None
    assert model_description(Decision(action=Click(x=1, y=1))) is None  # explore, scripted


def test_a_vlm_click_keeps_both_descriptions(fake_engine: FakeEngine) -> None:
    """The vlm policy's click: the DOM-derived words for the element its point hit, and the
    model's own words for what it meant, verbatim; an answer without words has none."""
    buy = el(0, x=600, y=180, name="Buy")
    png = io.BytesIO()
    Image.new("RGB", (800, 600), "white").save(png, "PNG")
    seen = obs(buy).model_copy(update={"screenshot": png.getvalue(), "image_format": "png"})
    task = TaskSpec(id="t", start_url="http://127.0.0.1/", instruction="Buy it")
    config = VlmPolicyConfig(type="vlm")
    policy = VlmPolicy(config, fake_engine.engines({"policy": config.policy}, served="m"))
    click = {"type": "click", "element": "the green Buy button, top right", "x": 812, "y": 325}
    for action in (click, {"type": "key", "key": "Enter"}):
        fake_engine.script("policy", {"thought": "t", "note": "", "action": action})
    clicked = asyncio.run(policy.decide(seen, task))
    assert clicked.target == buy
    assert describe(seen, clicked) == 'Click the "Buy" button'
    assert model_description(clicked) == "the green Buy button, top right"
    pressed = asyncio.run(policy.decide(seen, task))
    assert (describe(seen, pressed), model_description(pressed)) == ("Press Enter", None)
