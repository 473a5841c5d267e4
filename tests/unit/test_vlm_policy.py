"""The model policy on a fake engine: answers become the right actions, the roles are called
in order and traced, failures become reject reasons, points land on the right pixels."""

from __future__ import annotations

import asyncio
import io
import json
import typing
from typing import Any

import pytest
from PIL import Image

from datagen.config import RoleConfig, RoleName, VlmPolicyConfig
from datagen.engine.client import BadAnswer, EngineRejected, EngineUnavailable
from datagen.policy import PolicyFailure
from datagen.policy.translate import SCROLL_FRACTION
from datagen.policy.vlm import VlmPolicy
from datagen.records import (
    Action,
    Back,
    Box,
    Click,
    Decision,
    Done,
    Element,
    Goto,
    Key,
    Observation,
    RejectReason,
    Scroll,
    TaskSpec,
    TypeText,
    Wait,
)
from tests.fakes import FakeEngine, Reply

TASK = TaskSpec(id="t", start_url="http://127.0.0.1/", instruction="Find the price")
BUTTON = Element(
    index=0,
    tag="button",
    role="button",
    name="Buy",
    selector="#buy",
    box=Box(x=600, y=180, width=80, height=40),  # CSS px: holds (640, 200)
    hit=True,
)
FIELD = BUTTON.model_copy(
    update={
        "index": 1,
        "tag": "input",
        "role": "textbox",
        "selector": "#q",
        "box": Box(x=300, y=180, width=40, height=40),
    }
)  # holds (320, 200)


