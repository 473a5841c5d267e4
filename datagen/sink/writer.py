"""The sink: Parquet parts per shard and table, a completion marker last, a manifest at the end.

    rows of one shard ─► write_shard() ─► <table>/part-<shard>.parquet (×4; ×5 with tasks), then _markers/shard-<n>.json
    all markers        ─► finalize()    ─► _manifest.json, README.md (dataset card)

Exactly-once by construction: part names are deterministic (a retried shard overwrites, never
duplicates), each object is written whole (Storage.put), and a shard counts as done only once
its marker exists; markers are written after every part of the shard. A marker records each
part's size and sha256, which `sink.verify` checks.

The output is claimed by one run (`_run.json`, created exclusively): a different run is refused,
a run of the same pipeline resumes it.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from datagen.errors import OutputError
from datagen.records import ShardResult
from datagen.sink.models import Marker, PartFile, RunInfo, to_json
from datagen.sink.schema import ADDED_TABLES, TABLES, arrow_schema, compression, image_columns
from datagen.sink.storage import Storage, control_json, read_small
from datagen.versions import SCHEMA_VERSION, __version__

RUN_FILE = "_run.json"
MARKERS = "_markers"
MANIFEST = "_manifest.json"
# Row groups (measured in docs/output.md, "Row groups"): tables with images get small ones, so
# that the Hub's dataset viewer (it refuses row groups over ~300 MB) and `datasets` streaming
# (it reads a row group at a time) can open them; the other tables larger ones.
ROW_GROUP_ROWS = 256
IMAGE_ROW_GROUP_ROWS = 100
IMAGE_ROW_GROUP_BYTES = 32_000_000  # of image bytes: a 2x PNG screenshot can near its raw 12 MB
# Control files are read with a bound (`storage.read_small`): a marker is 5 part entries and a
# shard's stats (a few KB; its reject reasons are a few dozen names); `_run.json` holds the
# pipeline, whose file is at most loading.MAX_BYTES (its JSON a little more, with defaults).
MAX_MARKER_BYTES = 1 << 20
MAX_RUN_BYTES = 16 << 20


def part_key(table: str, shard: int) -> str:
    return f"{table}/part-{shard:05d}.parquet"


def marker_key(shard: int) -> str:
    return f"{MARKERS}/shard-{shard:05d}.json"


def parquet_bytes(table: str, rows: Sequence[BaseModel]) -> tuple[bytes, int]:
    """Encode rows of a table with its explicit schema; images stored uncompressed, in row
    groups of `row_group_sizes`."""
    model = TABLES[table]
    schema = arrow_schema(model)
    arrow = pa.Table.from_pylist([r.model_dump() for r in rows], schema=schema)
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema, compression=compression(model)) as writer:
        # No rows: a part with the schema and no row group at all. `write_table` would write
        # one row group of 0 rows, and `datasets` reads each row group in batches of its row
        # count: "BatchSize must be greater than 0", for the whole table. A part without row
        # groups it skips; pyarrow, DuckDB and Polars read it as 0 rows.
        start = 0
        for size in row_group_sizes(arrow, image_columns(model)):
            writer.write_table(arrow.slice(start, size), row_group_size=size)
            start += size
    return sink.getvalue(), arrow.num_rows


def row_group_sizes(arrow: pa.Table, images: Sequence[str]) -> list[int]:
    """Rows per row group: ROW_GROUP_ROWS without images; with them at most
    IMAGE_ROW_GROUP_ROWS rows and IMAGE_ROW_GROUP_BYTES of image bytes (at least one row)."""
    rows = arrow.num_rows
    if not images:
        return [min(ROW_GROUP_ROWS, rows - at) for at in range(0, rows, ROW_GROUP_ROWS)]
    weights = [0] * rows
    for column in images:
        lengths = pc.binary_length(pc.struct_field(arrow.column(column), "bytes"))
        weights = [w + (n or 0) for w, n in zip(weights, lengths.to_pylist(), strict=True)]
    sizes: list[int] = []
    count = held = 0
    for weight in weights:
        if count and (count == IMAGE_ROW_GROUP_ROWS or held + weight > IMAGE_ROW_GROUP_BYTES):
            sizes.append(count)
            count = held = 0
        count, held = count + 1, held + weight
    return [*sizes, count] if count else sizes


def write_shard(
    storage: Storage, shard: int, tables: Mapping[str, Sequence[BaseModel]], stats: ShardResult
) -> Marker:
    """Write one part per table, then the shard's marker. Returns the marker. A table added
    since the first schema (ADDED_TABLES: `tasks`) gets a part only when `tables` has it (the
    stage that fills it is on): an output without it reads and writes as earlier ones did."""
    files = []
    for table in TABLES:
        if table in ADDED_TABLES and table not in tables:
            continue
        data, rows = parquet_bytes(table, tables.get(table, []))
        key = part_key(table, shard)
        storage.put(key, data)
        digest = hashlib.sha256(data).hexdigest()
        files.append(PartFile(table=table, key=key, rows=rows, bytes=len(data), sha256=digest))
    marker = Marker(shard=shard, files=tuple(files), stats=stats, written_at=time.time())
    storage.put(marker_key(shard), to_json(marker))
    return marker


SHA256 = re.compile(r"^[0-9a-f]{64}$")
FILE_FIELDS = tuple(PartFile.model_fields)


def read_marker(storage: Storage, shard: int) -> Marker:
    """The shard's marker, read with a bound (MAX_MARKER_BYTES) and checked (`parse_marker`);
    ValueError saying what is off, OSError or the store's error when it cannot be read."""
    return parse_marker(read_small(storage, marker_key(shard), MAX_MARKER_BYTES), shard)


