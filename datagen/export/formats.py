"""The export formats, one object each: the registry that `datagen export`, the CLI's choices,
the export loop and the dataset card all read.

    FORMATS["sft"] ─► ExportFormat(name, summary, card text, options it reads, conventions it
                                   writes, builder, tables' schemas, figures, card lines)
    parse_options(format, **given) ─► ExportOptions (checked against the format's options)
    export.run.export_output ─► fmt.build(shard, options) ─► fmt.schemas ─► fmt.count ─► card

A new format is one module with a builder and its schemas, and one entry here: the CLI's
`--format` choices, its help and the card follow (`tests/unit/test_cli_registry.py` checks
that every name reaches `--help`). The names themselves are `options.Format`, one Literal, so
a typo in a key here is a mypy error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, get_args

import pyarrow as pa
from pydantic import ValidationError

from datagen.errors import ExportError
from datagen.export.figures import (
    element_counts,
    element_lines,
    episode_counts,
    sample_lines,
    sft_counts,
    sft_lines,
)
from datagen.export.grounding import SCHEMAS as GROUNDING_SCHEMAS
from datagen.export.grounding import grounding_tables
from datagen.export.options import (
    CHOICES,
    RESIZE,
    Coords,
    ExportOptions,
    Format,
    check_combinations,
    flag,
)
from datagen.export.pairs import SCHEMA as PAIRS_SCHEMA
from datagen.export.pairs import pair_samples
from datagen.export.rl import SCHEMA as RL_SCHEMA
from datagen.export.rl import rl_samples
from datagen.export.sft import SCHEMA as SFT_SCHEMA
from datagen.export.sft import sft_samples
from datagen.export.source import Row, ShardData
from datagen.export.state import ShardRecord


class Tallied(Protocol):
    """A format's rows with its tally of labels and left-out samples (counted into the state)."""

    @property
    def rows(self) -> list[Row]: ...

    @property
    def tally(self) -> Mapping[str, int]: ...


# A format builder's result: its `data` rows, its tables by config, or rows with a tally.
Built = list[Row] | dict[str, list[Row]] | Tallied
Builder = Callable[[ShardData, ExportOptions], Built]
# Options that shape a sample's screenshot and action (every format but grounding reads them).
SAMPLES = frozenset({"coords", "syntax", "min_pixels", "max_pixels", "allow_standin"})
# Every format draws a validation split (export.split), so every format reads --validation.
SPLIT = frozenset({"validation"})


@dataclass(frozen=True)
class ExportFormat:
    """One export format: what it is called and says of itself, the options it reads, and how
    it turns a shard into rows and the card's figures."""

    name: Format
    summary: str  # one line, for `--format`'s help
    card: str  # what a sample is, for the dataset card
    reads: frozenset[str]  # the options it reads besides --format
    build: Builder  # a shard's rows
    schemas: Mapping[str, pa.Schema]  # its tables' schemas by config; `data` is the default
    count: Callable[[ShardData, list[Row]], Counter[str]]  # figures of its `data` rows
    lines: Callable[[ShardRecord], list[str]]  # the card's lines on those figures
    coords: tuple[Coords, ...] = get_args(Coords)  # the conventions it can write

    def options(self, **given: Any) -> ExportOptions:
        """This format's options from those given (None: not given). Refuses unknown values,
        options it does not read, and combinations that would mislabel samples."""
        given = {k: v for k, v in given.items() if v is not None}
        for key, value in given.items():
            if key in CHOICES and value not in CHOICES[key]:
                raise ExportError(f"--{key} {value!r} is not one of {', '.join(CHOICES[key])}")
        extra = sorted(set(given) - self.reads)
        if extra:
            reads = ", ".join(flag(k) for k in sorted(self.reads))
            raise ExportError(
                f"the {self.name} format does not read {', '.join(map(flag, extra))} "
                f"(it reads {reads}); fix: leave {'it' if len(extra) == 1 else 'them'} out"
            )
        try:
            options = ExportOptions(format=self.name, **given)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(map(str, problem["loc"]))
            raise ExportError(f"{flag(where)}: {problem['msg']}") from None
        check_combinations(options, set(given))
        if options.coords not in self.coords:
            writes = " | ".join(self.coords)
            raise ExportError(
                f"the {self.name} format does not write --coords {options.coords} (it writes "
                f"{writes}); fix: export it with --coords pixels and scale points by the "
                "processor's image_grid_thw × 14 / size"
            )
        return options

    def applied(self, options: ExportOptions) -> dict[str, Any]:
        """The options this format reads, with their values (for the state file and the card);
        the resize bounds only with `--coords qwen25vl`, the one convention that reads them."""
        data = options.model_dump()
        keys = sorted(self.reads - ({*RESIZE} if options.coords != "qwen25vl" else set()))
        return {"format": self.name} | {k: data[k] for k in keys}


FORMATS: dict[Format, ExportFormat] = {
    "sft": ExportFormat(
        name="sft",
        summary="chat samples, one per step",
        card="chat samples, one per step: a system turn naming the action tool and the screen "
        "size, a user turn with the screenshot(s), the instruction and the previous actions, an "
        "assistant turn with the action (`messages` + `images`, the layout of TRL's vision SFT "
        "and the Qwen-VL / UI-TARS trainers)",
        reads=SAMPLES | SPLIT | {"history", "instruction", "filter"},
        build=sft_samples,
        schemas={"data": SFT_SCHEMA},
        count=sft_counts,
        lines=sft_lines,
    ),
    "grounding": ExportFormat(
        name="grounding",
        summary="screenshots with their elements",
        card="one row per screenshot with its elements (referring expression → point and box); "
        "config `elements`: the same one element a row, the screenshot by `image_id`",
        reads=SPLIT | {"coords"},
        build=grounding_tables,
        schemas=GROUNDING_SCHEMAS,
        count=element_counts,
        lines=element_lines,
        # Qwen2.5-VL's resize is not applied to grounding rows yet
        coords=tuple(c for c in get_args(Coords) if c != "qwen25vl"),
    ),
    "rl": ExportFormat(
        name="rl",
        summary="rollouts grouped per task, with a reward",
        card="rollouts grouped per task (`group_id`, `sample_index`, `seed`) with `reward` (the "
        "task's check as 1.0 / 0.0, null without a check) and per-step records",
        reads=SAMPLES | SPLIT,
        build=rl_samples,
        schemas={"data": RL_SCHEMA},
        count=episode_counts,
        lines=sample_lines,
    ),
    "pairs": ExportFormat(
        name="pairs",
        summary="step-level preference pairs",
        card="step-level preferences: a step replay verification showed the task needs "
        "(chosen) against a failed repeat's other action from the same state (rejected), in "
        "TRL's vision DPO layout (`prompt`, `chosen`, `rejected`, `images`)",
        reads=SAMPLES | SPLIT,
        build=pair_samples,
        schemas={"data": PAIRS_SCHEMA},
        count=episode_counts,
        lines=sample_lines,
    ),
}
assert tuple(FORMATS) == get_args(Format), "one entry per name of options.Format, in its order"


def export_format(name: str) -> ExportFormat:
    """The format called `name`; ExportError naming the ones there are."""
    for fmt in FORMATS.values():
        if fmt.name == name:
            return fmt
    raise ExportError(f"--format {name!r} is not one of {', '.join(FORMATS)}")


def parse_options(format: str, **given: Any) -> ExportOptions:
    """The options of an export in `format` from those given (None: not given): the CLI and a
    Python caller get the same ExportErrors, each with its fix."""
    return export_format(format).options(**given)
