"""The sink: Parquet parts per shard and table, a completion marker last, a manifest at the end.

    rows of one shard ─► write_shard() ─► <table>/part-<shard>.parquet ×4, then _markers/shard-<n>.json
    all markers        ─► finalize()    ─► _manifest.json, README.md (dataset card)

Exactly-once by construction: part names are deterministic (a retried shard overwrites, never
duplicates), each object is written whole (Storage.put), and a shard counts as done only once
its marker exists; markers are written after every part of the shard.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from datagen import SCHEMA_VERSION, __version__
from datagen.errors import OutputError
from datagen.sink.schema import TABLES, arrow_schema, image_columns
from datagen.sink.storage import Storage

RUN_FILE = "_run.json"
MARKERS = "_markers"
MANIFEST = "_manifest.json"


def part_key(table: str, shard: int) -> str:
    return f"{table}/part-{shard:05d}.parquet"


def marker_key(shard: int) -> str:
    return f"{MARKERS}/shard-{shard:05d}.json"


def parquet_bytes(table: str, rows: Sequence[BaseModel]) -> tuple[bytes, int]:
    """Encode rows of a table with its explicit schema; images stored uncompressed."""
    model = TABLES[table]
    schema = arrow_schema(model)
    arrow = pa.Table.from_pylist([r.model_dump() for r in rows], schema=schema)
    compression: dict[str, str] = {name: "zstd" for name in schema.names}
    for column in image_columns(model):
        compression[column] = "none"  # JPEG/PNG/WebP bytes are compressed already
    sink = io.BytesIO()
    pq.write_table(arrow, sink, compression=compression, row_group_size=256)
    return sink.getvalue(), arrow.num_rows


def write_shard(
    storage: Storage, shard: int, tables: Mapping[str, Sequence[BaseModel]], stats: dict[str, Any]
) -> dict[str, Any]:
    """Write one part per table, then the shard's marker. Returns the marker."""
    files = []
    for table in TABLES:
        data, rows = parquet_bytes(table, tables.get(table, []))
        key = part_key(table, shard)
        storage.put(key, data)
        files.append(
            {
                "table": table,
                "key": key,
                "rows": rows,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    marker = {"shard": shard, "files": files, "stats": stats, "written_at": time.time()}
    storage.put(marker_key(shard), json.dumps(marker, indent=1).encode())
    return marker


def completed_shards(storage: Storage) -> set[int]:
    """Shards whose marker exists: their parts are whole and final."""
    done = set()
    for key in storage.list(MARKERS):
        name = key.rsplit("/", 1)[-1]
        if name.startswith("shard-") and name.endswith(".json"):
            done.add(int(name[len("shard-") : -len(".json")]))
    return done


def claim_output(storage: Storage, run_id: str, pipeline: dict[str, Any]) -> bool:
    """Record the run in the output; True if the same run was started there before (resume).

    A different run's output is never mixed with this one's.
    """
    if storage.exists(RUN_FILE):
        existing = json.loads(storage.get(RUN_FILE))
        if existing.get("run_id") != run_id:
            raise OutputError(
                f"{storage.uri} holds run {existing.get('run_id')} (another pipeline or task list); "
                "fix: choose another output with --output, or delete that folder"
            )
        return True
    foreign = [key for key in storage.list("") if not key.startswith(".")][:3]
    if foreign:
        raise OutputError(
            f"{storage.uri} is not empty and holds no datagen run ({', '.join(foreign)}, ...); "
            "fix: choose an empty or new folder with --output"
        )
    info = {
        "run_id": run_id,
        "schema_version": SCHEMA_VERSION,
        "datagen_version": __version__,
        "pipeline": pipeline,
        "started_at": time.time(),
    }
    storage.put(RUN_FILE, json.dumps(info, indent=1).encode())
    return False


def read_markers(storage: Storage) -> list[dict[str, Any]]:
    return [json.loads(storage.get(marker_key(s))) for s in sorted(completed_shards(storage))]
