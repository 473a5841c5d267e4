"""Model-written referring expressions, checked by a round trip.

    GroundingRow (DOM) ─► writer role: "describe the element in this box" ─► expression
                       ─► localizer role: "where is <expression>?" ─► point
                       ─► kept only if the point lands in the element's box

The DOM row itself is always kept; the model's expression is attached only when it round-trips,
and a miss is recorded as a `round_trip_miss` reject with the expression and the point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from datagen.config import ModelExpressionsConfig, RoleName
from datagen.engine.client import EngineError
from datagen.engine.profiles import (
    Expression,
    ModelOutputError,
    Point,
    PromptProfile,
    encode_screenshot,
)
from datagen.engine.roles import Engines
from datagen.records import GroundingRow, Observation, RejectReason


@dataclass
class RoundTrips:
    rows: list[GroundingRow] = field(default_factory=list)
    problems: list[tuple[GroundingRow, RejectReason, str]] = field(default_factory=list)


async def model_expressions(
    rows: list[GroundingRow],
    obs: Observation,
    engines: Engines,
    config: ModelExpressionsConfig,
    profile: PromptProfile,
    max_width: int,
) -> RoundTrips:
    """Ask for expressions of the first `per_step` rows; return all rows, some annotated."""
    out = RoundTrips()
    image = encode_screenshot(
        obs.screenshot, obs.image_format, obs.image_width, obs.image_height, max_width
    )
    chosen = {row.element_index for row in rows[: config.per_step]}
    localizer: RoleName = "localizer" if engines.has("localizer") else "writer"
    for row in rows:
        if row.element_index not in chosen:
            out.rows.append(row)
            continue
        try:
            box = profile.from_box(row.bbox_px, obs.image_width, obs.image_height, image)
            written, _ = await engines.ask(
                "writer",
                profile.expression_messages(image, box),
                Expression.model_json_schema(),
                Expression,
            )
            point, _ = await engines.ask(
                localizer,
                profile.localization_messages(image, written.expression),
                profile.point_schema(image),
                Point,
            )
        except ModelOutputError as exc:
            out.rows.append(row)
            out.problems.append((row, RejectReason.MODEL_PARSE_ERROR, str(exc)))
            continue
        except EngineError as exc:
            out.rows.append(row)
            out.problems.append((row, RejectReason(exc.reason), str(exc)))
            continue
        pixels = profile.to_pixels(point.x, point.y, image, obs.image_width, obs.image_height)
        x1, y1, x2, y2 = row.bbox_px
        ok = pixels is not None and x1 <= pixels[0] <= x2 and y1 <= pixels[1] <= y2
        out.rows.append(
            row.model_copy(
                update={
                    "model_expression": written.expression if ok else None,
                    "round_trip_point_px": pixels,
                    "round_trip_ok": ok,
                }
            )
        )
        if not ok:
            out.problems.append(
                (
                    row,
                    RejectReason.ROUND_TRIP_MISS,
                    f"{written.expression!r} was grounded at {pixels}, outside {row.bbox_px}",
                )
            )
    return out
