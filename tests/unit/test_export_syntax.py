"""The exported action syntaxes and their system turns, and Qwen2.5-VL's coordinates: every
action in every syntax is one the sample's system turn declares, the screen size the turn
states is the size of the image the model sees, and the resize is Qwen's own (compared with
transformers' `smart_resize`)."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest

from datagen.errors import ExportError
from datagen.export import parse_options
from datagen.export.actions import action_text
from datagen.export.coords import Frame, smart_resize
from datagen.export.system import system_text
from datagen.export.vocabulary import Call, render
from datagen.records import Back, Click, Done, Goto, Key, Scroll, TypeText, Wait, action_json

ACTIONS = [
    Click(x=640, y=200),
    TypeText(text='it\'s "quoted"\nand more'),
    Key(combo="Control+A"),
    Key(combo="Enter"),
    Scroll(dy=300),
    Scroll(dy=-120),
    Scroll(dx=120),
    Goto(url="https://a.example/"),
    Back(),
    Wait(seconds=1.5),
    Done(answer="42"),
    Done(),
]


def frame(coords: str = "pixels", width: int = 1280, height: int = 800, **given: Any) -> Frame:
    return Frame.of(width, height, parse_options("sft", coords=coords, **given))


def step(action: Any, description: str = "Do it") -> dict[str, Any]:
    return {
        "action_json": action_json(action),
        "image_width": 1280,
        "image_height": 800,
        "action_description": description,
    }


def test_a_1280x800_screenshot_is_1288x812_for_qwen25vl() -> None:
    assert smart_resize(800, 1280) == (812, 1288)  # the published preprocessor's bounds
    assert smart_resize(800, 1280, max_pixels=1280 * 28 * 28) == (784, 1260)
    qwen = frame("qwen25vl")
    assert (qwen.model_width, qwen.model_height) == (1288, 812)
    assert qwen.point(640, 400) == (644, 406)  # absolute pixels of the resized image
    small = frame("qwen25vl", min_pixels=3136, max_pixels=1280 * 28 * 28)
    assert (small.model_width, small.model_height) == (1260, 784)
    assert small.point(1280, 800) == (1260, 784)


def test_the_resize_is_transformers_smart_resize() -> None:
    module = pytest.importorskip("transformers.models.qwen2_vl.image_processing_qwen2_vl")
    sides = [1, 13, 27, 28, 29, 55, 56, 97, 320, 599, 720, 800, 1080, 1279, 1280, 2160, 3841]
    bounds = [
        (3136, 12845056),
        (56 * 56, 28 * 28 * 1280),
        (28 * 28 * 4, 28 * 28 * 64),
        (28 * 28 * 256, 28 * 28 * 1024),
        (100, 5000),
        (1, 10**9),
        (10**6, 2 * 10**6),
    ]
    compared = 0
    for (height, width), (low, high) in itertools.product(itertools.product(sides, sides), bounds):
        try:
            theirs = module.smart_resize(height, width, min_pixels=low, max_pixels=high)
        except ValueError:  # more than 200 times longer than wide: both refuse it
            with pytest.raises(ExportError, match="fix: export it with --coords pixels"):
                smart_resize(height, width, low, high)
            continue
        assert smart_resize(height, width, low, high) == tuple(theirs), (height, width, low, high)
        compared += 1
    assert compared > 1500


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080), (390, 844), (3000, 2000)])
def test_qwen25vl_points_map_back_within_the_stated_rounding(size: tuple[int, int]) -> None:
    f = frame("qwen25vl", *size)
    tol_x, tol_y = f.tolerance()
    worst = 0.0
    for i in range(size[0] * 4):
        x = i / 4 + 0.1
        u, _ = f.point(x, 0)
        assert u == int(u) and 0 <= u <= f.model_width
        worst = max(worst, abs(f.back(u, 0)[0] - x))
    assert worst <= tol_x + 1e-9 and worst >= 0.5 * tol_x
    assert tol_y == 0.5 * size[1] / f.model_height


CASES = [
    (Click(x=640, y=200), "click(start_box='<|box_start|>(640,200)<|box_end|>')"),
    (TypeText(text="it's"), "type(content='it\\'s')"),
    (TypeText(text='a "b"\nc\\d'), "type(content='a \\\"b\\\"\\nc\\\\d')"),
    (Key(combo="Control+A"), "hotkey(key='ctrl a')"),
    (Key(combo="Enter"), "hotkey(key='enter')"),
    (Scroll(dy=300), "scroll(start_box='<|box_start|>(640,400)<|box_end|>', direction='down')"),
    (Scroll(dy=-5), "scroll(start_box='<|box_start|>(640,400)<|box_end|>', direction='up')"),
    (Scroll(dx=-5), "scroll(start_box='<|box_start|>(640,400)<|box_end|>', direction='left')"),
    (Goto(url="https://a.example/"), "goto(url='https://a.example/')"),
    (Back(), "press_back()"),
    (Wait(seconds=2), "wait()"),
    (Done(answer="42"), "finished(content='42')"),
]


@pytest.mark.parametrize(("action", "call"), CASES, ids=lambda c: getattr(c, "type", None))
def test_uitars_writes_a_thought_and_its_call(action: Any, call: str) -> None:
    text = action_text(step(action, "Click the Solve button"), frame(), "uitars", answered=True)
    assert text == f"Thought: Click the Solve button\nAction: {call}"


def test_uitars_done_of_a_failed_episode_calls_the_user() -> None:
    assert action_text(step(Done()), frame(), "uitars", answered=False).endswith("call_user()")


def test_uitars_points_follow_the_convention() -> None:
    click = step(Click(x=640, y=200))
    text = action_text(click, frame("qwen25vl"), "uitars", answered=True)
    assert text.endswith("click(start_box='<|box_start|>(644,203)<|box_end|>')")
    text = action_text(click, frame("norm1000"), "uitars", answered=True)
    assert text.endswith("click(start_box='<|box_start|>(500,250)<|box_end|>')")


def _tools(system: str) -> dict[str, Any]:
    found = re.search(r"<tools>\n(.*)\n</tools>", system)
    assert found, system
    schema: dict[str, Any] = json.loads(found.group(1))
    return schema


@pytest.mark.parametrize(
    ("coords", "screen"),
    [("pixels", "1280x800"), ("qwen25vl", "1288x812"), ("norm1000", "1000x1000")],
)
def test_the_tool_turn_states_the_size_of_the_image_the_model_sees(
    coords: str, screen: str
) -> None:
    system = system_text("tool", frame(coords))
    assert system.startswith("You are a helpful assistant.\n\n# Tools\n")
    assert system.endswith("</tool_call>")
    function = _tools(system)["function"]
    assert function["name"] == "computer_use"
    assert f"The screen's resolution is {screen};" in function["description"]
    for syntax in ("code", "uitars"):
        assert f"The screen's resolution is {screen};" in system_text(syntax, frame(coords))


@pytest.mark.parametrize("coords", ["pixels", "qwen25vl", "norm1000", "norm01"])
def test_every_tool_call_is_one_the_schema_declares(coords: str) -> None:
    f = frame(coords)
    parameters = _tools(system_text("tool", f))["function"]["parameters"]
    properties = parameters["properties"]
    for action, answered in itertools.product(ACTIONS, (True, False)):
        text = action_text(step(action), f, "tool", answered)
        call = json.loads(text.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>"))
        assert call["name"] == "computer_use"
        arguments = call["arguments"]
        verb = arguments.pop("action")
        assert verb in properties["action"]["enum"]
        assert f"* `{verb}`: " in properties["action"]["description"]
        for name, value in arguments.items():
            assert f"`action={verb}`" in properties[name]["description"], (verb, name)
            kind = properties[name]["type"]
            assert isinstance(
                value, {"array": list, "string": str, "integer": int}.get(kind, (int, float))
            )
            assert value in properties[name].get("enum", [value])


@pytest.mark.parametrize("syntax", ["code", "uitars"])
def test_every_call_is_one_the_system_turn_lists(syntax: Any) -> None:
    system = system_text(syntax, frame())
    listed = {line.split("(")[0] for line in system.splitlines() if re.match(r"^[\w.]+\(", line)}
    used = set()
    for action, answered in itertools.product(ACTIONS, (True, False)):
        text = action_text(step(action), frame(), syntax, answered)
        call = text.split("Action: ")[-1]
        used.add(call.split("(")[0])
    assert used == listed and len(listed) >= 9  # each listed verb is used, each used listed


def test_a_call_the_vocabulary_does_not_declare_is_refused() -> None:
    with pytest.raises(ValueError, match="takes"):
        render("tool", Call("left_click", {"point": (1, 2)}), "pixels")
    with pytest.raises(KeyError):
        render("uitars", Call("double_click", {}), "pixels")


def test_the_uitars_turn_has_its_output_format_and_action_space() -> None:
    system = system_text("uitars", frame("qwen25vl"))
    assert "## Output Format\n```\nThought: ...\nAction: ...\n```" in system
    assert "\nclick(start_box='<|box_start|>(x1,y1)<|box_end|>')" in system
    assert "\nscroll(start_box='<|box_start|>(x1,y1)<|box_end|>', direction='down or up" in system
    assert "\nhotkey(key='')" in system and "\nfinished(content='')" in system
    code = system_text("code", frame("norm01"))
    assert "\npyautogui.click(x, y)  # " in code and "\npyautogui.hotkey(*keys)  # " in code
    assert "fractions of the screen's width and height" in code
