"""Row group size of the image tables: what it costs and what readers gain.

The Hugging Face dataset viewer refuses row groups whose rows take more than 300 MB to read
("Rows from parquet row groups are too big to be read … max=286.10 MiB"), and `datasets`
streaming reads a Parquet file a row group at a time, so the first sample of a file waits for
its whole first row group. Small row groups start faster and stay under the limit; each one
costs a little metadata and per-group encoding work.

Input: the committed `steps` rows of a real run (its real screenshots), e.g. of the demo:

    .venv/bin/datagen run pipelines/demo.yaml -o /tmp/rows-demo
    .venv/bin/python -m bench.row_groups /tmp/rows-demo --sizes 25 50 100 256

For each row group size it writes one Parquet file of those rows the way the sink does (the
steps schema with its `datasets` metadata, zstd, images uncompressed) and prints: the bytes
per row group (on disk and in memory), the file size, the write throughput (MB of rows per
second, best of `--repeats`), the time to read the first row group with pyarrow and the time
to the first 10 rows through `datasets` streaming (images decoded to PIL), each the best of
`--repeats` after one warm-up call.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from datagen.sink.read import read_committed
from datagen.sink.schema import TABLES, compression


def write(table: pa.Table, path: Path, row_group_size: int) -> float:
    """Seconds to write `table` as the sink does, at `row_group_size` rows per group."""
    started = time.perf_counter()
    codecs = compression(TABLES["steps"])
    with pq.ParquetWriter(path, table.schema, compression=codecs) as writer:
        writer.write_table(table, row_group_size=row_group_size)
    return time.perf_counter() - started


def first_group_s(path: Path) -> float:
    started = time.perf_counter()
    pq.ParquetFile(path).read_row_group(0)
    return time.perf_counter() - started


def first_rows_s(path: Path, rows: int = 10) -> float:
    """Seconds from `load_dataset(..., streaming=True)` to `rows` decoded rows."""
    from datasets import load_dataset  # type: ignore[import-untyped]

    started = time.perf_counter()
    stream = load_dataset("parquet", data_files=str(path), split="train", streaming=True)
    for index, row in enumerate(stream):
        assert row["screenshot"].size[0] > 0  # decoded to a PIL image
        if index + 1 == rows:
            break
    return time.perf_counter() - started


def measure(table: pa.Table, folder: Path, size: int, repeats: int) -> dict[str, Any]:
    path = folder / f"steps-{size}.parquet"
    write_s = min(write(table, path, size) for _ in range(repeats))
    meta = pq.ParquetFile(path).metadata
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    on_disk = [sum(g.column(c).total_compressed_size for c in range(g.num_columns)) for g in groups]
    in_memory = [g.total_byte_size for g in groups]
    streamed = [first_rows_s(path) for _ in range(repeats)]
    return {
        "row_group_rows": size,
        "row_groups": len(groups),
        "group_mb_on_disk_mean": round(sum(on_disk) / len(on_disk) / 1e6, 2),
        "group_mb_on_disk_max": round(max(on_disk) / 1e6, 2),
        "group_mb_in_memory_max": round(max(in_memory) / 1e6, 2),
        "file_mb": round(path.stat().st_size / 1e6, 2),
        "write_mb_per_s": round(table.nbytes / 1e6 / write_s, 1),
        "first_group_ms": round(min(first_group_s(path) for _ in range(repeats)) * 1000, 1),
        "first_10_rows_streaming_ms": round(min(streamed) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("output", help="a datagen output (its committed steps are read)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 256])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write results here")
    args = parser.parse_args()
    table = read_committed(args.output, "steps").to_table()
    images = sum(len(s["bytes"]) for s in table.column("screenshot").to_pylist())
    print(
        f"{table.num_rows} step rows, {table.nbytes / 1e6:.1f} MB in Arrow "
        f"({images / table.num_rows / 1e3:.0f} KB screenshots on average)"
    )
    results = []
    first_rows_s(Path(read_committed(args.output, "steps").files[0]))  # imports, caches: warm
    shm = Path("/dev/shm")  # memory-backed when there is one: CPU is measured, not the disk
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        for size in args.sizes:
            result = measure(table, Path(tmp), size, args.repeats)
            results.append(result)
            print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
