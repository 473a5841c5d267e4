"""The model's roles measured from a run's rows: the localizer's distance to the DOM box, the
judge's agreement with the task's check, and the stand-in's numbers marked as such."""

from __future__ import annotations

import json
from typing import Any

from datagen.observe.roles import RoleMeasures, box_distance, measure

BOX = (100.0, 100.0, 200.0, 150.0)


def test_box_distance_is_zero_inside_and_euclidean_outside() -> None:
    assert box_distance((150, 120), BOX) == 0
    assert box_distance((100, 150), BOX) == 0  # on the edge
    assert box_distance((90, 120), BOX) == 10
    assert box_distance((203, 154), BOX) == 5  # 3, 4 from the corner


def verdict(ok: bool) -> str:
    return json.dumps({"verdict": "SUCCESS" if ok else "NOT SUCCESS", "reason": ""})


def test_localizer_error_and_judge_agreement() -> None:
    grounding: list[dict[str, Any]] = [
        {"round_trip_point_px": (150, 120), "bbox_px": BOX},  # inside: 0
        {"round_trip_point_px": (90, 120), "bbox_px": BOX},  # 10 px left
        {"round_trip_point_px": (100, 190), "bbox_px": BOX},  # 40 px below
        {"round_trip_point_px": None, "bbox_px": BOX},  # not asked: not measured
    ]
    steps: list[dict[str, Any]] = [
        {"episode_id": "a", "judge_output": verdict(True), "model_standin": False},
        {"episode_id": "b", "judge_output": verdict(True), "model_standin": False},
        {"episode_id": "c", "judge_output": verdict(False), "model_standin": False},
        {"episode_id": "d", "judge_output": verdict(True), "model_standin": False},
        {"episode_id": "a", "judge_output": None, "model_standin": False},
    ]
    episodes: list[dict[str, Any]] = [
        {"episode_id": "a", "success": True},  # agrees
        {"episode_id": "b", "success": False},  # disagrees
        {"episode_id": "c", "success": False},  # agrees
        {"episode_id": "d", "success": None},  # no check: not counted
        {"episode_id": "e", "success": True},  # no verdict: not counted
    ]
    m = measure(grounding, steps, episodes)
    assert (m.localizer_n, m.localizer_median_px, m.localizer_p90_px) == (3, 10, 40)
    assert m.localizer_inside == 1 / 3
    assert (m.judge_n, m.judge_agree, m.standin) == (3, 2 / 3, False)
    lines = m.lines()
    assert lines[0].startswith("localizer error vs the DOM box: median 10 px, p90 40 px")
    assert lines[1] == "judge agrees with the task's check on 67% of 3 episodes"


def test_stand_in_output_is_marked() -> None:
    steps = [{"episode_id": "a", "judge_output": verdict(True), "model_standin": True}]
    m = measure([], steps, [{"episode_id": "a", "success": True}])
    assert m.standin and m.lines() == [
        "judge agrees with the task's check on 100% of 1 episodes (stand-in output, not a model's)"
    ]
    grounded = measure([{"round_trip_point_px": (0, 0), "bbox_px": BOX}], [], [], True)
    assert grounded.standin and "stand-in output" in grounded.lines()[0]
    assert RoleMeasures().lines() == []  # nothing measured: nothing said
