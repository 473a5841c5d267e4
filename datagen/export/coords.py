"""Coordinate conventions of exported points and boxes, and the way back to screen pixels.

    step / grounding row (screenshot pixels) ─► Frame.of(width, height, options)
        ─► frame.point / frame.box ─► sample columns, action text; frame.screen ─► system turn

A datagen row holds screenshot pixels (CSS px × device_scale_factor, origin top-left). Trainers
want one of four conventions, and a model trained on one but fed another misclicks, so every
exported sample names its convention (`coords` column):

- `pixels`: integer screenshot pixels, rounded half up: within 0.5 px of the true point.
- `qwen25vl`: integer pixels of the image the model sees after Qwen2.5-VL's processor resized
  the screenshot (`smart_resize`: each side a multiple of 28, the area within [min_pixels,
  max_pixels]; the published preprocessor's 3136 and 12845056 turn 1280×800 into 1288×812),
  as Qwen2.5-VL and UI-TARS 1.5 read them: `round(v × model / size)` half up; back as
  `n × size / model`, within `0.5 × size / model` px.
- `norm1000`: integers in [0, 1000], `round(v / size × 1000)` half up, as the Qwen-VL, UI-TARS
  1.0 and Holo families read them; back as `n / 1000 × size`. The rounding step is size / 1000
  px, so the way back is within `0.5 × size / 1000` px: 0.5 px for a 1000-px side, 0.64 px at
  1280, 0.77 at 1536 (an integer grid of 1001 steps cannot name each of 1280 pixels).
- `norm01`: fractions in [0, 1] with 4 decimals, as Aguvis / OpenCUA / SeeClick read them:
  within `0.00005 × size` px (0.08 px at 1536).

`size` is the screenshot's width for x and its height for y; `model` the resized image's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from datagen.errors import ExportError
from datagen.export.options import QWEN_MAX_PIXELS, QWEN_MIN_PIXELS, Coords, ExportOptions

NORM01_DIGITS = 4
# Qwen2-VL / Qwen2.5-VL's image processor: 14-px patches merged 2 × 2, so sides are multiples
# of 28 (the area's bounds are options, defaulting to the published preprocessor's).
QWEN_FACTOR = 28
QWEN_MAX_RATIO = 200  # the processor refuses images more elongated than this


def smart_resize(
    height: int,
    width: int,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
    factor: int = QWEN_FACTOR,
) -> tuple[int, int]:
    """(height, width) of the image Qwen2.5-VL's processor makes of a `height` × `width` one:
    each side rounded to a multiple of `factor`, then scaled (keeping the aspect) into
    [min_pixels, max_pixels]. The rule of transformers' `qwen2_vl` `smart_resize`, written out
    here (a test compares the two) so an export needs no transformers."""
    if max(height, width) / min(height, width) > QWEN_MAX_RATIO:
        raise ExportError(
            f"a {width}×{height} screenshot is more than {QWEN_MAX_RATIO} times longer than "
            "wide, which Qwen2.5-VL's processor refuses; fix: export it with --coords pixels"
        )
    h = round(height / factor) * factor
    w = round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def _half_up(value: float) -> float:
    return float(math.floor(value + 0.5))


def to_value(value: float, size: int, coords: Coords, model: int | None = None) -> float:
    """One coordinate (screenshot pixels along a side of `size` pixels) in `coords`; `model`:
    the side of the image the model sees (`qwen25vl` only; the screenshot's otherwise)."""
    if coords == "pixels":
        return _half_up(value)
    if coords == "qwen25vl":
        return _half_up(value * _model(model) / size)
    if coords == "norm1000":
        return _half_up(value / size * 1000)
    return round(value / size, NORM01_DIGITS)


def from_value(value: float, size: int, coords: Coords, model: int | None = None) -> float:
    """One coordinate in `coords` back in screenshot pixels."""
    if coords == "pixels":
        return value
    if coords == "qwen25vl":
        return value * size / _model(model)
    if coords == "norm1000":
        return value / 1000 * size
    return value * size


def _model(model: int | None) -> int:
    if model is None:
        raise ValueError("qwen25vl coordinates need the resized side (model=)")
    return model


def to_point(x: float, y: float, width: int, height: int, coords: Coords) -> tuple[float, float]:
    """A point in screenshot pixels as `coords` (pixels, norm1000, norm01: no resize)."""
    return to_value(x, width, coords), to_value(y, height, coords)


def from_point(u: float, v: float, width: int, height: int, coords: Coords) -> tuple[float, float]:
    """A point in `coords` back in screenshot pixels (pixels, norm1000, norm01)."""
    return from_value(u, width, coords), from_value(v, height, coords)


def to_box(
    box: Sequence[float], width: int, height: int, coords: Coords
) -> tuple[float, float, float, float]:
    """A box `[x1, y1, x2, y2]` in screenshot pixels as `coords` (pixels, norm1000, norm01)."""
    x1, y1, x2, y2 = box
    return (
        to_value(x1, width, coords),
        to_value(y1, height, coords),
        to_value(x2, width, coords),
        to_value(y2, height, coords),
    )


def tolerance_px(size: int, coords: Coords, model: int | None = None) -> float:
    """How far (screenshot px) a coordinate mapped to `coords` and back can be from where it
    was, along a side of `size` pixels (the module docstring's bounds)."""
    if coords == "pixels":
        return 0.5
    if coords == "qwen25vl":
        return 0.5 * size / _model(model)
    if coords == "norm1000":
        return 0.5 * size / 1000
    return 0.5 * size * 10.0**-NORM01_DIGITS


def number(value: float, coords: Coords) -> str:
    """A coordinate as it appears in an action string: integers without a decimal point."""
    if coords == "norm01":
        return f"{value:.{NORM01_DIGITS}f}".rstrip("0").rstrip(".") or "0"
    return str(int(value))


@dataclass(frozen=True)
class Frame:
    """One screenshot's geometry in an export's convention: its size, the size of the image
    the model sees (`model_width` × `model_height`: Qwen's resize for `qwen25vl`, the
    screenshot's otherwise), and the conversions."""

    width: int
    height: int
    coords: Coords
    model_width: int
    model_height: int

    @classmethod
    def of(cls, width: int, height: int, options: ExportOptions) -> Frame:
        """The frame of a `width` × `height` screenshot under the export's options."""
        model_w, model_h = width, height
        if options.coords == "qwen25vl":
            model_h, model_w = smart_resize(height, width, options.min_pixels, options.max_pixels)
        return cls(width, height, options.coords, model_w, model_h)

    def columns(self, syntax: str) -> dict[str, object]:
        """The columns every export row carries about its frame: the convention, the action
        syntax, the screenshot's size and the size the model sees."""
        return {
            "coords": self.coords,
            "syntax": syntax,
            "image_width": self.width,
            "image_height": self.height,
            "model_image_width": self.model_width,
            "model_image_height": self.model_height,
        }

    def point(self, x: float, y: float) -> tuple[float, float]:
        """A point in screenshot pixels in the convention."""
        return (
            to_value(x, self.width, self.coords, self.model_width),
            to_value(y, self.height, self.coords, self.model_height),
        )

    def back(self, u: float, v: float) -> tuple[float, float]:
        """A point in the convention back in screenshot pixels."""
        return (
            from_value(u, self.width, self.coords, self.model_width),
            from_value(v, self.height, self.coords, self.model_height),
        )

    def tolerance(self) -> tuple[float, float]:
        """How far (screenshot px, along x and y) `back(point(p))` can be from `p`."""
        return (
            tolerance_px(self.width, self.coords, self.model_width),
            tolerance_px(self.height, self.coords, self.model_height),
        )

    def screen(self) -> tuple[int, int]:
        """The screen size the system turn states: the image the model sees in pixels
        (`pixels`, `qwen25vl`, and `norm01`, whose coordinates the turn calls fractions of it),
        1000 × 1000 for `norm1000` (its points are thousandths of each side)."""
        if self.coords == "norm1000":
            return 1000, 1000
        return self.model_width, self.model_height
