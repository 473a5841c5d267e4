"""The export's pieces without a run: coordinate conventions, action syntax, key names, option
checks, and the defaults filled in for outputs written before schema 1.2."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from datagen.errors import ExportError
from datagen.export import export_format, parse_options
from datagen.export.actions import action_text, describe, pyautogui_keys
from datagen.export.coords import Frame, from_point, number, to_box, to_point, tolerance_px
from datagen.export.failures import failure_category
from datagen.export.source import ShardData, _fill
from datagen.records import Back, Click, Done, Goto, Key, Scroll, TypeText, Wait, action_json
from tests.helpers import shard_stats


@pytest.mark.parametrize("coords", ["pixels", "norm1000", "norm01"])
@pytest.mark.parametrize("size", [(800, 600), (1280, 800), (1536, 960)])
def test_every_pixel_maps_back_within_the_stated_rounding(
    coords: Any, size: tuple[int, int]
) -> None:
    w, h = size
    worst = 0.0
    for i in range(w * 10):
        x = i / 10 + 0.05  # tenth-of-a-pixel steps over the whole side
        u, _ = to_point(x, 0, w, h, coords)
        back, _ = from_point(u, 0, w, h, coords)
        worst = max(worst, abs(back - x))
    assert worst <= tolerance_px(w, coords) + 1e-9
    # the stated bound is not loose: some point comes within half of it
    assert worst >= 0.5 * tolerance_px(w, coords)
    if coords == "norm1000" and w <= 1000:
        assert tolerance_px(w, coords) <= 0.5  # within half a pixel up to 1000 px


def test_values_of_each_convention() -> None:
    assert to_point(640, 400, 1280, 800, "pixels") == (640, 400)
    assert to_point(640, 400, 1280, 800, "norm1000") == (500, 500)
    assert to_point(640, 400, 1280, 800, "norm01") == (0.5, 0.5)
    assert to_box((0, 0, 1280, 800), 1280, 800, "norm1000") == (0, 0, 1000, 1000)
    assert to_point(100.5, 0.49, 1280, 800, "pixels") == (101, 0)  # half up
    assert [number(412.0, "pixels"), number(0.25, "norm01"), number(1.0, "norm01")] == [
        "412",
        "0.25",
        "1",
    ]


def test_playwright_keys_become_pyautogui_names() -> None:
    assert pyautogui_keys("Control+A") == ["ctrl", "a"]
    assert pyautogui_keys("Enter") == ["enter"]
    assert pyautogui_keys("Shift+ArrowDown") == ["shift", "down"]
    assert pyautogui_keys("Control++") == ["ctrl", "+"]
    assert pyautogui_keys("Escape") == ["esc"] and pyautogui_keys("Meta+c") == ["win", "c"]


def _step(action: Any) -> dict[str, Any]:
    return {"action_json": action_json(action), "image_width": 1280, "image_height": 800}


def _frame(coords: str) -> Frame:
    return Frame.of(1280, 800, parse_options("sft", coords=coords))


CASES = [
    (
        Click(x=640, y=200),
        '"left_click", "coordinate": [500, 250]',
        "pyautogui.click(x=500, y=250)",
    ),
    (TypeText(text="it's"), '"type", "text": "it\'s"', 'pyautogui.write(message="it\'s")'),
    (Key(combo="Control+A"), '"key", "keys": ["ctrl", "a"]', "pyautogui.hotkey('ctrl', 'a')"),
    (Key(combo="Enter"), '"key", "keys": ["enter"]', "pyautogui.press('enter')"),
    (Scroll(dy=300), '"scroll", "pixels": -300', "pyautogui.scroll(-300)"),
    (Scroll(dx=120), '"hscroll", "pixels": 120', "pyautogui.hscroll(120)"),
    (
        Goto(url="https://a.example/"),
        '"goto", "url": "https://a.example/"',
        "browser.goto(url='https://a.example/')",
    ),
    (Back(), '"back"', "browser.back()"),
    (Wait(seconds=1.5), '"wait", "time": 1.5', "pyautogui.sleep(1.5)"),
    (
        Done(answer="42"),
        '"terminate", "status": "success", "answer": "42"',
        "computer.terminate(status='success', answer='42')",
    ),
]


@pytest.mark.parametrize(("action", "tool", "code"), CASES, ids=lambda c: getattr(c, "type", None))
def test_each_action_in_both_syntaxes(action: Any, tool: str, code: str) -> None:
    call = action_text(_step(action), _frame("norm1000"), "tool", answered=True)
    assert call.startswith("<tool_call>\n") and call.endswith("\n</tool_call>")
    body = json.loads(call.split("\n")[1])
    assert body["name"] == "computer_use"
    assert json.dumps(body["arguments"], ensure_ascii=False) == '{"action": ' + tool + "}"
    assert action_text(_step(action), _frame("norm1000"), "code", answered=True) == code


def test_a_failed_episode_s_done_terminates_with_failure() -> None:
    assert "failure" in action_text(_step(Done()), _frame("pixels"), "code", answered=False)


@pytest.mark.parametrize(
    ("fmt", "given", "message"),
    [
        ("csv", {}, "--format 'csv' is not one of"),
        ("rl", {"history": 2}, "the rl format does not read --history"),
        ("grounding", {"syntax": "code", "filter": "all"}, "--filter, --syntax"),
        ("sft", {"filter": "judged"}, "fix: add --instruction relabeled"),
        ("sft", {"history": 0}, "--history: Input should be greater than or equal to 1"),
        ("sft", {"instruction": "model"}, "--instruction 'model'"),
        ("sft", {"max_pixels": 10**6}, "--max-pixels bound Qwen2.5-VL's resize"),
        ("rl", {"coords": "qwen25vl", "min_pixels": 9, "max_pixels": 8}, "--min-pixels 9 is above"),
        ("pairs", {"coords": "qwen25vl", "max_pixels": 0}, "--max-pixels: Input should be"),
        ("grounding", {"coords": "qwen25vl"}, "fix: export it with --coords pixels"),
        ("grounding", {"allow_standin": True}, "does not read --allow-standin"),
        ("sft", {"syntax": "seeclick"}, "--syntax 'seeclick' is not one of tool, code, uitars"),
    ],
)
def test_bad_options_are_refused_with_the_fix(
    fmt: str, given: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExportError, match=None) as caught:
        parse_options(fmt, **given)
    assert message in str(caught.value)


def test_options_record_only_what_the_format_reads() -> None:
    assert export_format("grounding").applied(parse_options("grounding", coords="norm01")) == {
        "format": "grounding",
        "coords": "norm01",
        "validation": 0.1,  # every format draws a validation split
    }
    sft = export_format("sft")
    judged = sft.applied(parse_options("sft", filter="judged", instruction="relabeled"))
    assert judged["filter"] == "judged"
    assert "max_pixels" not in judged and judged["allow_standin"] is False
    pairs = export_format("pairs")
    qwen = pairs.applied(parse_options("pairs", coords="qwen25vl", max_pixels=1003520))
    assert (qwen["min_pixels"], qwen["max_pixels"]) == (3136, 1003520)


def test_an_older_output_gets_groups_and_descriptions() -> None:
    episodes = [
        {"run_id": "run", "task_id": t, "episode_id": e, "success": False, "status": "max_steps"}
        for t, e in [("a", "e1"), ("b", "e2"), ("a", "e3")]
    ]
    steps = [
        {
            "episode_id": "e1",
            "step_index": i,
            "action_json": a,
            "target_name": "Add",
            "target_role": "button",
        }
        for i, a in [(1, action_json(TypeText(text="milk"))), (0, action_json(Click(x=1, y=2)))]
    ]
    from datagen.sink.models import Marker

    shard = ShardData(
        Marker(shard=0, files=(), stats=shard_stats(0), written_at=0), episodes, steps, [], []
    )
    _fill(shard, "run")
    assert [e["sample_index"] for e in episodes] == [0, 0, 1]
    assert episodes[0]["group_id"] == hashlib.sha256(b"run:a").hexdigest()[:16]
    assert episodes[0]["group_id"] == episodes[2]["group_id"] != episodes[1]["group_id"]
    assert [s["action_description"] for s in shard.steps_by_episode["e1"]] == [
        'Click the "Add" button',
        'Type "milk" into the "Add" button',
    ]
    assert describe({"action_json": action_json(Scroll(dy=-5))}) == "Scroll up"


def test_failure_categories_from_the_episode() -> None:
    def category(success: bool | None, status: str) -> str | None:
        return failure_category({"success": success, "status": status})

    assert category(True, "solved") is None
    assert category(False, "max_steps") == "max_steps"
    assert category(False, "done") == "done_without_success"
    assert category(None, "left_scope") == "left_scope"
    assert category(None, "max_steps") == "no_check"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "grounding", "--allow-standin"], "does not read --allow-standin"),
        (["-f", "sft", "--max-pixels", "1003520"], "--max-pixels bound Qwen2.5-VL's resize"),
        (["-f", "rl", "--coords", "qwen25vl", "--min-pixels", "9", "--max-pixels", "8"], "above"),
        (["-f", "pairs", "--syntax", "uitars", "--allow-standin"], "holds no datagen output"),
        (["-f", "sft", "--coords", "qwen25vl", "--max-pixels", "1003520"], "holds no datagen"),
    ],
)
def test_the_cli_passes_the_sample_options_through(
    tmp_path: Path, args: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from datagen.cli import app

    result = CliRunner().invoke(app, ["export", str(tmp_path), *args])
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output


def test_a_success_no_replay_reproduced_is_not_solved() -> None:
    from datagen.export.failures import failure_category, solved
    from datagen.export.rl import reward

    episode = {"success": True, "status": "not_reproduced", "verification": "not_reproduced"}
    assert not solved(episode) and failure_category(episode) == "not_reproduced"
    assert reward(episode) is None  # the check passed, for what nobody knows: no reward
    verified = {"success": True, "status": "solved", "verification": "minimal"}
    assert solved(verified) and failure_category(verified) is None and reward(verified) == 1.0
