"""The one reader of committed parts: every byte a command reads from a part passes here.

    marker's PartFile ─► part_chunks() ─► the part's bytes, from a regular file inside the output
                      ─► read_part()   ─► its size and sha256 checked against the marker, then
                                          parsed: the table's schema, a bound on rows, values
                                          and decoded bytes per row group ─► pyarrow.Table

Used by `read_committed` (and so `inspect`, the run's report and summary), `export`, `verify`
and every rerun's check (`verify_output`). Why each check: an output folder is data others may
have written (a copied dataset, a shared bucket). A part that is a symlink to `/dev/zero` grew
a reader to 7.7 GB; a FIFO hung it; a part of another table's schema printed a traceback; a
30 KB part whose dictionary holds one 100 KB string referenced by every row decodes to GBs.

Parts are read whole into memory, once, and parsed from those bytes: what was hashed is what
is parsed (no second read that could see another file). A part of a datagen run is at most a
shard's rows, as the writer held them in memory itself.

Each failure is a PartError naming the shard, the part and the fix.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datagen.errors import OutputError
from datagen.sink.models import PartFile
from datagen.sink.schema import TABLES, arrow_schema
from datagen.sink.storage import READ_FLAGS, LocalStorage, Storage, under_symlink

CHUNK = 1 << 20
# Per row group. The writer's are ≤ 256 rows, and ≤ 100 rows of ≤ 32 MB of images (one
# larger image alone); these bounds leave room for that and stop what no writer of ours makes.
MAX_ROWS = 100_000
MAX_VALUES = 10_000_000  # leaf values of one column (list columns hold several per row)
MAX_DECODED_BYTES = 1 << 30  # 1 GiB decoded, all columns, dictionaries expanded


class PartError(OutputError):
    """A committed part that cannot be trusted: not a regular file inside the output, not
    the size or sha256 its marker records, not the table's schema, or too large decoded."""

    def __init__(self, uri: str, shard: int, key: str, problem: str) -> None:
        super().__init__(
            f"shard {shard}: {key} in {uri} {problem}; fix: `datagen run <pipeline> --verify` "
            f"redoes the shard (`datagen verify {uri}` lists every problem)"
        )
        self.shard, self.key, self.problem = shard, key, problem


def part_chunks(storage: Storage, key: str, size: int) -> Iterator[bytes]:
    """The bytes of a part (`size`: at most this many), in chunks; ValueError, OSError or the
    store's error when it cannot be read (callers name the shard). A local
    part must be a regular file reached through no symlink (O_NOFOLLOW on the file, lstat on
    every folder below the output's root), and is opened without blocking (a FIFO would)."""
    from datagen.sink.s3 import S3Storage

    if isinstance(storage, LocalStorage):
        yield from _local_chunks(storage.root, key, size)
    elif isinstance(storage, S3Storage):
        obj = storage.client.get_object(Bucket=storage.bucket, Key=storage.prefix + key)
        if int(obj.get("ContentLength", size)) != size:
            raise ValueError(f"is {obj['ContentLength']} bytes, the marker says {size}")
        yield from obj["Body"].iter_chunks(CHUNK)
    else:  # another store (tests): whole objects
        yield storage.get(key)


def _local_chunks(root: Path, key: str, size: int) -> Iterator[bytes]:
    path = root / key
    if under_symlink(root, path):
        if not path.is_symlink():
            raise ValueError("lies under a symlink: not inside the output")
        raise ValueError("is a symlink, not a file inside the output")
    fd = os.open(path, READ_FLAGS)  # O_NOFOLLOW: a symlink put there since is refused too
    with os.fdopen(fd, "rb", buffering=0) as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > size:  # refused from its size: a 3 GB file there is never read
            raise ValueError(f"is {info.st_size} bytes, the marker says {size}")
        read = 0
        while chunk := fh.read(min(CHUNK, size + 1 - read)):
            read += len(chunk)
            if read > size:
                raise ValueError(f"is larger than the {size} bytes its marker records")
            yield chunk


def _kind(mode: int) -> str:
    kinds = {stat.S_ISFIFO: "a FIFO", stat.S_ISCHR: "a character device", stat.S_ISDIR: "a folder"}
    kinds |= {stat.S_ISBLK: "a block device", stat.S_ISSOCK: "a socket"}
    return next((name for test, name in kinds.items() if test(mode)), "not a file")


def part_bytes(storage: Storage, shard: int, part: PartFile) -> bytes:
    """A part's bytes, checked: readable as above, the size and sha256 its marker records."""
    try:
        data = b"".join(part_chunks(storage, part.key, part.bytes))
    except FileNotFoundError:
        raise PartError(storage.uri, shard, part.key, "is missing") from None
    except Exception as exc:  # ValueError from the checks above; OSError; the store's errors
        raise PartError(storage.uri, shard, part.key, _said(exc)) from None
    if len(data) != part.bytes:
        problem = f"is {len(data)} bytes, the marker says {part.bytes}"
        raise PartError(storage.uri, shard, part.key, problem)
    if hashlib.sha256(data).hexdigest() != part.sha256:
        raise PartError(storage.uri, shard, part.key, "is not the part its marker commits (sha256)")
    return data


