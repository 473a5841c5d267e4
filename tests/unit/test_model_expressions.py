"""Model-written referring expressions on a fake engine: the writer, then the localizer; an
expression is kept only when its point lands in the element's box."""

from __future__ import annotations

import asyncio
import io

from PIL import Image

from datagen.annotate import grounding_rows
from datagen.annotate.model import RoundTrips, model_expressions
from datagen.config import ModelExpressionsConfig, RoleConfig, RoleName
from datagen.engine.client import EngineUnavailable
from datagen.engine.profiles import PROFILES
from datagen.records import Box, Element, GroundingRow, Observation, RejectReason
from tests.fakes import FakeEngine

SAVE = Element(
    index=0,
    tag="button",
    role="button",
    name="Save",
    selector="#save",
    box=Box(x=10, y=20, width=100, height=30),  # CSS px; (20, 40)-(220, 100) screenshot px
    hit=True,
)
QUIT = SAVE.model_copy(
    update={
        "index": 1,
        "name": "Quit",
        "selector": "#quit",
        "box": Box(x=200, y=200, width=80, height=30),
    }
)
INSIDE_SAVE = {"x": 150, "y": 117}  # norm1000 of an 800x600 image: (120, 70.2) px
OUTSIDE = {"x": 900, "y": 900}


def observation() -> Observation:
    out = io.BytesIO()
    Image.new("RGB", (800, 600), "white").save(out, "JPEG")
    return Observation(
        url="u",
        title="t",
        screenshot=out.getvalue(),
        image_format="jpeg",
        image_width=800,
        image_height=600,
        viewport_width=400,
        viewport_height=300,
        device_scale_factor=2.0,
        elements=(SAVE, QUIT),
    )


def rows(obs: Observation) -> list[GroundingRow]:
    ids = {"run_id": "r", "schema_version": "1", "task_id": "t", "episode_id": "e"}
    return grounding_rows(obs, **ids, browser_version="chromium/1", step_index=0, limit=10)


def run(
    fake: FakeEngine, *, localizer: bool, per_step: int = 1
) -> tuple[RoundTrips, list[GroundingRow]]:
    roles: dict[RoleName, RoleConfig] = {"writer": RoleConfig()}
    if localizer:
        roles["localizer"] = RoleConfig()
    config = ModelExpressionsConfig(per_step=per_step)
    obs = observation()
    dom = rows(obs)
    out = asyncio.run(
        model_expressions(
            dom, obs, fake.engines(roles), config, PROFILES["holo2_norm1000"], max_width=1280
        )
    )
    return out, dom


def test_an_expression_that_round_trips_is_kept(fake_engine: FakeEngine) -> None:
    fake_engine.script("writer", {"expression": "the Save button"})
    fake_engine.script("localizer", INSIDE_SAVE)
    out, dom = run(fake_engine, localizer=True)
    assert fake_engine.roles_called == ["writer", "localizer"]
    asked = fake_engine.calls[0].payload["messages"][0]["content"][1]["text"]
    assert asked.startswith("Look at the UI element inside the box [25, 67, 275, 167]")
    first, second = out.rows
    assert first.model_expression == "the Save button" and first.round_trip_ok is True
    assert first.round_trip_point_px == (120.0, 70.2)
    assert second == dom[1]  # beyond per_step: not asked, unchanged
    assert out.problems == []


def test_an_expression_that_misses_is_dropped_and_recorded(fake_engine: FakeEngine) -> None:
    fake_engine.script("writer", {"expression": "the Quit button"})
    fake_engine.script("writer", OUTSIDE)  # no localizer configured: the writer localizes
    out, dom = run(fake_engine, localizer=False)
    assert fake_engine.roles_called == ["writer", "writer"]
    assert out.rows[0].model_expression is None and out.rows[0].round_trip_ok is False
    ((row, reason, detail),) = out.problems
    assert (row, reason) == (dom[0], RejectReason.ROUND_TRIP_MISS)
    assert detail.startswith("'the Quit button' was grounded at (720.0, 540.0)")


def test_model_failures_keep_the_dom_rows(fake_engine: FakeEngine) -> None:
    fake_engine.script("writer", "no json", "still none")  # asked again once, then rejected
    fake_engine.script("writer", EngineUnavailable("down"))
    out, dom = run(fake_engine, localizer=True, per_step=2)
    assert out.rows == dom
    assert [reason for _, reason, _ in out.problems] == [
        RejectReason.MODEL_PARSE_ERROR,
        RejectReason.ENGINE_UNAVAILABLE,
    ]
    assert fake_engine.roles_called == ["writer", "writer", "writer"]