def parse_marker(raw: bytes, shard: int) -> Marker:
    """A marker's JSON, checked for the shape `write_shard` gives it: one file per table at its
    own shard's part key (tables in ADDED_TABLES may be absent: markers from before them), with rows, bytes and a sha256, and the shard's stats, its numbers
    finite and not negative (JSON's `Infinity` and `NaN` are refused) and `written_at` no later
    than now (a clock ahead of this one: now). Raises ValueError saying what is off."""
    try:
        data = control_json(raw)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, nesting
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("shard") != shard:
        raise ValueError(f"not the marker of shard {shard}")
    files, stats = data.get("files"), data.get("stats")
    if not isinstance(files, list) or not isinstance(stats, dict):
        raise ValueError("no `files` list or no `stats`")
    for f in map(_part_file, files):
        if f.table not in TABLES or f.key != part_key(f.table, shard):
            raise ValueError(f"a file entry names {f.key!r} for table {f.table!r}")
        if f.rows < 0 or f.bytes < 0 or not SHA256.match(f.sha256):
            raise ValueError(f"bad rows, bytes or sha256 for {f.key}")
    tables = sorted(f["table"] for f in files)
    if len(set(tables)) != len(tables) or set(TABLES) - ADDED_TABLES - set(tables):
        raise ValueError(f"files for {tables}, not one per table")
    try:
        marker = Marker.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"not a marker's shape: {_first_error(exc)}") from None
    for name, value in [("written_at", marker.written_at), *marker.stats.model_dump().items()]:
        if isinstance(value, int | float) and not (0 <= value < math.inf):
            raise ValueError(f"{'' if name == 'written_at' else 'stats.'}{name} is {value}")
    if marker.written_at > time.time():
        return marker.model_copy(update={"written_at": time.time()})
    return marker


def _part_file(entry: object) -> PartFile:
    try:
        return PartFile.model_validate(entry)
    except ValidationError:
        raise ValueError(f"a file entry lacks {', '.join(FILE_FIELDS)}: {entry!r:.200}") from None


def _first_error(exc: ValidationError) -> str:
    problem = exc.errors()[0]
    where = ".".join(map(str, problem["loc"]))
    return f"{where}: {problem['msg']}" if where else problem["msg"]


def completed_shards(storage: Storage) -> set[int]:
    """Shards whose marker exists: their parts are whole and final."""
    return set(marker_keys(storage))


MARKER_NAME = re.compile(rf"^{MARKERS}/shard-(\d+)\.json$")


def marker_keys(storage: Storage) -> dict[int, str]:
    """Shard → its marker's key, from one listing of `_markers/`."""
    found = (MARKER_NAME.match(key) for key in storage.list(MARKERS))
    return {int(m.group(1)): m.group(0) for m in found if m}


def claim_output(storage: Storage, run_id: str, pipeline: dict[str, Any]) -> bool:
    """Record the run in the output; True if the same run was started there before (resume).

    A different run's output is never mixed with this one's. The claim is atomic
    (`Storage.put_new`): of runs claiming an empty output at the same moment exactly one gets
    it; the others read its `_run.json` and resume (the same run) or are refused.
    """
    existing = read_run(storage)
    if existing is None:
        foreign = [key for key in storage.list("") if not key.startswith(".")][:3]
        if foreign and not storage.exists(RUN_FILE):
            raise OutputError(
                f"{storage.uri} is not empty and holds no datagen run ({', '.join(foreign)}, ...); "
                "fix: choose an empty or new folder with --output"
            )
        info = RunInfo(
            run_id=run_id,
            schema_version=SCHEMA_VERSION,
            datagen_version=__version__,
            pipeline=pipeline,
            started_at=time.time(),
        )
        if not foreign and storage.put_new(RUN_FILE, to_json(info)):
            return False
        existing = read_run(storage)  # another run claimed it first, a moment ago
    if existing is None or existing.run_id != run_id:
        raise OutputError(
            f"{storage.uri} holds run {existing and existing.run_id} (another pipeline or task "
            "list); fix: choose another output with --output, or delete that folder"
        )
    return True


def read_run(storage: Storage) -> RunInfo | None:
    """The output's `_run.json`, None when there is none. OutputError when it is not one
    datagen wrote."""
    if not storage.exists(RUN_FILE):
        return None
    try:
        info = RunInfo.model_validate_json(read_small(storage, RUN_FILE, MAX_RUN_BYTES))
    except (ValidationError, ValueError) as exc:
        why = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise OutputError(
            f"{storage.uri}/{RUN_FILE} is not a datagen run's claim ({why}); "
            "fix: choose another output with --output, or delete that folder"
        ) from None
    if not 0 <= info.started_at < math.inf:
        raise OutputError(
            f"{storage.uri}/{RUN_FILE} is not a datagen run's claim (started_at is "
            f"{info.started_at}); fix: choose another output with --output, or delete that folder"
        )
    return info


def read_markers(storage: Storage) -> list[Marker]:
    """Every readable marker, in shard order. A marker that is not JSON of the right shape is
    skipped with a warning naming it: its shard counts as not committed (`datagen verify`
    reports it, a rerun redoes the shard)."""
    markers = []
    for shard in sorted(completed_shards(storage)):
        key = marker_key(shard)
        try:
            markers.append(read_marker(storage, shard))
        except ValueError as exc:
            warnings.warn(
                f"shard {shard} skipped: its marker {key} in {storage.uri} is unreadable "
                f"({exc}); `datagen verify` checks the output, a rerun redoes the shard",
                UnreadableMarker,
                stacklevel=2,
            )
    return markers


class UnreadableMarker(UserWarning):
    """A completion marker that is not JSON of the shape the sink writes (truncated, edited)."""
