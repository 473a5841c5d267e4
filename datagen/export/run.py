"""`datagen export`: a datagen output's committed shards → one training format, incrementally.

    output ─► source.committed ─► state.pending ─► per shard: source.read_shard
           ─► <format>_rows + failures.failure_rows ─► <export>/data/part-<shard>.parquet (+ .jsonl)
                                                      <export>/failures/part-<shard>.parquet
           ─► state.save_state (after each shard) ─► card.dataset_card ─► <export>/README.md

The export folder (`--to`, default `<output>/exports/<format>/`) is a local folder or an s3://
prefix, written through the sink's storage (whole objects only). Shards are independent (a
task's repeats are all in one shard), so an export reads one shard at a time and its memory is
one shard's rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from datagen.errors import ExportError
from datagen.export import grounding, pairs, rl, sft
from datagen.export.card import dataset_card
from datagen.export.failures import FAILURE_SCHEMA, count, failure_rows
from datagen.export.options import ExportOptions
from datagen.export.parquet import jsonl_bytes, parquet_bytes
from datagen.export.source import Row, ShardData, committed, part_digests, read_shard, source_run
from datagen.export.state import (
    STATE_KEY,
    ExportState,
    ShardRecord,
    check_same,
    load_state,
    pending,
    save_state,
)
from datagen.sink.storage import Storage, open_storage

Builder = Callable[[ShardData, ExportOptions], list[Row]]
# format → (its rows, its schema, the columns of its JSONL companion: None for none)
FORMATS: dict[str, tuple[Builder, pa.Schema, list[str] | None]] = {
    "sft": (sft.sft_rows, sft.SCHEMA, sft.JSONL_COLUMNS),
    "grounding": (grounding.grounding_rows, grounding.SCHEMA, None),
    "rl": (rl.rl_rows, rl.SCHEMA, None),
    "pairs": (pairs.pair_rows, pairs.SCHEMA, None),
}
CARD = "README.md"


@dataclass
class ExportResult:
    """What one `export_output` call did."""

    target: str  # the export folder
    exported: list[int] = field(default_factory=list)  # shards exported by this call
    skipped: int = 0  # committed shards already in the export, as they are
    rows_added: int = 0  # samples written by this call
    state: ExportState | None = None  # the folder's state after it


def default_target(source: str, fmt: str) -> str:
    """`<output>/exports/<format>` (beside the run's tables, never among them)."""
    return f"{source.rstrip('/')}/exports/{fmt}"


def export_output(
    source: str,
    options: ExportOptions,
    to: str | None = None,
    endpoint_url: str | None = None,
    on_shard: Callable[[int, int], None] = lambda shard, rows: None,
) -> ExportResult:
    """Export the committed shards of `source` not exported yet to `to` in `options.format`.
    `on_shard(shard, rows)` is called after each shard is written."""
    src = open_storage(source, endpoint_url)
    run = source_run(src)
    target = to or default_target(source, options.format)
    dst = open_storage(target, endpoint_url)
    state = _state(dst, src.uri, run.run_id, run.schema_version, options)
    markers = {m.shard: m for m in committed(src)}
    todo = pending(state, {s: part_digests(m) for s, m in markers.items()})
    result = ExportResult(target=dst.uri, skipped=len(markers) - len(todo))
    build, schema, jsonl = FORMATS[options.format]
    for shard in todo:
        data = read_shard(src, markers[shard], run.run_id)
        record = _write_shard(dst, data, build(data, options), schema, jsonl)
        for key in set(state.shards[shard].files if shard in state.shards else ()) - set(
            record.files
        ):
            dst.delete(key)  # a redone shard that now gives no rows of that kind
        state = state.with_shard(shard, record)
        save_state(dst, state)
        result.exported.append(shard)
        result.rows_added += record.rows
        on_shard(shard, record.rows)
    dst.put(CARD, dataset_card(state, schema).encode())
    result.state = state
    return result


def _state(
    dst: Storage, source: str, run_id: str, schema_version: str, options: ExportOptions
) -> ExportState:
    """The folder's state, checked against this export; a new one for an empty folder."""
    applied = options.applied()
    state = load_state(dst)
    if state is not None:
        check_same(state, run_id, applied)
        return state
    foreign = [k for k in dst.list("") if not k.startswith(".") and k != CARD][:3]
    if foreign:
        raise ExportError(
            f"{dst.uri} is not empty and holds no export ({', '.join(foreign)}, ...; no "
            f"{STATE_KEY}); fix: choose an empty or new folder with --to"
        )
    return ExportState(source=source, run_id=run_id, schema_version=schema_version, options=applied)


def _write_shard(
    dst: Storage, data: ShardData, rows: list[Row], schema: pa.Schema, jsonl: list[str] | None
) -> ShardRecord:
    """Write a shard's rows and failures; its record for the state."""
    name = f"part-{data.shard:05d}"
    files: list[str] = []
    sizes: dict[str, int] = {}
    if rows:
        sizes["data"] = _put(dst, f"data/{name}.parquet", parquet_bytes(rows, schema))
        files.append(f"data/{name}.parquet")
        if jsonl is not None:
            dst.put(f"data/{name}.jsonl", jsonl_bytes(rows, jsonl))
            files.append(f"data/{name}.jsonl")
    failures = failure_rows(data)
    if failures:
        sizes["failures"] = _put(
            dst, f"failures/{name}.parquet", parquet_bytes(failures, FAILURE_SCHEMA)
        )
        files.append(f"failures/{name}.parquet")
    counted = count(failures)
    return ShardRecord(
        parts=part_digests(data.marker),
        files=tuple(files),
        rows=len(rows),
        bytes=sizes,
        source_rows={f.table: f.rows for f in data.marker.files},
        episodes_kept=len(_episodes(rows)),
        failures=counted["by_category"],
        rejected_by_reason=counted["rejected_by_reason"],
        exported_at=time.time(),
    )


def _put(dst: Storage, key: str, data: bytes) -> int:
    dst.put(key, data)
    return len(data)


def _episodes(rows: list[Row]) -> set[str]:
    """The episodes rows came from (both sides of a pair)."""
    keys = ("episode_id", "chosen_episode_id", "rejected_episode_id")
    return {r[k] for r in rows for k in keys if r.get(k)}
