"""The engine roles on a fake engine (what each call sends, the re-ask, merged usage), and
which roles and prompt profile a pipeline config asks for."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from datagen.config import RoleConfig, RoleName
from datagen.engine.client import ChatResult
from datagen.engine.profiles import PROFILES, ModelOutputError, Point, Verdict
from datagen.engine.roles import Engines
from datagen.policy import profile_for, roles_for
from tests.fakes import FakeEngine, Reply
from tests.helpers import make_config

MESSAGES = [{"role": "user", "content": "where?"}]
SCHEMA = Point.model_json_schema()


def ask(engines: Engines, role: RoleName = "localizer") -> tuple[Any, ChatResult]:
    return asyncio.run(engines.ask(role, MESSAGES, SCHEMA, Point))


def test_a_call_sends_the_roles_settings_and_the_schema(fake_engine: FakeEngine) -> None:
    role = RoleConfig(temperature=0.3, max_tokens=48, timeout_s=7.0)
    engines = fake_engine.engines({"localizer": role}, served="holo")
    fake_engine.script("localizer", {"x": 3, "y": 4})
    point, result = ask(engines)
    assert point == Point(x=3, y=4)
    assert result.content == '{"x": 3, "y": 4}'
    (call,) = fake_engine.calls
    assert (call.role, call.timeout_s) == ("localizer", 7.0)
    assert call.payload == {
        "model": "holo",
        "messages": MESSAGES,
        "temperature": 0.3,
        "max_tokens": 48,
        "structured_outputs": {"json": SCHEMA},
    }


def test_a_roles_own_model_name_wins_over_the_served_one(fake_engine: FakeEngine) -> None:
    engines = fake_engine.engines({"judge": RoleConfig(model="judge-7b")}, served="holo")
    assert engines.roles["judge"].model == "judge-7b"
    assert engines.has("judge") and not engines.has("localizer")
    fake_engine.script("judge", {"verdict": "SUCCESS", "reason": "ok"})
    verdict, _ = asyncio.run(engines.ask("judge", MESSAGES, {}, Verdict))
    assert verdict == Verdict(verdict="SUCCESS", reason="ok")
    assert fake_engine.calls[0].payload["model"] == "judge-7b"


def test_an_invalid_answer_is_asked_again_at_temperature_0(fake_engine: FakeEngine) -> None:
    engines = fake_engine.engines({"localizer": RoleConfig(temperature=0.9)})
    fake_engine.script(
        "localizer",
        Reply('{"x": 3}', attempts=2, prompt_tokens=50, completion_tokens=4, latency_ms=10.0),
        Reply('{"x": 3, "y": 9}', prompt_tokens=60, completion_tokens=6, latency_ms=12.5),
    )
    point, result = ask(engines)
    assert point == Point(x=3, y=9)
    first, again = fake_engine.calls
    assert again.payload == {**first.payload, "temperature": 0.0}
    assert first.payload["temperature"] == 0.9
    assert result.content == '{"x": 3, "y": 9}'  # the second answer, with both calls' usage
    assert (result.attempts, result.prompt_tokens, result.completion_tokens) == (3, 110, 10)
    assert result.latency_ms == 22.5


def test_two_invalid_answers_raise_with_the_raw_text(fake_engine: FakeEngine) -> None:
    engines = fake_engine.engines({"localizer": RoleConfig()})
    fake_engine.script("localizer", "nonsense", '{"x": "far", "y": 1}')
    with pytest.raises(ModelOutputError, match=r"^x: .*\(raw: '\{\"x\": \"far\", \"y\": 1\}'\)$"):
        ask(engines)
    assert len(fake_engine.calls) == 2  # asked again once, not more


def test_an_explore_run_calls_no_roles_and_uses_the_default_profile(tmp_path: Path) -> None:
    config = make_config(tmp_path, policy={"type": "explore"})
    assert roles_for(config) == {}
    assert profile_for(config) is PROFILES["holo2_norm1000"]


def test_a_vlm_run_calls_its_roles_in_priority_order(tmp_path: Path) -> None:
    config = make_config(
        tmp_path,
        policy={"type": "vlm", "profile": "holo15_abs", "judge": {"model": "judge-7b"}},
        annotation={"model_expressions": {"writer": {"max_tokens": 40}}},
    )
    roles = roles_for(config)
    assert list(roles) == ["policy", "localizer", "judge", "writer"]
    assert roles["judge"].model == "judge-7b" and roles["writer"].max_tokens == 40
    assert profile_for(config) is PROFILES["holo15_abs"]


def test_a_vlm_run_without_a_localizer_does_not_call_one(tmp_path: Path) -> None:
    config = make_config(tmp_path, policy={"type": "vlm", "localizer": None})
    assert list(roles_for(config)) == ["policy"]
