"""The model's roles measured every run, from the committed tables: how far the localizer's
point lands from the DOM box it was asked for, and how often the judge agrees with the task's
own check. Both have ground truth only because the DOM and the task's check are datagen's.

    grounding rows (round_trip_point_px, bbox_px) ─► localizer error, px (0 inside the box)
    episodes.success (the task's check) × the done step's judge_output ─► judge agreement
    ─► RoleMeasures ─► run summary line (observe.summary) and run report (runtime.report)

Rows a stand-in answered (`model_standin`, a grounding row's run marked so) are measured the
same, and the result says "stand-in output": a number about datagen's stand-in, not a model.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoleMeasures:
    localizer_n: int = 0
    localizer_median_px: float | None = None
    localizer_p90_px: float | None = None
    localizer_inside: float | None = None  # share of points inside their box
    judge_n: int = 0  # episodes with a check and a judge verdict
    judge_agree: float | None = None
    standin: bool = False  # any measured answer came from datagen's stand-in

    def lines(self) -> list[str]:
        """What the run summary and report say; empty when no role was measured."""
        tag = " (stand-in output, not a model's)" if self.standin else ""
        out = []
        if self.localizer_n:
            out.append(
                f"localizer error vs the DOM box: median {self.localizer_median_px:.0f} px, "
                f"p90 {self.localizer_p90_px:.0f} px, inside {self.localizer_inside:.0%} "
                f"of {self.localizer_n} points{tag}"
            )
        if self.judge_n:
            out.append(
                f"judge agrees with the task's check on {self.judge_agree:.0%} of "
                f"{self.judge_n} episodes{tag}"
            )
        return out


def box_distance(point: tuple[float, float], box: tuple[float, float, float, float]) -> float:
    """Pixels from a point to a box (x1, y1, x2, y2); 0 inside it."""
    x, y = point
    x1, y1, x2, y2 = box
    dx = max(x1 - x, 0.0, x - x2)
    dy = max(y1 - y, 0.0, y - y2)
    return math.hypot(dx, dy)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(
    grounding: Iterable[Mapping[str, Any]],
    steps: Iterable[Mapping[str, Any]],
    episodes: Iterable[Mapping[str, Any]],
    standin_grounding: bool = False,
) -> RoleMeasures:
    """The measures from rows (dicts of the tables' columns: grounding `round_trip_point_px`,
    `bbox_px`; steps `episode_id`, `judge_output`, `model_standin`; episodes `episode_id`,
    `success`)."""
    errors = [
        box_distance(tuple(row["round_trip_point_px"]), tuple(row["bbox_px"]))
        for row in grounding
        if row.get("round_trip_point_px") is not None and row.get("bbox_px") is not None
    ]
    verdicts: dict[str, bool] = {}
    standin = standin_grounding and bool(errors)
    for step in steps:
        raw = step.get("judge_output")
        if not raw:
            continue
        try:
            verdicts[str(step["episode_id"])] = json.loads(raw)["verdict"] == "SUCCESS"
        except (ValueError, KeyError, TypeError):
            continue
        standin = standin or bool(step.get("model_standin"))
    agree = [
        verdicts[str(e["episode_id"])] == bool(e["success"])
        for e in episodes
        if e.get("success") is not None and str(e.get("episode_id")) in verdicts
    ]
    return RoleMeasures(
        localizer_n=len(errors),
        localizer_median_px=_quantile(errors, 0.5) if errors else None,
        localizer_p90_px=_quantile(errors, 0.9) if errors else None,
        localizer_inside=sum(e == 0 for e in errors) / len(errors) if errors else None,
        judge_n=len(agree),
        judge_agree=sum(agree) / len(agree) if agree else None,
        standin=standin,
    )


def read_measures(uri: str, endpoint_url: str | None, standin: bool) -> RoleMeasures:
    """The measures of a committed output (`standin`: the run's engine was the stand-in, which
    is what marks grounding rows, whose own columns do not say)."""
    from datagen.sink.read import read_committed

    def rows(table: str, columns: list[str]) -> list[dict[str, Any]]:
        try:
            return read_committed(uri, table, endpoint_url, columns).to_table().to_pylist()  # type: ignore[no-any-return]
        except Exception:  # a table a run did not write: nothing to measure there
            return []

    grounding = rows("grounding", ["round_trip_point_px", "bbox_px"])
    steps = rows("steps", ["episode_id", "judge_output", "model_standin"])
    episodes = rows("episodes", ["episode_id", "success"])
    return measure(grounding, steps, episodes, standin_grounding=standin)


def run_measures(manifest: Any) -> list[str]:
    """The lines of a finished run's measures, read from its committed output (the manifest
    says where; `manifest.engine.standin` marks grounding rows). A failure is logged, never
    fatal: the run's data is committed already."""
    try:
        uri, endpoint_url = manifest.output
        standin = manifest.engine is not None and manifest.engine.standin
        return read_measures(uri, endpoint_url, standin).lines()
    except Exception:
        log.warning("roles not measured", exc_info=True)
        return []
