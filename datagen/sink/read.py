"""Reading a datagen dataset the safe way: only what the markers commit.

    read_committed(uri, table) ─► pyarrow.dataset.Dataset of committed parts

A shard's parts count only once its marker exists (markers are written after the parts), so
a training job can read while a run is still going, and never sees a half-written shard or a
part that a retry will overwrite. The manifest, written at the end, lists the same files.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pyarrow.dataset as ds
import pyarrow.fs as pafs

from datagen.sink.schema import TABLES, arrow_schema
from datagen.sink.storage import LocalStorage, Storage, open_storage
from datagen.sink.writer import read_markers


def committed_keys(storage: Storage, table: str) -> list[str]:
    """Keys of a table's parts whose shard has a completion marker, in shard order."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; tables: {', '.join(TABLES)}")
    return [f.key for marker in read_markers(storage) for f in marker.files if f.table == table]


def read_committed(uri: str, table: str = "steps", endpoint_url: str | None = None) -> ds.Dataset:
    """The committed rows of one table (`episodes`, `steps`, `grounding`, `rejects`) as a
    pyarrow dataset: `.to_table()`, `.to_batches()`, or hand it to DuckDB/Polars."""
    storage = open_storage(uri, endpoint_url)
    keys = committed_keys(storage, table)
    schema = arrow_schema(TABLES[table])
    if isinstance(storage, LocalStorage):
        return ds.dataset(
            [str(storage.root / key) for key in keys], schema=schema, format="parquet"
        )
    from datagen.sink.s3 import S3Storage

    assert isinstance(storage, S3Storage)
    filesystem = _s3_filesystem(endpoint_url)
    paths = [f"{storage.bucket}/{storage.prefix}{key}" for key in keys]
    return ds.dataset(paths, schema=schema, format="parquet", filesystem=filesystem)


def _s3_filesystem(endpoint_url: str | None) -> pafs.S3FileSystem:
    """pyarrow's S3 client, pointed where boto3 would point (credentials: the AWS chain)."""
    endpoint = (
        endpoint_url or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    )
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    if not endpoint:
        return pafs.S3FileSystem(region=region)
    parts = urlsplit(endpoint)
    return pafs.S3FileSystem(
        endpoint_override=parts.netloc, scheme=parts.scheme or "https", region=region
    )