def read_part(
    storage: Storage, shard: int, part: PartFile, columns: list[str] | None = None
) -> pa.Table:
    """A committed part as a table of its table's schema (only `columns`, if given)."""
    data = part_bytes(storage, shard, part)
    try:
        return parse_part(data, part.table, columns)
    except ValueError as exc:
        raise PartError(storage.uri, shard, part.key, str(exc)) from None


def parse_part(data: bytes, table: str, columns: list[str] | None = None) -> pa.Table:
    """Parquet bytes of a part of `table`, checked before anything is decoded (`check_part`),
    then read (only `columns`, if given). ValueError saying what is off."""
    expected = arrow_schema(TABLES[table])
    parquet = check_part(data, table)
    schema = parquet.schema_arrow
    wanted = columns if columns is not None else expected.names
    present = [name for name in wanted if name in schema.names]
    pieces = []
    for index in range(parquet.metadata.num_row_groups):
        try:
            pieces.append(parquet.read_row_group(index, columns=present))
        except Exception as exc:
            raise ValueError(f"row group {index} does not decode ({_said(exc)})") from None
    read = pa.concat_tables(pieces) if pieces else schema.empty_table().select(present)
    # Columns added to the schema since the part was written (older outputs) read as nulls.
    arrays = [
        read.column(name) if name in present else pa.nulls(read.num_rows, expected.field(name).type)
        for name in wanted
    ]
    chosen = pa.schema([expected.field(name) for name in wanted], metadata=expected.metadata)
    return pa.Table.from_arrays(arrays, schema=chosen)


def check_part(data: bytes | bytearray, table: str) -> pq.ParquetFile:
    """The part opened, once its schema and every row group's bounds are checked: rows, values
    and decoded size with dictionaries counted expanded (nothing else is decoded; `verify`
    calls this alone). ValueError saying what is off."""
    expected = arrow_schema(TABLES[table])
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        schema = parquet.schema_arrow
    except Exception as exc:  # ArrowInvalid, OSError: not Parquet at all
        raise ValueError(f"is not a Parquet file ({_said(exc)})") from None
    problem = _difference(schema, expected)
    if problem:
        raise ValueError(f"does not have the {table} table's schema ({problem})")
    for index in range(parquet.metadata.num_row_groups):
        _check_row_group(data, parquet, index)
    return parquet


def _check_row_group(data: bytes | bytearray, parquet: pq.ParquetFile, index: int) -> None:
    """Refuse a row group whose decoded size is out of bounds, without decoding it: counts
    from the footer, dictionary-encoded columns read as dictionaries (small) and measured as
    they would expand."""
    group = parquet.metadata.row_group(index)
    if group.num_rows > MAX_ROWS:
        raise ValueError(f"row group {index} has {group.num_rows} rows (at most {MAX_ROWS})")
    chunks = [group.column(i) for i in range(group.num_columns)]
    plain = 0
    dictionary: list[str] = []
    for chunk in chunks:
        if chunk.num_values > MAX_VALUES:
            raise ValueError(
                f"row group {index}: column {chunk.path_in_schema} has {chunk.num_values} values "
                f"(at most {MAX_VALUES})"
            )
        if chunk.has_dictionary_page and chunk.physical_type == "BYTE_ARRAY":
            dictionary.append(chunk.path_in_schema)
        else:
            plain += max(chunk.total_uncompressed_size, 0)
    decoded = plain
    if dictionary:
        as_dictionaries = pq.ParquetFile(pa.BufferReader(data), read_dictionary=dictionary)
        tops = sorted({path.split(".")[0] for path in dictionary})
        try:
            held = as_dictionaries.read_row_group(index, columns=tops)
        except Exception as exc:
            raise ValueError(f"row group {index} does not decode ({_said(exc)})") from None
        decoded += sum(_expanded(column) for column in held.columns)
    if decoded > MAX_DECODED_BYTES:
        raise ValueError(
            f"row group {index} decodes to {decoded / 2**20:.0f} MiB (at most "
            f"{MAX_DECODED_BYTES / 2**20:.0f} MiB): a dictionary or compression bomb"
        )


def _expanded(column: pa.ChunkedArray | pa.Array) -> int:
    """Bytes an array takes once every dictionary in it is expanded."""
    if isinstance(column, pa.ChunkedArray):
        return sum(_expanded(chunk) for chunk in column.chunks)
    if isinstance(column, pa.DictionaryArray):
        lengths = pc.binary_length(column.dictionary).take(column.indices)
        return int(pc.sum(lengths).as_py() or 0) + 8 * len(column)
    if isinstance(column, pa.StructArray):
        return sum(_expanded(column.field(i)) for i in range(column.type.num_fields))
    if isinstance(column, pa.ListArray | pa.LargeListArray):
        return _expanded(column.values) + 8 * len(column)
    return int(column.nbytes)


def _difference(got: pa.Schema, expected: pa.Schema) -> str:
    """What in a part's schema is not the table's ("" when nothing): a column the table does
    not have, or one of another type. A column missing is no difference: it was added to the
    schema after the part was written (columns are only ever added)."""
    extra = [n for n in got.names if n not in expected.names]
    if extra:
        return f"a column {extra[0]!r} the table does not have"
    for name in got.names:
        have, want = got.field(name).type, expected.field(name).type
        if not have.equals(want):
            return f"column {name} is {have}, not {want}"
    return ""


def _said(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text if isinstance(exc, ValueError) and text else f"{type(exc).__name__}: {text}"
