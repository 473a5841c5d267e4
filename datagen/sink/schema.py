"""Output schemas, derived once from the `*Row` models in records/rows.py.

    records.*Row ─► arrow_schema()  (Parquet, with Hugging Face `datasets` feature metadata)
                 ─► json_schemas()  (schemas/*.schema.json, sync-tested)

`ImageData` fields become `struct<bytes: binary, path: string>` plus the `huggingface` schema
metadata naming them `Image`, which is what makes `datasets` and the Hub viewer decode them.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import BaseModel

from datagen.records import EpisodeRow, GroundingRow, ImageData, RejectRow, StepRow, TaskRow

TABLES: dict[str, type[BaseModel]] = {
    "episodes": EpisodeRow,
    "steps": StepRow,
    "grounding": GroundingRow,
    "rejects": RejectRow,
    "tasks": TaskRow,
}
# Tables added after datagen 0.1.0's four (`tasks`: schema 1.6). An output or marker written
# before one of them has no part of it: it verifies, reads (the table empty), resumes and is
# written back byte for byte as before; every marker has a part of each of the others.
ADDED_TABLES: frozenset[str] = frozenset({"tasks"})
IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
SCALARS: dict[Any, tuple[pa.DataType, str]] = {
    str: (pa.string(), "string"),
    int: (pa.int64(), "int64"),
    float: (pa.float64(), "float64"),
    bool: (pa.bool_(), "bool"),
    bytes: (pa.binary(), "binary"),
}
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"


def _column(annotation: Any) -> tuple[pa.DataType, bool, dict[str, Any]]:
    """Arrow type, whether None is allowed, and `datasets` feature of one field annotation."""
    nullable = False
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported union {annotation}")
        annotation, nullable = inner[0], True
        args = typing.get_args(annotation)
    if annotation is ImageData:
        return IMAGE_TYPE, nullable, {"_type": "Image"}
    if annotation in SCALARS:
        arrow, dtype = SCALARS[annotation]
        return arrow, nullable, {"dtype": dtype, "_type": "Value"}
    origin = typing.get_origin(annotation)
    if origin is tuple and args and Ellipsis not in args:
        item, _, feature = _column(args[0])
        return (
            pa.list_(item, len(args)),
            nullable,
            {"feature": feature, "length": len(args), "_type": "List"},
        )
    if origin in (list, tuple):
        item, _, feature = _column(args[0])
        return pa.list_(item), nullable, {"feature": feature, "_type": "List"}
    raise TypeError(f"no Arrow mapping for {annotation}")


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Parquet schema of a row model, with the `huggingface` features metadata.

    Every Arrow field is nullable: `datasets` applies a metadata feature only when the field
    equals its own (always nullable) rendering, and would otherwise fall back to a plain
    struct instead of an Image. Non-null columns are enforced by the row models instead.
    """
    fields, features = [], {}
    for name, info in model.model_fields.items():
        arrow, _, feature = _column(info.annotation)
        fields.append(pa.field(name, arrow, nullable=True))
        features[name] = feature
    metadata = {"huggingface": json.dumps({"info": {"features": features}})}
    return pa.schema(fields, metadata=metadata)


def image_columns(model: type[BaseModel]) -> list[str]:
    """Columns holding images (already compressed bytes: stored without Parquet compression)."""
    return [
        name
        for name, info in model.model_fields.items()
        if ImageData in (info.annotation, *typing.get_args(info.annotation))
    ]


def compression(model: type[BaseModel]) -> dict[str, str]:
    """Parquet compression per column: zstd, but none for images (JPEG/PNG/WebP bytes are
    compressed already)."""
    codecs = {name: "zstd" for name in model.model_fields}
    return codecs | {column: "none" for column in image_columns(model)}


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of each table's row, as exported to `schemas/`."""
    return {name: model.model_json_schema(mode="serialization") for name, model in TABLES.items()}


def stale_json_schemas(folder: Path = SCHEMA_DIR) -> list[str]:
    """The tables whose `schemas/<table>.schema.json` is missing or not what `json_schemas`
    gives (`datagen schemas --check`)."""
    stale = []
    for name, schema in json_schemas().items():
        path = folder / f"{name}.schema.json"
        if not path.is_file() or json.loads(path.read_text()) != schema:
            stale.append(name)
    return stale


def write_json_schemas(folder: Path = SCHEMA_DIR) -> list[Path]:
    """Regenerate `schemas/<table>.schema.json` (run `datagen schemas` after changing records)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in json_schemas().items():
        path = folder / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
