import json

import pytest
from pydantic import TypeAdapter

from datagen.records import (
    Action,
    Back,
    Click,
    Done,
    Goto,
    Key,
    Scroll,
    TypeText,
    Wait,
    action_json,
    action_repr,
)

ACTIONS = [
    Click(x=412, y=230.5),
    TypeText(text='say "hi"'),
    Key(combo="Control+A"),
    Scroll(dx=0, dy=480),
    Goto(url="http://127.0.0.1:8000/a"),
    Back(),
    Wait(seconds=1.5),
    Done(answer="42 results"),
]
REPRS = [
    "click(412, 230.5)",
    'type("say \\"hi\\"")',
    'key("Control+A")',
    "scroll(0, 480)",
    'goto("http://127.0.0.1:8000/a")',
    "back()",
    "wait(1.5)",
    'done("42 results")',
]


@pytest.mark.parametrize(("action", "text"), list(zip(ACTIONS, REPRS, strict=True)), ids=REPRS)
def test_repr_shows_every_argument_in_call_order(action: Action, text: str) -> None:
    assert action_repr(action) == text


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.type)
def test_json_reads_back_to_the_same_action(action: Action) -> None:
    text = action_json(action)
    assert TypeAdapter(Action).validate_json(text) == action
    assert list(json.loads(text)) == sorted(json.loads(text))  # sorted keys: stable text


def test_repr_form() -> None:
    assert action_repr(Click(x=412, y=230)) == "click(412, 230)"
    assert action_repr(TypeText(text="hello")) == 'type("hello")'
    assert action_repr(Back()) == "back()"
