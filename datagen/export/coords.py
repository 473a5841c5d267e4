"""Coordinate conventions of exported points and boxes, and the way back to screen pixels.

    step / grounding row (screenshot pixels) ─► to_point / to_box ─► sample columns, action text

A datagen row holds screenshot pixels (CSS px × device_scale_factor, origin top-left). Trainers
want one of three conventions, and a model trained on one but fed another misclicks, so every
exported sample names its convention (`coords` column):

- `pixels`: integer screenshot pixels, rounded half up: within 0.5 px of the true point.
- `norm1000`: integers in [0, 1000], `round(v / size × 1000)` half up, as the Qwen-VL, UI-TARS
  1.0 and Holo families read them; back as `n / 1000 × size`. The rounding step is size / 1000
  px, so the way back is within `0.5 × size / 1000` px: 0.5 px for a 1000-px side, 0.64 px at
  1280, 0.77 at 1536 (an integer grid of 1001 steps cannot name each of 1280 pixels).
- `norm01`: fractions in [0, 1] with 4 decimals, as Aguvis / OpenCUA / SeeClick read them:
  within `0.00005 × size` px (0.08 px at 1536).

`size` is the image's width for x and its height for y. Sizes of the screenshot, not of a
model's resized input: a trainer that resizes (Qwen2.5-VL's smart_resize) rescales `pixels`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from datagen.export.options import Coords

NORM01_DIGITS = 4


def _half_up(value: float) -> float:
    return float(math.floor(value + 0.5))


def to_value(value: float, size: int, coords: Coords) -> float:
    """One coordinate (screenshot pixels along a side of `size` pixels) in `coords`."""
    if coords == "pixels":
        return _half_up(value)
    if coords == "norm1000":
        return _half_up(value / size * 1000)
    return round(value / size, NORM01_DIGITS)


def from_value(value: float, size: int, coords: Coords) -> float:
    """One coordinate in `coords` back in screenshot pixels."""
    if coords == "pixels":
        return value
    if coords == "norm1000":
        return value / 1000 * size
    return value * size


def to_point(x: float, y: float, width: int, height: int, coords: Coords) -> tuple[float, float]:
    """A point in screenshot pixels as `coords`."""
    return to_value(x, width, coords), to_value(y, height, coords)


def from_point(u: float, v: float, width: int, height: int, coords: Coords) -> tuple[float, float]:
    """A point in `coords` back in screenshot pixels."""
    return from_value(u, width, coords), from_value(v, height, coords)


def to_box(
    box: Sequence[float], width: int, height: int, coords: Coords
) -> tuple[float, float, float, float]:
    """A box `[x1, y1, x2, y2]` in screenshot pixels as `coords`."""
    x1, y1, x2, y2 = box
    return (
        to_value(x1, width, coords),
        to_value(y1, height, coords),
        to_value(x2, width, coords),
        to_value(y2, height, coords),
    )


def tolerance_px(size: int, coords: Coords) -> float:
    """How far (screenshot px) a coordinate mapped to `coords` and back can be from where it
    was, along a side of `size` pixels (the module docstring's bounds)."""
    if coords == "pixels":
        return 0.5
    if coords == "norm1000":
        return 0.5 * size / 1000
    return 0.5 * size * 10.0**-NORM01_DIGITS


def number(value: float, coords: Coords) -> str:
    """A coordinate as it appears in an action string: integers without a decimal point."""
    if coords == "norm01":
        return f"{value:.{NORM01_DIGITS}f}".rstrip("0").rstrip(".") or "0"
    return str(int(value))
