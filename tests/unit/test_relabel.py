"""Hindsight relabeling on a fake engine: the relabel role writes an instruction from the
trajectory's screenshots and action descriptions, a check accepts or rejects it, and no failure
of the model's leaves more than the columns and a `relabel` reject."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from datagen.annotate.relabel import Relabeled, frame_indices, relabel_episode
from datagen.config import RelabelConfig, RoleConfig, RoleName
from datagen.engine.client import EngineRejected, EngineUnavailable
from datagen.engine.hindsight import HINDSIGHT, Frame, read_actions
from datagen.engine.profiles import SentImage
from datagen.engine.sim.hindsight import hindsight_answer
from datagen.errors import ConfigError
from datagen.policy import roles_for
from datagen.records import EpisodeRow, ImageData, RejectReason, StepRow
from tests.fakes import FakeEngine
from tests.helpers import make_config

COLOURS = ["red", "orange", "yellow", "green", "blue", "purple"]  # steps 0-4, then the final
DESCRIPTIONS = [
    'Click the "New todo" field',
    'Type "Buy milk" into the "New todo" field',
    "Press Enter",
    "Scroll down",
    'Click the "Buy milk" checkbox',
]
IDS = {
    "run_id": "r",
    "schema_version": "1.2",
    "task_id": "t",
    "episode_id": "e",
    "browser_version": "chromium/1",
    "playwright_version": "1",
    "datagen_version": "0",
    "policy": "explore",
    "group_id": "g",
    "sample_index": 0,
}
ACCEPTED = {"instruction": "Add a todo Buy milk and tick it off", "thought": "typed, ticked"}


def png(colour: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 40), colour).save(out, "PNG")
    return out.getvalue()


def step(index: int, error: str | None = None) -> StepRow:
    return StepRow(
        **IDS,
        step_index=index,
        url="http://site/",
        title="Todos",
        screenshot=ImageData(bytes=png(COLOURS[index]), path=f"e-{index:03d}.png"),
        image_width=64,
        image_height=40,
        viewport_width=64,
        viewport_height=40,
        device_scale_factor=1.0,
        action_type="click",
        action_repr=f"click({index}, 1)",
        action_json="{}",
        action_description=DESCRIPTIONS[index],
        action_error=error,
        n_elements=3,
        observe_ms=1.0,
        act_ms=1.0,
    )


def episode(steps: int = 5) -> EpisodeRow:
    return EpisodeRow(
        **IDS,
        source="sites",
        site="todo",
        instruction="Delete every todo",
        start_url="http://site/",
        final_url="http://site/",
        n_steps=steps,
        success=False,
        status="max_steps",
        answer="",
        seed=1,
        duration_s=1.0,
        final_screenshot=ImageData(bytes=png(COLOURS[-1]), path="e-final.png"),
        viewport_width=64,
        viewport_height=40,
        device_scale_factor=1.0,
    )


def relabel(
    fake: FakeEngine, *, steps: list[StepRow] | None = None, standin: bool = False, **config: Any
) -> Relabeled:
    settings = RelabelConfig(**config)
    roles: dict[RoleName, RoleConfig] = {"relabel": settings}
    if settings.check == "judge":
        roles["judge"] = settings.judge_role()
    engines = fake.engines(roles, served="hindsight-model", standin=standin)
    rows = steps if steps is not None else [step(i) for i in range(5)]
    return asyncio.run(relabel_episode(episode(len(rows)), rows, engines, settings, 1280))


def images_sent(payload: dict[str, Any]) -> list[str]:
    """The colours of the screenshots in a request, in order."""
    by_url = {f"data:image/png;base64,{base64.b64encode(png(c)).decode()}": c for c in COLOURS}
    parts = payload["messages"][0]["content"]
    return [by_url[p["image_url"]["url"]] for p in parts if p["type"] == "image_url"]


def prompt_text(payload: dict[str, Any]) -> str:
    parts = payload["messages"][0]["content"]
    return "\n".join(p["text"] for p in parts if p["type"] == "text")


def test_an_accepted_relabel_fills_every_column(fake_engine: FakeEngine) -> None:
    fake_engine.script("relabel", ACCEPTED)
    fake_engine.script("judge", {"reason": "the todo is there, ticked", "fulfilled": True})
    done = relabel(fake_engine, images=3)

    assert done.problem is None
    row = episode().model_copy(update=done.columns)
    assert row.instruction == "Delete every todo"  # the task's stays
    assert row.relabeled_instruction == ACCEPTED["instruction"]
    assert row.instruction_source == "relabel" and row.relabel_accepted is True
    assert row.relabel_model == "hindsight-model" and row.relabel_standin is False
    assert row.relabel_prompt_version == "hindsight/1" == HINDSIGHT.tag
    assert row.relabel_output is not None and json.loads(row.relabel_output) == ACCEPTED
    assert row.relabel_check_output is not None
    assert json.loads(row.relabel_check_output)["fulfilled"] is True
    assert fake_engine.roles_called == ["relabel", "judge"]

    asked, checked = (call.payload for call in fake_engine.calls)
    # the first, the final and one evenly between (6 frames: 5 steps and the final screen)
    assert images_sent(asked) == ["red", "yellow", "purple"]
    assert read_actions(prompt_text(asked)) == DESCRIPTIONS
    assert "Screenshot before action 1:" in prompt_text(asked)
    assert "Delete every todo" not in prompt_text(asked)  # the task is not shown: no echo
    assert asked["structured_outputs"]["json"] == HINDSIGHT.relabel_schema()
    assert asked["temperature"] == 0.0 and asked["max_tokens"] == 512
    # the check sees the final screen, the actions and the instruction, under its own schema
    assert images_sent(checked) == ["purple"]
    assert read_actions(prompt_text(checked)) == DESCRIPTIONS
    assert json.dumps(ACCEPTED["instruction"]) in prompt_text(checked)
    assert checked["structured_outputs"]["json"] == HINDSIGHT.check_schema()


def test_a_relabel_the_check_rejects_is_kept_but_not_used(fake_engine: FakeEngine) -> None:
    fake_engine.script("relabel", ACCEPTED)
    fake_engine.script("judge", {"reason": "no todo on the screen", "fulfilled": False})
    done = relabel(fake_engine)
    assert done.columns["relabeled_instruction"] == ACCEPTED["instruction"]
    assert done.columns["relabel_accepted"] is False
    assert "instruction_source" not in done.columns  # the row's default: "task"
    assert episode().model_copy(update=done.columns).instruction_source == "task"
    assert done.problem is not None
    reason, detail = done.problem
    assert reason is RejectReason.RELABEL_REJECTED and "no todo on the screen" in detail


def test_an_unparseable_answer_leaves_the_raw_text_and_no_instruction(
    fake_engine: FakeEngine,
) -> None:
    fake_engine.script("relabel", "Add a todo, I think", '{"instruction": 3}')  # asked again once
    done = relabel(fake_engine)
    assert fake_engine.roles_called == ["relabel", "relabel"]  # no check of nothing
    assert done.columns["relabel_output"] == '{"instruction": 3}'
    assert "relabeled_instruction" not in done.columns and "relabel_accepted" not in done.columns
    assert done.columns["relabel_prompt_version"] == "hindsight/1"
    assert done.problem is not None and done.problem[0] is RejectReason.MODEL_PARSE_ERROR
    row = episode().model_copy(update=done.columns)
    assert row.relabeled_instruction is None and row.instruction_source == "task"


def test_an_empty_instruction_is_no_relabel(fake_engine: FakeEngine) -> None:
    fake_engine.script("relabel", {"thought": "nothing", "instruction": "  "})
    done = relabel(fake_engine)
    assert done.problem == (RejectReason.MODEL_PARSE_ERROR, "relabel: empty instruction")
    assert "relabeled_instruction" not in done.columns and fake_engine.roles_called == ["relabel"]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (EngineUnavailable("timed out after 3 attempts"), RejectReason.ENGINE_UNAVAILABLE),
        (
            EngineRejected(400, "BadRequestError", "At most 3 image(s)"),
            RejectReason.ENGINE_REJECTED,
        ),
    ],
)
def test_an_engine_error_is_a_reject_not_a_crash(
    fake_engine: FakeEngine, error: Exception, reason: RejectReason
) -> None:
    fake_engine.script("relabel", error)
    done = relabel(fake_engine)
    assert done.problem is not None and done.problem[0] is reason
    assert done.problem[1].startswith("relabel: ") and str(error) in done.problem[1]
    assert "relabel_output" not in done.columns and "relabeled_instruction" not in done.columns
    assert done.columns["relabel_model"] == "hindsight-model"


def test_a_failed_check_keeps_the_instruction_without_a_verdict(fake_engine: FakeEngine) -> None:
    fake_engine.script("relabel", ACCEPTED)
    fake_engine.script("judge", EngineUnavailable("connection refused"))
    done = relabel(fake_engine)
    assert done.columns["relabeled_instruction"] == ACCEPTED["instruction"]
    assert "relabel_accepted" not in done.columns and "relabel_check_output" not in done.columns
    assert done.problem is not None and done.problem[0] is RejectReason.ENGINE_UNAVAILABLE
    assert done.problem[1].startswith("judge: ")


def test_reread_asks_the_relabel_role_again_and_none_asks_nobody(
    fake_engine: FakeEngine,
) -> None:
    fake_engine.script("relabel", ACCEPTED, {"reason": "it is there", "fulfilled": True})
    done = relabel(fake_engine, check="reread", standin=True)
    assert fake_engine.roles_called == ["relabel", "relabel"]
    assert images_sent(fake_engine.calls[1].payload) == ["purple"]
    assert done.columns["instruction_source"] == "relabel"
    assert done.columns["relabel_standin"] is True  # never presented as a model's output

    unchecked = FakeEngine()
    unchecked.script("relabel", ACCEPTED)
    done = relabel(unchecked, check="none")
    assert unchecked.roles_called == ["relabel"] and done.problem is None
    assert (
        done.columns["relabel_accepted"] is True and done.columns["instruction_source"] == "relabel"
    )
    assert "relabel_check_output" not in done.columns


def test_failed_actions_are_marked_and_frames_are_spread_evenly(fake_engine: FakeEngine) -> None:
    fake_engine.script("relabel", ACCEPTED)
    fake_engine.script("judge", {"reason": "ok", "fulfilled": True})
    relabel(fake_engine, steps=[step(0), step(1, error="element detached\nfrom the page")])
    asked = fake_engine.calls[0].payload
    assert images_sent(asked) == ["red", "orange", "purple"]  # all three frames of 2 steps
    assert read_actions(prompt_text(asked))[1] == (
        f"{DESCRIPTIONS[1]} (failed: element detached from the page)"
    )
    assert frame_indices(6, 4) == [0, 2, 3, 5]
    assert frame_indices(2, 3) == [0, 1] and frame_indices(10, 2) == [0, 9]


def test_the_stand_in_answers_from_the_action_lines() -> None:
    image = SentImage("data:image/png;base64,", 64, 40)
    frames = [Frame(image, "before action 1")]
    actions = [(d, None) for d in DESCRIPTIONS] + [('Click the "Delete" button', "timed out")]
    asked = HINDSIGHT.relabel_messages(actions, frames)
    text = hindsight_answer(HINDSIGHT.relabel_schema(), asked)
    assert text is not None and text == hindsight_answer(HINDSIGHT.relabel_schema(), asked)
    answer = json.loads(text)
    # the last three actions that did something (not the scroll, not the failed click)
    assert answer["instruction"] == (
        'Type "Buy milk" into the "New todo" field, then press Enter, then click the "Buy milk" '
        "checkbox"
    )
    assert answer["thought"].startswith("stand-in:")
    check = HINDSIGHT.check_messages(answer["instruction"], actions, image)
    verdict = json.loads(hindsight_answer(HINDSIGHT.check_schema(), check) or "")
    assert verdict["fulfilled"] is True

    idle = [("Scroll down", None), ("Wait 1 second", None), ("Finish", None)]
    answer = json.loads(
        hindsight_answer(HINDSIGHT.relabel_schema(), HINDSIGHT.relabel_messages(idle, frames)) or ""
    )
    assert answer["instruction"] == "Scroll through the page"
    check = HINDSIGHT.check_messages(answer["instruction"], idle, image)
    assert json.loads(hindsight_answer(HINDSIGHT.check_schema(), check) or "")["fulfilled"] is False
    # any other request is none of its business
    assert (
        hindsight_answer({"title": "NavStep"}, asked) is None
        and hindsight_answer(None, asked) is None
    )


def test_the_config_picks_one_judge_and_says_how_to_fix_two(tmp_path: Path) -> None:
    config = make_config(tmp_path, annotation={"relabel": {"check": "judge", "model": "m"}})
    roles = roles_for(config)
    assert set(roles) == {"relabel", "judge"} and roles["judge"].max_tokens == 256
    assert roles["relabel"].model == "m" and roles["relabel"].share == 0.3
    assert config.uses_engine
    vlm = {"type": "vlm", "judge": {"max_tokens": 99}}
    config = make_config(tmp_path, policy=vlm, annotation={"relabel": {}})
    assert roles_for(config)["judge"].max_tokens == 99  # the policy's judge checks too
    assert "judge" not in roles_for(
        make_config(tmp_path, annotation={"relabel": {"check": "reread"}})
    )
    with pytest.raises(ConfigError, match=r"remove annotation\.relabel\.judge"):
        make_config(tmp_path, policy=vlm, annotation={"relabel": {"judge": {}}})
    with pytest.raises(ConfigError, match="set check: judge"):
        make_config(tmp_path, annotation={"relabel": {"check": "none", "judge": {}}})
