"""The names of every export choice, once: `--format`, `--coords`, `--syntax`, `--instruction`,
`--filter`. Plain Literals, so that the CLI can type its options with them without importing
pyarrow or pydantic (its help lists the values from here), and mypy catches a misspelt one
anywhere (the options model, the format registry, the samples' writers).

    choices ─► options.ExportOptions (fields) ─► formats.FORMATS (keys) ─► cli (option types)
"""

from __future__ import annotations

from typing import Literal, get_args

Format = Literal["sft", "grounding", "rl", "pairs"]
# what `datagen export --format` takes: the training formats, and a task list (export/tasks.py)
Output = Literal["sft", "grounding", "rl", "pairs", "tasks"]
Coords = Literal["pixels", "qwen25vl", "norm1000", "norm01"]
Syntax = Literal["tool", "code", "uitars"]
Instruction = Literal["task", "relabeled", "step"]
Filter = Literal["solved", "judged", "all"]

# option → its values, in the order help and docs list them
CHOICES: dict[str, tuple[str, ...]] = {
    "format": get_args(Format),
    "coords": get_args(Coords),
    "syntax": get_args(Syntax),
    "instruction": get_args(Instruction),
    "filter": get_args(Filter),
}
