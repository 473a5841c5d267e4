"""`datagen export`: a datagen output's committed shards → one training format, incrementally.

    output ─► source.committed ─► state.pending ─► per shard: source.read_shard
           (first: split.plan over all pending shards' episodes and screenshots)
           ─► each group's side + formats.FORMATS[format].build rows
              + failures.failure_rows
           ─► <export>/data/train-part-<shard>.parquet, data/validation-part-<shard>.parquet
              <export>/elements/<split>-part-<shard>.parquet   (grounding's flat view)
              <export>/failures/part-<shard>.parquet
           ─► state.save_state (after each shard) ─► card.dataset_card ─► <export>/README.md

The export folder (`--to`, default `<output>/exports/<format>/`) is a local folder or an s3://
prefix, written through the sink's storage (whole objects only). Shards are independent (a
task's repeats are all in one shard), so an export reads one shard at a time and its memory is
one shard's rows; what the split needs of earlier shards is in the state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from datagen.errors import ExportError
from datagen.export import split as splits
from datagen.export.card import dataset_card, license_of
from datagen.export.failures import FAILURE_SCHEMA, count, failure_rows
from datagen.export.figures import shard_figures
from datagen.export.formats import FORMATS, Built, ExportFormat
from datagen.export.options import ExportOptions
from datagen.export.parquet import parquet_bytes
from datagen.export.places import run_scope
from datagen.export.source import Row, ShardData, committed, part_digests, read_shard, source_run
from datagen.export.split import SPLITS, Split, SplitState
from datagen.export.splitcard import split_summary
from datagen.export.state import (
    STATE_KEY,
    ExportState,
    ShardRecord,
    check_same,
    load_state,
    pending,
    save_state,
)
from datagen.export.synth import by_shard, elsewhere, synth_group
from datagen.sink.storage import Storage, open_storage

CARD = "README.md"
SYNTH_FORMATS = ("sft", "rl")  # the formats that take synthesised tasks (export/synth.py)


@dataclass
class ExportResult:
    """What one `export_output` call did."""

    target: str  # the export folder
    exported: list[int] = field(default_factory=list)  # shards exported by this call
    skipped: int = 0  # committed shards already in the export, as they are
    rows_added: int = 0  # samples written by this call
    state: ExportState | None = None  # the folder's state after it

    def summary(self) -> str:
        """One line: what this call exported, what the folder holds, its failures."""
        assert self.state is not None, "the summary of a finished export"
        totals, fmt = self.state.totals(), self.state.options["format"]
        failures = ", ".join(f"{c} {n}" for c, n in sorted(totals.failures.items())) or "none"
        line = f"{fmt}: {len(self.exported)} shards exported ({self.rows_added} rows), "
        line += f"{self.skipped} already there; {totals.rows} rows in {self.target}; "
        return f"{line}failures: {failures}\n{split_summary(self.state.split)}"


def default_target(source: str, fmt: str) -> str:
    """`<output>/exports/<format>` (beside the run's tables, never among them)."""
    return f"{source.rstrip('/')}/exports/{fmt}"


def export_output(
    source: str,
    options: ExportOptions,
    to: str | None = None,
    endpoint_url: str | None = None,
    on_shard: Callable[[int, int], None] = lambda shard, rows: None,
    license: str | None = None,
) -> ExportResult:
    """Export the committed shards of `source` not exported yet to `to` in `options.format`.
    `on_shard(shard, rows)` is called after each shard is written. `license`: the card's
    licence (None: the one the folder has, `other` for a new one)."""
    license = license_of(license) if license is not None else None
    src = open_storage(source, endpoint_url)
    run = source_run(src)
    target = to or default_target(source, options.format)
    dst = open_storage(target, endpoint_url)
    fmt = FORMATS[options.format]
    state = _state(dst, src.uri, run.run_id, run.schema_version, fmt, options)
    if license is not None:
        state = state.model_copy(update={"license": license})
    markers = {m.shard: m for m in committed(src)}
    todo = pending(state, {s: part_digests(m) for s, m in markers.items()})
    result = ExportResult(target=dst.uri, skipped=len(markers) - len(todo))
    # The split is planned over every pending shard first (a site's tasks are spread over
    # all shards): a first read of their episodes and screenshots only.
    scope = run_scope(run.pipeline)
    tied = {
        s: splits.links(read_shard(src, markers[s], run.run_id, ("episodes", "steps")), scope)
        for s in todo
    }
    chosen = splits.plan(tied.values(), state.split)
    state = state.model_copy(update={"split": splits.with_clusters(state.split, chosen)})
    synthesised: dict[int, list[Row]] = {}
    shard_of: dict[str, int] = {}
    if options.format in SYNTH_FORMATS:  # each (start URL, effect) once, over every export
        synthesised, shard_of = by_shard(src, frozenset(markers) - frozenset(todo))
    rollouts: dict[str, tuple[Row, list[Row]]] = {}  # rl groups' rollouts of other shards
    if options.format == "rl":
        mine = {s: synthesised.get(s, []) for s in todo}
        rollouts = elsewhere(src, markers, run.run_id, mine, shard_of)
    for shard in todo:
        data = read_shard(src, markers[shard], run.run_id)
        data.tasks = synthesised.get(shard, [])
        data.rollouts = rollouts
        sides = {g: chosen.sides[g] for g in tied[shard].groups}
        sides |= synth_sides(data, sides)
        split = splits.record(state.split, tied[shard], chosen)
        tables, tally = _tables(fmt.build(data, options))
        record = _write_shard(dst, data, tables, fmt, sides, tally)
        for key in set(state.shards[shard].files if shard in state.shards else ()) - set(
            record.files
        ):
            dst.delete(key)  # a redone shard that now gives no rows of that kind or split
        state = state.with_shard(shard, record, split)
        save_state(dst, state)
        result.exported.append(shard)
        result.rows_added += record.rows
        on_shard(shard, record.rows)
    dst.put(CARD, dataset_card(state, fmt, run).encode())
    result.state = state
    return result


def _state(
    dst: Storage,
    source: str,
    run_id: str,
    schema_version: str,
    fmt: ExportFormat,
    options: ExportOptions,
) -> ExportState:
    """The folder's state, checked against this export; a new one for an empty folder."""
    applied = fmt.applied(options)
    state = load_state(dst)
    if state is not None:
        check_same(state, run_id, applied)
        _check_files(dst, state, fmt)
        return state
    foreign = [k for k in dst.list("") if not k.startswith(".") and k != CARD][:3]
    if foreign:
        raise ExportError(
            f"{dst.uri} is not empty and holds no export ({', '.join(foreign)}, ...; no "
            f"{STATE_KEY}); fix: choose an empty or new folder with --to"
        )
    return ExportState(
        source=source,
        run_id=run_id,
        schema_version=schema_version,
        options=applied,
        split=SplitState(share=options.validation),
    )


def shard_files(fmt: ExportFormat, shard: int) -> set[str]:
    """Every key `_write_shard` may write for `shard` in `fmt`: the only names a state may list."""
    name = f"part-{shard:05d}"
    parts = {f"{config}/{split}-{name}.parquet" for config in fmt.schemas for split in SPLITS}
    return parts | {f"failures/{name}.parquet"}


def _check_files(dst: Storage, state: ExportState, fmt: ExportFormat) -> None:
    """Refuse a state whose shards list files this export never writes: a redone shard's old
    files are deleted by name, and an edited `_export.json` listing `../x` or `/etc/x` would
    otherwise delete them."""
    for shard, record in state.shards.items():
        foreign = sorted(set(record.files) - shard_files(fmt, shard))
        if foreign:
            raise ExportError(
                f"{dst.uri}/{STATE_KEY} lists {foreign[0]!r} for shard {shard}, not a file this "
                "export writes: the state was edited; fix: export into another folder with "
                "--to, or delete that one"
            )


def _tables(built: Built) -> tuple[dict[str, list[Row]], dict[str, int]]:
    """A builder's result as config → rows, and its tally."""
    if isinstance(built, list):
        return {"data": built}, {}
    if isinstance(built, dict):
        return built, {}
    return {"data": built.rows}, dict(built.tally)


def _write_shard(
    dst: Storage,
    data: ShardData,
    tables: dict[str, list[Row]],
    fmt: ExportFormat,
    sides: dict[str, Split],
    tally: dict[str, int],
) -> ShardRecord:
    """Write a shard's rows (each config's split by the side of each row's group) and its
    failures; its record for the state."""
    name = f"part-{data.shard:05d}"
    files: list[str] = []
    rows: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for config, schema in fmt.schemas.items():
        for split in SPLITS:
            part = [r for r in tables.get(config, []) if sides.get(r["group_id"], "train") == split]
            if part:  # an empty part breaks `datasets` readers: none is written
                key = f"{config}/{split}-{name}.parquet"
                sizes[f"{config}/{split}"] = _put(dst, key, parquet_bytes(part, schema))
                rows[f"{config}/{split}"] = len(part)
                files.append(key)
    failures = failure_rows(data)
    if failures:
        key = f"failures/{name}.parquet"
        sizes["failures/train"] = _put(dst, key, parquet_bytes(failures, FAILURE_SCHEMA))
        rows["failures/train"] = len(failures)
        files.append(key)
    counted = count(failures)
    samples = tables.get("data", [])
    return ShardRecord(
        parts=part_digests(data.marker),
        files=tuple(files),
        rows=len(samples),
        tables=rows,
        bytes=sizes,
        source_rows={f.table: f.rows for f in data.marker.files},
        # its own: an rl group's rollouts of other shards count there, each episode once
        episodes_kept=len(_episodes(samples) & {e["episode_id"] for e in data.episodes}),
        failures=counted["by_category"],
        rejected_by_reason=counted["rejected_by_reason"],
        figures=shard_figures(data, fmt.count(data, samples)),
        tally=tally,
        exported_at=time.time(),
    )


def synth_sides(data: ShardData, sides: dict[str, Split]) -> dict[str, Split]:
    """Each synthesised task's rl group on the split side of the episode it came from (its
    screens are that episode's: never on both sides)."""
    groups = {e["episode_id"]: e["group_id"] for e in data.episodes}
    return {synth_group(t): sides.get(groups.get(t["episode_id"], ""), "train") for t in data.tasks}


def _put(dst: Storage, key: str, data: bytes) -> int:
    dst.put(key, data)
    return len(data)


def _episodes(rows: list[Row]) -> set[str]:
    """The episodes rows came from (both sides of a pair)."""
    keys = ("episode_id", "chosen_episode_id", "rejected_episode_id")
    return {r[k] for r in rows for k in keys if r.get(k)}
