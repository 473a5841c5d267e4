"""What an export is asked for: the format and the options that shape its samples.

    datagen export OUT --format F [--coords …] ─► ExportOptions ─► export.run.export_output

One frozen model checks every choice and every combination once, so the CLI and a Python caller
get the same errors (`ExportError`, with the fix). An option that does not apply to the format
is refused rather than ignored: a user who asks `--history 3` of a grounding export expects it
to do something.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, ValidationError

from datagen.errors import ExportError
from datagen.records import Frozen

Format = Literal["sft", "grounding", "rl", "pairs"]
Coords = Literal["pixels", "norm1000", "norm01"]
Syntax = Literal["tool", "code"]
Instruction = Literal["task", "relabeled", "step"]
Filter = Literal["solved", "judged", "all"]

FORMATS: tuple[str, ...] = get_args(Format)
# Which options each format reads (besides the format itself).
APPLIES: dict[str, frozenset[str]] = {
    "sft": frozenset({"coords", "syntax", "history", "instruction", "filter"}),
    "grounding": frozenset({"coords"}),
    "rl": frozenset({"coords", "syntax"}),
    "pairs": frozenset({"coords", "syntax"}),
}
CHOICES: dict[str, tuple[str, ...]] = {
    "format": FORMATS,
    "coords": get_args(Coords),
    "syntax": get_args(Syntax),
    "instruction": get_args(Instruction),
    "filter": get_args(Filter),
}


class ExportOptions(Frozen):
    """One export's settings. Build it with `ExportOptions.parse` to get ExportErrors."""

    format: Format = Field(description="sft | grounding | rl | pairs")
    coords: Coords = Field("pixels", description="coordinate convention of points and boxes")
    syntax: Syntax = Field("tool", description="tool: a computer_use tool call; code: pyautogui")
    history: int = Field(1, ge=1, le=16, description="screenshots per sft sample, current last")
    instruction: Instruction = Field("task", description="the instruction an sft sample carries")
    filter: Filter = Field("solved", description="which episodes become sft samples")

    @classmethod
    def parse(cls, format: str, **given: Any) -> ExportOptions:
        """The options for `format` from those given (None: not given). Refuses unknown values,
        options the format does not read, and combinations that would mislabel samples."""
        given = {k: v for k, v in given.items() if v is not None}
        for key, value in {"format": format, **given}.items():
            if key in CHOICES and value not in CHOICES[key]:
                raise ExportError(
                    f"--{key} {value!r} is not one of {', '.join(CHOICES[key])}",
                )
        extra = sorted(set(given) - APPLIES[format])
        if extra:
            reads = ", ".join(f"--{k}" for k in sorted(APPLIES[format]))
            raise ExportError(
                f"the {format} format does not read {', '.join('--' + k for k in extra)} "
                f"(it reads {reads}); fix: leave {'it' if len(extra) == 1 else 'them'} out"
            )
        if given.get("filter") == "judged" and given.get("instruction", "task") == "task":
            raise ExportError(
                "--filter judged keeps episodes whose relabeled instruction a check accepted; "
                "with --instruction task their samples would pair the task's instruction with "
                "actions that do not carry it out; fix: add --instruction relabeled (or step)"
            )
        try:
            return cls(format=format, **given)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(map(str, problem["loc"]))
            raise ExportError(f"--{where}: {problem['msg']}") from None

    def applied(self) -> dict[str, Any]:
        """The options this format reads, with their values (for the state file and the card)."""
        data = self.model_dump()
        return {"format": self.format} | {k: data[k] for k in sorted(APPLIES[self.format])}
