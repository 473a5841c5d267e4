"""What an export is asked for: the format and the options that shape its samples.

    datagen export OUT --format F [--coords …] ─► ExportOptions ─► export.run.export_output

The names of every choice are Literals in `export.choices`, once: the model's fields, the
CLI's choices and the docs read them. Which options a format reads, and the parsing that
refuses the others, is the format's own (`export.formats.parse_options`): an option that does
not apply to the format is refused rather than ignored, since a user who asks `--history 3` of
a grounding export expects it to do something. The checks any format could meet are here.
"""

from __future__ import annotations

from typing import get_args

from pydantic import Field

from datagen.errors import ExportError
from datagen.export.choices import CHOICES, Coords, Filter, Format, Instruction, Syntax
from datagen.records import Frozen

# Options read only with `--coords qwen25vl` (the resize's bounds).
RESIZE = ("min_pixels", "max_pixels")
# Qwen2.5-VL's published preprocessor_config.json: the bounds of its resize's area.
QWEN_MIN_PIXELS = 3136
QWEN_MAX_PIXELS = 12845056


class ExportOptions(Frozen):
    """One export's settings. Build it with `export.formats.parse_options` to get ExportErrors."""

    format: Format = Field(description=" | ".join(get_args(Format)))
    coords: Coords = Field("pixels", description="coordinate convention of points and boxes")
    syntax: Syntax = Field(
        "tool",
        description="tool: Qwen2.5-VL's computer_use call; code: pyautogui; uitars: UI-TARS 1.5",
    )
    history: int = Field(1, ge=1, le=16, description="screenshots per sft sample, current last")
    instruction: Instruction = Field("task", description="the instruction an sft sample carries")
    filter: Filter = Field("solved", description="which episodes become sft samples")
    min_pixels: int = Field(
        QWEN_MIN_PIXELS,
        ge=1,
        description="qwen25vl: the processor's min_pixels (its resize's lower bound)",
    )
    max_pixels: int = Field(
        QWEN_MAX_PIXELS,
        ge=1,
        description="qwen25vl: the processor's max_pixels (12845056 in Qwen2.5-VL's published "
        "preprocessor_config.json; 1003520 = 1280·28·28 in many fine-tuning recipes)",
    )
    allow_standin: bool = Field(
        False,
        description="export samples made by datagen's model stand-in (tests of the pipeline, "
        "never training data)",
    )
    validation: float = Field(
        0.1,
        ge=0.0,
        le=0.5,
        description="share of clusters (groups joined by site and near-duplicate screenshots) "
        "drawn for the validation split; 0: no split",
    )


def flag(key: str) -> str:
    """An option's key as its command-line flag (`min_pixels` → `--min-pixels`)."""
    return "--" + key.replace("_", "-")


def check_combinations(options: ExportOptions, given: set[str]) -> None:
    """Refuse options that another option makes meaningless, or that would mislabel samples
    (whatever the format; what a format itself refuses is in export.formats)."""
    resize = [k for k in RESIZE if k in given]
    if resize and options.coords != "qwen25vl":
        raise ExportError(
            f"{', '.join(map(flag, resize))} bound Qwen2.5-VL's resize, which only --coords "
            "qwen25vl applies; fix: add --coords qwen25vl, or leave "
            f"{'it' if len(resize) == 1 else 'them'} out"
        )
    if options.min_pixels > options.max_pixels:
        raise ExportError(
            f"--min-pixels {options.min_pixels} is above --max-pixels {options.max_pixels}; fix: "
            "give a min_pixels at most max_pixels (the processor's preprocessor_config.json has "
            "both)"
        )
    if options.filter == "judged" and options.instruction == "task":
        raise ExportError(
            "--filter judged keeps episodes for the relabeled instruction a check accepted; "
            "--instruction task never uses it, so those episodes would give only step-level "
            "samples; fix: add --instruction relabeled (or step)"
        )


__all__ = [
    "CHOICES",
    "QWEN_MAX_PIXELS",
    "QWEN_MIN_PIXELS",
    "RESIZE",
    "Coords",
    "ExportOptions",
    "Filter",
    "Format",
    "Instruction",
    "Syntax",
    "check_combinations",
    "flag",
]
