"""Exports of a datagen output to the formats trainers read (`datagen export`).

    output (committed shards) ─► export_output(source, parse_options(format, …), to)
        ─► <to>/data/<split>-part-<shard>.parquet  sft | grounding | rl | pairs samples,
                                                   split train / validation
           <to>/elements/<split>-part-<shard>.parquet  grounding: one row per element
           <to>/failures/part-<shard>.parquet      every non-solved episode and rejected task
           <to>/_export.json                       the shards exported, the split so far
           <to>/README.md                          the dataset card

Modules: `choices` (the names of every choice, light enough for the CLI), `formats` (the
registry: one object per format, its options, builder, tables and card text), `options` (the
options model and the checks any format meets), `source` (committed shards, defaults for older
outputs), `coords` (pixels ↔ norm1000 ↔ norm01), `actions` (tool-call and pyautogui syntax),
`failures` (failure categories), one module per format (`sft`, `grounding`, `rl`, `pairs`, with
`trajectory` shared by the last two), `split` (train / validation by cluster, with `phash` for
near-duplicate screenshots), `parquet` (image features, row groups), `figures` (the card's
counts), `state`, `card`, and `run` (the loop). It reads and writes through `sink`'s storage
and readers only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datagen.export.formats import FORMATS, ExportFormat, export_format, parse_options
    from datagen.export.options import ExportOptions
    from datagen.export.run import ExportResult, default_target, export_output

# Loaded on first use: `datagen.export.choices` (the CLI's option types) must not bring pyarrow.
_LAZY = {
    "FORMATS": "formats",
    "ExportFormat": "formats",
    "export_format": "formats",
    "parse_options": "formats",
    "ExportOptions": "options",
    "ExportResult": "run",
    "default_target": "run",
    "export_output": "run",
}

__all__ = [
    "FORMATS",
    "ExportFormat",
    "ExportOptions",
    "ExportResult",
    "default_target",
    "export_format",
    "export_output",
    "parse_options",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
