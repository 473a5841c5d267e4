"""Row groups of the sink's Parquet parts: small for tables with images (at most
IMAGE_ROW_GROUP_ROWS rows and IMAGE_ROW_GROUP_BYTES of image bytes), ROW_GROUP_ROWS for the
others, as the written files' own metadata says."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest

from bench.sink import rows
from datagen.records import ImageData, StepRow
from datagen.sink import writer
from datagen.sink.writer import parquet_bytes


def groups(data: bytes) -> list[int]:
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def steps(count: int, image_bytes: int) -> list[StepRow]:
    step = rows(1, 0)[0][0]
    return [
        step.model_copy(update={"step_index": i, "screenshot": ImageData(bytes=b"x" * image_bytes)})
        for i in range(count)
    ]


def test_image_tables_in_small_row_groups() -> None:
    data, written = parquet_bytes("steps", steps(250, 10))
    assert written == 250 and groups(data) == [100, 100, 50]
    assert [r["step_index"] for r in pq.read_table(io.BytesIO(data)).to_pylist()] == list(
        range(250)
    )  # every row once, in order


def test_image_bytes_cap_a_row_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer, "IMAGE_ROW_GROUP_BYTES", 1000)
    assert groups(parquet_bytes("steps", steps(10, 300))[0]) == [3, 3, 3, 1]
    assert groups(parquet_bytes("steps", steps(2, 5000))[0]) == [1, 1]  # one row at least


def test_other_tables_and_empty_parts() -> None:
    grounding = rows(2, 300)[1]
    assert groups(parquet_bytes("grounding", grounding)[0]) == [256, 256, 88]
    assert groups(parquet_bytes("steps", [])[0]) == []  # no row group at all
