import pytest

from datagen.browser.actions import action_repr, parse_action
from datagen.records import Back, Click, Done, Goto, Key, Scroll, TypeText, Wait

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


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.type)
def test_repr_parses_back_to_the_same_action(action) -> None:  # type: ignore[no-untyped-def]
    assert parse_action(action_repr(action)) == action


def test_repr_form() -> None:
    assert action_repr(Click(x=412, y=230)) == "click(412, 230)"
    assert action_repr(TypeText(text="hello")) == 'type("hello")'
    assert action_repr(Back()) == "back()"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("click(1", "not an action call"),
        ("fly(1, 2)", "unknown action 'fly'"),
        ("click(1, 2, 3)", "takes 2 arguments"),
        ("click(x, 2)", "must be literals"),
        ('click("a", 2)', "bad arguments for click"),
        ("os.system('x')", "not an action call"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_action(text)
