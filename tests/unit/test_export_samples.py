"""Which samples the sft, pairs and rl exports make of a shard, from row dicts shaped as a
committed shard's (real JPEG screenshots, actions as the pipeline writes them): the task's
instruction only on steps replay verification showed needed, step-level samples for the rest,
stand-in output left out and counted, and step-level preference pairs from the same state."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from datagen.export import parse_options
from datagen.export.pairs import pair_samples
from datagen.export.rl import rl_samples
from datagen.export.sft import sft_samples
from datagen.export.source import ShardData, _fill
from datagen.records import Click, Done, Scroll, TypeText, action_json
from datagen.sink.models import Marker
from tests.helpers import shard_stats

Row = dict[str, Any]
SOLVE_BOX = (20.0, 180.0, 180.0, 220.0)  # the "Solve" button the task needs


def shot(colour: tuple[int, int, int]) -> Row:
    """A 1280×800 JPEG screenshot of one colour, as a step row holds it."""
    data = io.BytesIO()
    Image.new("RGB", (1280, 800), colour).save(data, format="JPEG", quality=80)
    return {"bytes": data.getvalue(), "path": None}


START, AFTER_SCROLL, TYPED, SOLVED, ELSEWHERE = (
    shot(c) for c in [(250, 250, 250), (240, 240, 240), (230, 230, 230), (0, 200, 0), (200, 0, 0)]
)


def episode(eid: str, sample: int, success: bool | None, **extra: Any) -> Row:
    return {
        "run_id": "r",
        "task_id": "solve",
        "episode_id": eid,
        "sample_index": sample,
        "seed": sample,
        "instruction": "Press Solve.",
        "start_url": "site://one/",
        "n_steps": 0,
        "success": success,
        "status": "solved" if success else "max_steps",
        "final_screenshot": SOLVED,
        "viewport_width": 1280,
        "viewport_height": 800,
        "device_scale_factor": 1.0,
    } | extra


def step(eid: str, i: int, action: Any, screenshot: Row, description: str, **extra: Any) -> Row:
    xy = {"x_px": action.x, "y_px": action.y} if isinstance(action, Click) else {}
    return {
        "episode_id": eid,
        "step_index": i,
        "action_type": action.type,
        "action_json": action_json(action),
        "action_description": description,
        "screenshot": screenshot,
        "image_width": 1280,
        "image_height": 800,
        "url": "http://127.0.0.1/one",
        **xy,
    } | extra


def one_click_episode(eid: str = "win", sample: int = 0, **extra: Any) -> tuple[Row, list[Row]]:
    """A solved episode whose one needed step is the click on Solve: a scroll, typing and a
    stray click around it, then done."""
    steps = [
        step(eid, 0, Scroll(dy=300), START, "Scroll down", needed=False),
        step(eid, 1, TypeText(text="hello"), AFTER_SCROLL, 'Type "hello"', needed=False),
        step(
            eid,
            2,
            Click(x=100, y=200),
            TYPED,
            'Click the "Solve" button',
            needed=True,
            target_bbox_px=SOLVE_BOX,
        ),
        step(eid, 3, Click(x=900, y=40), SOLVED, 'Click the "Other" button', needed=False),
        step(eid, 4, Done(), SOLVED, "Finish the task", needed=True),
    ]
    steps = [s | extra for s in steps]
    return episode(eid, sample, True, verification="minimal", n_steps=len(steps)), steps


def shard(*episodes: tuple[Row, list[Row]]) -> ShardData:
    data = ShardData(
        Marker(shard=0, files=(), stats=shard_stats(0), written_at=0),
        [e for e, _ in episodes],
        [s for _, steps in episodes for s in steps],
        [],
        [],
    )
    _fill(data, "r")
    return data


def sft(data: ShardData, **options: Any) -> tuple[list[Row], dict[str, int]]:
    built = sft_samples(data, parse_options("sft", **options))
    return built.rows, dict(built.tally)


def texts(sample: Row) -> str:
    return "\n".join(p["text"] or "" for m in sample["messages"] for p in m["content"])


def test_task_labelled_samples_hold_the_one_click_that_solved_it_and_nothing_else() -> None:
    rows, tally = sft(shard(one_click_episode()), history=3)
    assert len(rows) == 5
    task = [r for r in rows if r["instruction_source"] == "task"]
    assert [r["step_index"] for r in task] == [2, 4]
    click, done = task
    assert click["previous_steps"] == [] and len(click["images"]) == 1
    assert click["images"][0] == TYPED  # the screen it acted on, with no earlier screenshots
    assert done["previous_steps"] == [2] and done["images"] == [TYPED, SOLVED]
    for sample in task:
        assert sample["instruction"] == "Press Solve." and sample["needed"] is True
        said = texts(sample)
        assert 'Click the "Solve" button' in said or sample is click
        for other in ("Scroll down", 'Type "hello"', 'Click the "Other" button'):
            assert other not in said
    assert "Previous actions:\nnone" in texts(click)
    assert 'Previous actions:\n1. Click the "Solve" button' in texts(done)
    assert "computer_use" in texts(done) and '"status": "success"' in done["action"]
    others = [r for r in rows if r["instruction_source"] != "task"]
    assert [r["instruction_source"] for r in others] == ["step"] * 3
    assert all(r["instruction"] == r["action_description"] for r in others)
    assert all("Press Solve." not in texts(r) for r in others)
    # a step-level sample shows what happened before it: all earlier steps
    assert others[-1]["previous_steps"] == [0, 1, 2] and len(others[-1]["images"]) == 3
    assert tally == {}  # nothing left out
    every, _ = sft(shard(one_click_episode()), instruction="step")
    assert [r["instruction_source"] for r in every] == ["step"] * 5


@pytest.mark.parametrize(
    "verification", [None, "not_reproduced", "missing"], ids=["null", "not_reproduced", "old"]
)
def test_an_unverified_solved_episode_gives_only_step_level_samples(verification: str) -> None:
    win, steps = one_click_episode()
    if verification == "missing":  # an output written before the columns existed
        win.pop("verification")
        steps = [{k: v for k, v in s.items() if k != "needed"} for s in steps]
    else:
        win["verification"] = verification
    # a success no replay reproduced is not solved: only --filter all keeps its steps
    given = {"filter": "all"} if verification == "not_reproduced" else {}
    rows, tally = sft(shard((win, steps)), **given)
    assert {r["instruction_source"] for r in rows} == {"step"} and len(rows) == 5
    assert tally == {}
    if verification == "not_reproduced":
        assert sft(shard((win, steps))) == ([], {})


def test_failed_episodes_never_carry_the_task_s_instruction() -> None:
    lost = episode("lost", 1, False, n_steps=2)
    steps = [
        step("lost", 0, Click(x=900, y=40), START, 'Click the "Other" button'),
        step("lost", 1, Done(), ELSEWHERE, "Finish the task"),
    ]
    rows, _ = sft(shard(one_click_episode(), (lost, steps)), filter="all")
    failed = [r for r in rows if r["episode_id"] == "lost"]
    assert [r["instruction_source"] for r in failed] == ["step", "step"]
    assert failed[0]["failure_category"] == "max_steps"
    assert '"status": "failure"' in failed[1]["action"]


def test_an_accepted_relabel_labels_the_whole_trajectory() -> None:
    win, steps = one_click_episode()
    win |= {
        "relabeled_instruction": "Scroll, type hello, then press Solve.",
        "relabel_accepted": True,
    }
    rows, tally = sft(shard((win, steps)), instruction="relabeled", history=2)
    assert {r["instruction_source"] for r in rows} == {"relabel"}
    assert rows[-1]["previous_steps"] == [0, 1, 2, 3] and len(rows[-1]["images"]) == 2
    assert tally == {}


def test_stand_in_output_is_left_out_and_counted() -> None:
    win, steps = one_click_episode(model_standin=True)
    win |= {
        "relabeled_instruction": "Press Solve.",
        "relabel_accepted": True,
        "relabel_standin": True,
    }
    other, clean = one_click_episode("clean", 1)
    rows, tally = sft(shard((win, steps), (other, clean)), instruction="relabeled")
    assert {r["episode_id"] for r in rows} == {"clean"}
    assert tally["left_out.standin_step"] == 5 and tally["left_out.standin_relabel"] == 1
    # kept episode of the clean repeat: its own labels, not the stand-in relabel
    assert [r["instruction_source"] for r in rows] == ["step", "step", "task", "step", "task"]
    kept, kept_tally = sft(shard((win, steps)), instruction="relabeled", allow_standin=True)
    assert len(kept) == 5 and {r["instruction_source"] for r in kept} == {"relabel"}
    assert not any(k.startswith("left_out") for k in kept_tally)
    judged, judged_tally = sft(
        shard((win | {"success": False}, steps)), instruction="step", filter="judged"
    )
    assert judged == [] and judged_tally == {"left_out.standin_relabel": 1}


def test_a_stand_in_step_in_the_history_leaves_the_sample_out() -> None:
    win, steps = one_click_episode()
    steps[0]["model_standin"] = True  # the scroll
    rows, tally = sft(shard((win, steps)))
    # the task-labelled samples do not show the scroll; every step-level one after it does
    assert [(r["step_index"], r["instruction_source"]) for r in rows] == [(2, "task"), (4, "task")]
    assert tally["left_out.standin_step"] == 3


def lost_episode(
    eid: str, sample: int, actions: list[tuple[Any, Row, str]]
) -> tuple[Row, list[Row]]:
    steps = [step(eid, i, a, s, d) for i, (a, s, d) in enumerate(actions)]
    return episode(eid, sample, False, n_steps=len(steps)), steps


def pairs(data: ShardData, **options: Any) -> tuple[list[Row], dict[str, int]]:
    built = pair_samples(data, parse_options("pairs", **options))
    return built.rows, dict(built.tally)


def test_a_preference_pair_is_a_needed_step_against_another_action_from_its_state() -> None:
    win, steps = one_click_episode()
    stray = lost_episode(
        "stray",
        1,
        [
            (Scroll(dy=300), START, "Scroll down"),
            (TypeText(text="hello"), AFTER_SCROLL, 'Type "hello"'),
            (Click(x=900, y=40), TYPED, 'Click the "Other" button'),  # where Solve was needed
            (Done(), ELSEWHERE, "Finish the task"),
        ],
    )
    rows, tally = pairs(shard((win, steps), stray), syntax="code")
    assert len(rows) == 1 and tally == {"pairs.screenshot": 1}
    pair = rows[0]
    assert (pair["chosen_episode_id"], pair["chosen_step_index"]) == ("win", 2)
    assert (pair["rejected_episode_id"], pair["rejected_step_index"]) == ("stray", 2)
    assert pair["same_state"] == "screenshot" and pair["images"] == [TYPED]
    assert pair["chosen"][0]["content"][0]["text"] == "pyautogui.click(x=100, y=200)"
    assert pair["rejected"][0]["content"][0]["text"] == "pyautogui.click(x=900, y=40)"
    system, user = pair["prompt"]
    assert system["role"] == "system" and system["content"][0]["text"] == pair["system"]
    assert "The screen's resolution is 1280x800" in pair["system"]
    assert [p["type"] for p in user["content"]] == ["image", "text"]
    assert user["content"][1]["text"] == "Instruction: Press Solve.\nPrevious actions:\nnone"
    assert pair["rejected_failure_category"] == "max_steps"


def test_no_pair_where_the_failed_episode_did_the_same_or_saw_another_state() -> None:
    win, steps = one_click_episode()
    same = lost_episode(
        "same",
        1,
        [
            (Scroll(dy=200), START, "Scroll down"),  # step 0, unneeded in the winner: no pair
            (TypeText(text="hello"), AFTER_SCROLL, 'Type "hello"'),
            (Click(x=150, y=210), TYPED, 'Click the "Solve" button'),  # inside Solve's box
            (Click(x=900, y=40), ELSEWHERE, 'Click the "Other" button'),  # another screen
        ],
    )
    unverified = one_click_episode("maybe", 2)
    unverified[0]["verification"] = "not_reproduced"
    rows, tally = pairs(shard((win, steps), same, unverified))
    assert rows == [] and tally == {}


def test_start_pairs_and_one_pair_per_preference() -> None:
    first = [
        step(
            "quick",
            0,
            Click(x=100, y=200),
            START,
            'Click the "Solve" button',
            needed=True,
            target_bbox_px=SOLVE_BOX,
        ),
        step("quick", 1, Done(), SOLVED, "Finish the task", needed=True),
    ]
    quick = (episode("quick", 0, True, verification="minimal", n_steps=2), first)
    again = (
        episode("again", 1, True, verification="minimal", n_steps=2),
        [s | {"episode_id": "again"} for s in first],
    )
    losers = [
        lost_episode(f"lost{i}", 2 + i, [(Click(x=900, y=40), shot((9, 9, 9)), 'Click "Other"')])
        for i in range(3)
    ]
    standin = lost_episode("sim", 9, [(TypeText(text="x"), START, 'Type "x"')])
    standin[1][0]["model_standin"] = True
    rows, tally = pairs(shard(quick, again, *losers, standin), syntax="uitars")
    # one prompt (the start screen), one chosen click, one rejected click: one pair
    assert len(rows) == 1 and rows[0]["same_state"] == "start"
    assert rows[0]["rejected"][0]["content"][0]["text"].endswith(
        "click(start_box='<|box_start|>(900,40)<|box_end|>')"
    )
    assert tally == {"pairs.start": 1, "left_out.standin_step": 2}


def test_rl_rows_carry_the_system_turn_and_leave_stand_in_rollouts_out() -> None:
    win, steps = one_click_episode()
    sim = one_click_episode("sim", 1, model_standin=True)
    options = parse_options("rl", coords="qwen25vl", syntax="tool")
    built = rl_samples(shard((win, steps), sim), options)
    assert [r["episode_id"] for r in built.rows] == ["win"] and built.tally == {
        "left_out.standin_episode": 1
    }
    row = built.rows[0]
    assert "The screen's resolution is 1288x812" in row["system"]
    assert (row["model_image_width"], row["model_image_height"]) == (1288, 812)
    assert row["group_size"] == 1 and row["verification"] == "minimal"
    assert [s["needed"] for s in row["steps"]] == [False, False, True, False, True]
    assert '"coordinate": [101, 203]' in row["steps"][2]["action"]
    both = rl_samples(shard((win, steps), sim), options.model_copy(update={"allow_standin": True}))
    assert len(both.rows) == 2 and both.rows[0]["group_size"] == 2
