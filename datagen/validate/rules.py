"""Validation rules: pure functions over records, each returning a `RejectReason` or None.

GroundingRow ─► check_grounding() ─► reason | None
Observation + Action ─► check_step() ─► reason | None
"""

from __future__ import annotations

import io

from PIL import Image

from datagen.config import ValidationConfig
from datagen.records import Action, Click, GroundingRow, Observation, RejectReason


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the image header (no full decode); None if unreadable."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except Exception:
        return None


def check_step(obs: Observation, action: Action) -> tuple[RejectReason, str] | None:
    """The screenshot decodes at viewport × scale, and a click lands inside it."""
    size = image_size(obs.screenshot)
    expected = (obs.image_width, obs.image_height)
    if size != expected:
        return RejectReason.SCREENSHOT_SIZE_MISMATCH, f"image is {size}, expected {expected}"
    if isinstance(action, Click) and not (
        0 <= action.x < obs.image_width and 0 <= action.y < obs.image_height
    ):
        return (
            RejectReason.ACTION_OFF_SCREEN,
            f"click at ({action.x:g}, {action.y:g}) outside {expected}",
        )
    return None


def check_grounding(
    row: GroundingRow, config: ValidationConfig, stable: bool = True
) -> tuple[RejectReason, str] | None:
    """A usable grounding label: drawn where the screenshot shows it (`stable`: its box did not
    move while the screenshot was taken), inside the image, big enough, referable, not
    occluded."""
    if not stable:
        return (
            RejectReason.UNSTABLE_BOX,
            f"{row.selector} moved while the screenshot was taken: its box may not match it",
        )
    x1, y1, x2, y2 = row.bbox_px
    if (
        x1 < 0
        or y1 < 0
        or x2 > row.image_width + 0.5
        or y2 > row.image_height + 0.5
        or x2 <= x1
        or y2 <= y1
    ):
        return (
            RejectReason.BOX_OUTSIDE_IMAGE,
            f"box {row.bbox_px} outside {row.image_width}x{row.image_height}",
        )
    if min(x2 - x1, y2 - y1) < config.min_box_px:
        return (
            RejectReason.BOX_TOO_SMALL,
            f"box {x2 - x1:.1f}x{y2 - y1:.1f} px under {config.min_box_px:g}",
        )
    if not row.referring_expression:
        return (
            RejectReason.NO_REFERRING_EXPRESSION,
            f"{row.tag} {row.selector} has no name, text or placeholder",
        )
    if config.require_hit_test and not row.hit_test:
        return RejectReason.OCCLUDED, f"centre of {row.selector} hit-tests to another element"
    return None