def observation(width: int = 1280, height: int = 800, scale: float = 1.0) -> Observation:
    """A white PNG screenshot of `width`×`height` screenshot px at device scale `scale`."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, "PNG")
    return Observation(
        url="http://127.0.0.1/",
        title="shop",
        screenshot=out.getvalue(),
        image_format="png",
        image_width=width,
        image_height=height,
        viewport_width=round(width / scale),
        viewport_height=round(height / scale),
        device_scale_factor=scale,
        elements=(BUTTON, FIELD),
    )


def step(action: dict[str, Any], thought: str = "look", note: str = "n") -> dict[str, Any]:
    """A navigation answer as the model writes it."""
    return {"thought": thought, "note": note, "action": action}


def policy(
    fake: FakeEngine,
    *,
    localizer: bool = False,
    judge: bool = False,
    standin: bool = False,
    **settings: Any,
) -> VlmPolicy:
    """The model policy with the given roles, all served by `fake`."""
    config = VlmPolicyConfig(
        type="vlm",
        localizer=RoleConfig() if localizer else None,
        judge=RoleConfig() if judge else None,
        **settings,
    )
    roles: dict[RoleName, RoleConfig] = {"policy": config.policy}
    if config.localizer is not None:
        roles["localizer"] = config.localizer
    if config.judge is not None:
        roles["judge"] = config.judge
    return VlmPolicy(config, fake.engines(roles, served="holo-test", standin=standin))


def decide(model: VlmPolicy, obs: Observation | None = None) -> Decision:
    return asyncio.run(model.decide(obs or observation(), TASK))


ANSWERS: list[tuple[dict[str, Any], Action]] = [
    ({"type": "click", "element": "Buy", "x": 500, "y": 250}, Click(x=640, y=200)),
    ({"type": "type", "text": "milk"}, TypeText(text="milk")),
    ({"type": "key", "key": "Control+A"}, Key(combo="Control+A")),
    ({"type": "scroll", "direction": "down"}, Scroll(dx=0, dy=800 * SCROLL_FRACTION)),
    ({"type": "scroll", "direction": "left"}, Scroll(dx=-1280 * SCROLL_FRACTION, dy=0)),
    ({"type": "goto", "url": "http://127.0.0.1/b"}, Goto(url="http://127.0.0.1/b")),
    ({"type": "back"}, Back()),
    ({"type": "wait"}, Wait(seconds=1.0)),
    ({"type": "answer", "content": "$4"}, Done(answer="$4")),
]


@pytest.mark.parametrize(("answer", "action"), ANSWERS, ids=lambda v: str(v)[:40])
def test_each_answer_becomes_its_action(
    fake_engine: FakeEngine, answer: dict[str, Any], action: Action
) -> None:
    fake_engine.script("policy", step(answer))
    decision = decide(policy(fake_engine))
    assert decision.action == action
    assert decision.note == "look"
    assert decision.target == (BUTTON if isinstance(action, Click) else None)


def test_the_answers_reach_every_action_type() -> None:
    union = typing.get_args(typing.get_args(Action)[0])
    every = {typing.get_args(cls.model_fields["type"].annotation)[0] for cls in union}
    assert {action.type for _, action in ANSWERS} == every


def test_the_localizer_places_the_click_and_the_trace_says_so(fake_engine: FakeEngine) -> None:
    fake_engine.script("policy", step({"type": "click", "element": "Buy", "x": 5, "y": 5}))
    fake_engine.script("localizer", {"x": 500, "y": 250})
    decision = decide(policy(fake_engine, localizer=True))
    assert fake_engine.roles_called == ["policy", "localizer"]
    assert decision.action == Click(x=640, y=200)  # the localizer's point, not the policy's
    assert decision.target == BUTTON
    localized = fake_engine.calls[1].payload["messages"][0]["content"][1]["text"]
    assert localized.endswith("Your target is:\nBuy")
    trace = decision.trace
    assert trace is not None
    assert trace.roles == "policy+localizer"
    assert trace.localizer_output == '{"x": 500, "y": 250}'
    assert json.loads(trace.raw_output)["action"]["x"] == 5
    assert trace.judge_output is None


def test_the_localizer_is_not_asked_about_other_actions(fake_engine: FakeEngine) -> None:
    fake_engine.script("policy", step({"type": "back"}))
    decision = decide(policy(fake_engine, localizer=True))
    assert fake_engine.roles_called == ["policy"]
    assert decision.trace is not None and decision.trace.roles == "policy"


def test_the_judge_is_asked_about_an_answer(fake_engine: FakeEngine) -> None:
    fake_engine.script("policy", step({"type": "answer", "content": "$4"}))
    fake_engine.script("judge", {"verdict": "SUCCESS", "reason": "the price shows"})
    decision = decide(policy(fake_engine, localizer=True, judge=True))
    assert fake_engine.roles_called == ["policy", "judge"]
    judged = fake_engine.calls[1].payload["messages"][0]["content"][1]["text"]
    assert "It finished with this answer: $4" in judged
    assert decision.action == Done(answer="$4")
    assert decision.trace is not None
    assert decision.trace.roles == "policy+judge"
    assert json.loads(decision.trace.judge_output or "") == {
        "verdict": "SUCCESS",
        "reason": "the price shows",
    }


def test_a_click_goes_policy_localizer_and_a_later_answer_policy_judge(
    fake_engine: FakeEngine,
) -> None:
    model = policy(fake_engine, localizer=True, judge=True)
    fake_engine.script(
        "policy",
        step({"type": "click", "element": "Buy", "x": 1, "y": 1}, note="saw Buy"),
        step({"type": "answer", "content": "done"}),
    )
    fake_engine.script("localizer", {"x": 500, "y": 250})
    fake_engine.script("judge", {"verdict": "NOT SUCCESS", "reason": "no"})
    decide(model)
    decide(model)
    assert fake_engine.roles_called == ["policy", "localizer", "policy", "judge"]
    state = json.loads(fake_engine.calls[2].payload["messages"][1]["content"][0]["text"])
    assert state["note"] == "saw Buy"  # the note is the model's memory across steps
    assert state["previous_actions"] == ['{"type": "click", "element": "Buy"}']


def test_a_malformed_answer_is_asked_again_then_rejected(fake_engine: FakeEngine) -> None:
    fake_engine.script("policy", '{"thought": "t"', '{"thought": "t", "note": ""}')
    with pytest.raises(PolicyFailure) as failure:
        decide(policy(fake_engine))
    assert failure.value.reason == RejectReason.MODEL_PARSE_ERROR
    assert str(failure.value).startswith("policy: action: Field required")
    assert '(raw: \'{"thought": "t", "note": ""}\')' in str(failure.value)
    temperatures = [call.payload["temperature"] for call in fake_engine.calls]
    assert temperatures == [0.7, 0.0]  # the re-ask is at temperature 0


def test_a_malformed_localizer_answer_is_rejected_as_the_localizer(
    fake_engine: FakeEngine,
) -> None:
    fake_engine.script("policy", step({"type": "click", "element": "Buy", "x": 1, "y": 1}))
    fake_engine.script("localizer", "x=3", "{}")
    with pytest.raises(PolicyFailure, match=r"^localizer: ") as failure:
        decide(policy(fake_engine, localizer=True))
    assert failure.value.reason == RejectReason.MODEL_PARSE_ERROR


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (EngineRejected(400, "BadRequestError", "too many images"), RejectReason.ENGINE_REJECTED),
        (EngineUnavailable("down after 4 attempts"), RejectReason.ENGINE_UNAVAILABLE),
        (BadAnswer("chat answer: an HTML page, not JSON"), RejectReason.ENGINE_ERROR),
    ],
)
def test_engine_errors_become_reject_reasons(
    fake_engine: FakeEngine, error: Exception, reason: RejectReason
) -> None:
    fake_engine.script("policy", error)
    with pytest.raises(PolicyFailure) as failure:
        decide(policy(fake_engine))
    assert failure.value.reason == reason
    assert str(failure.value) == f"policy: {error}"


def test_a_point_off_the_image_is_rejected(fake_engine: FakeEngine) -> None:
    fake_engine.script("policy", step({"type": "click", "element": "Buy", "x": 1280, "y": 10}))
    with pytest.raises(PolicyFailure) as failure:
        decide(policy(fake_engine, profile="holo15_abs"))  # pixels of a 1280x800 image: 0..1279
    assert failure.value.reason == RejectReason.MODEL_OFF_SCREEN
    assert str(failure.value) == "point (1280, 10) outside the pixels frame of a 1280x800 image"
    fake_engine.script("policy", step({"type": "click", "element": "Buy", "x": 10, "y": 1001}))
    with pytest.raises(PolicyFailure) as failure:
        decide(policy(fake_engine))
    assert failure.value.reason == RejectReason.MODEL_OFF_SCREEN
    assert str(failure.value) == "point (10, 1001) outside the norm1000 frame of a 1280x800 image"


def test_a_re_ask_counts_both_calls_in_the_trace(fake_engine: FakeEngine) -> None:
    good = json.dumps(step({"type": "back"}))
    fake_engine.script(
        "policy",
        Reply('{"thought": ', attempts=2, prompt_tokens=1000, completion_tokens=3),
        Reply(good, prompt_tokens=1000, completion_tokens=30, latency_ms=20.0),
    )
    decision = decide(policy(fake_engine))
    trace = decision.trace
    assert trace is not None
    assert trace.attempts == 3  # two transport attempts on the first call, one on the re-ask
    assert (trace.prompt_tokens, trace.completion_tokens) == (2000, 33)
    assert trace.latency_ms == 25.0
    assert trace.raw_output == good


def test_attempts_and_usage_add_up_over_the_roles(fake_engine: FakeEngine) -> None:
    fake_engine.script(
        "policy",
        Reply(json.dumps(step({"type": "click", "element": "Buy", "x": 1, "y": 1})), attempts=2),
    )
    fake_engine.script("localizer", Reply('{"x": 500, "y": 250}', attempts=3, prompt_tokens=7))
    trace = decide(policy(fake_engine, localizer=True)).trace
    assert trace is not None
    assert (trace.attempts, trace.prompt_tokens, trace.completion_tokens) == (5, 107, 20)


@pytest.mark.parametrize(
    ("profile", "x", "y"),
    [("holo2_norm1000", 250, 250), ("holo15_abs", 320, 200)],  # both: a quarter of the image
)
def test_points_map_to_pixels_of_a_downscaled_screenshot(
    fake_engine: FakeEngine, profile: str, x: int, y: int
) -> None:
    fake_engine.script("policy", step({"type": "click", "element": "Buy", "x": x, "y": y}))
    obs = observation(2560, 1600, scale=2.0)  # sent at 1280x800 (image_max_width)
    decision = decide(policy(fake_engine, profile=profile), obs)
    assert decision.action == Click(x=640, y=400)  # screenshot px: 2x the image sent
    assert decision.target == FIELD  # (640, 400) px is (320, 200) CSS px at device scale 2
    assert decision.trace is not None
    assert (decision.trace.sent_width, decision.trace.sent_height) == (1280, 800)
    assert decision.trace.prompt_profile == profile
    image = fake_engine.calls[0].payload["messages"][1]["content"][1]["image_url"]["url"]
    assert image.startswith("data:image/jpeg;base64,")  # resized on the worker


def test_a_scroll_is_a_fraction_of_the_screenshot(fake_engine: FakeEngine) -> None:
    fake_engine.script("policy", step({"type": "scroll", "direction": "up"}))
    action = decide(policy(fake_engine), observation(2560, 1600, scale=2.0)).action
    assert action == Scroll(dx=0, dy=-1600 * SCROLL_FRACTION)


@pytest.mark.parametrize("standin", [True, False])
def test_the_trace_says_whether_a_stand_in_answered(fake_engine: FakeEngine, standin: bool) -> None:
    fake_engine.script("policy", step({"type": "wait"}))
    trace = decide(policy(fake_engine, standin=standin)).trace
    assert trace is not None
    assert trace.standin is standin
    assert trace.model == "holo-test"
    assert fake_engine.calls[0].payload["model"] == "holo-test"


def test_old_screenshots_become_placeholders(fake_engine: FakeEngine) -> None:
    model = policy(fake_engine, history_images=1)
    fake_engine.script("policy", step({"type": "wait"}), step({"type": "wait"}))
    decide(model)
    decide(model)
    parts = fake_engine.calls[1].payload["messages"][1]["content"]
    assert [part["type"] for part in parts] == ["text", "text", "image_url"]
    assert parts[1]["text"] == "[Image omitted by context cleaning]"
