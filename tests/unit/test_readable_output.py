"""An output a team and its tools can read: files get the permissions the run's umask allows
(not mkstemp's 0600), a part with no rows is one every reader takes, and the dataset card has a
default config. Real files and the real `datasets`, no mocks."""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pyarrow.dataset as pds
import pyarrow.parquet as pq
import pytest
import yaml

from datagen.records import RejectRow
from datagen.sink.manifest import finalize
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import claim_output, parquet_bytes, part_key, write_shard
from tests.helpers import shard_stats


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


def reject(i: int) -> RejectRow:
    return RejectRow(
        run_id="r",
        schema_version="1",
        task_id=f"t{i}",
        episode_id=f"e{i}",
        browser_version="chromium/1",
        stage="task",
        reason="blocked_url",
        detail="x",
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002, 0o077])
def test_files_get_the_permissions_the_umask_allows(tmp_path: Path, mask: int) -> None:
    with umask(mask):
        storage = LocalStorage(tmp_path / "out")
        assert claim_output(storage, "r", {"name": "t"}) is False  # put_new: hard-linked temp
        write_shard(storage, 0, {"rejects": [reject(0)]}, shard_stats(0))  # put: temp file renamed
    files = [p for p in storage.root.rglob("*") if p.is_file()]
    assert len(files) == 6  # _run.json, 4 parts, the marker
    assert {p.name: mode(p) for p in files} == {p.name: 0o666 & ~mask for p in files}
    assert not [p for p in storage.root.rglob(".*")]  # no temp file left behind


def test_a_part_without_rows_has_the_schema_and_no_row_group() -> None:
    data, rows = parquet_bytes("steps", [])
    part = pq.ParquetFile(io.BytesIO(data))
    assert rows == 0 and part.metadata.num_row_groups == 0
    assert b"huggingface" in part.schema_arrow.metadata  # images still typed as Image
    full, _ = parquet_bytes("rejects", [reject(0)])
    assert pq.ParquetFile(io.BytesIO(full)).metadata.num_row_groups == 1


def output_with_an_empty_shard(tmp_path: Path) -> Path:
    """Shard 0 has two rejects, shard 1 nothing at all: every part of shard 1, and the
    episodes/steps/grounding parts of both, have no rows."""
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {"name": "t"})
    write_shard(storage, 0, {"rejects": [reject(0), reject(1)]}, shard_stats(0))
    write_shard(storage, 1, {}, shard_stats(1))
    finalize(storage, [0, 1])
    return storage.root


def test_every_reader_takes_an_output_with_empty_parts(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    duckdb = pytest.importorskip("duckdb")
    out = output_with_an_empty_shard(tmp_path)
    cache = str(tmp_path / "cache")
    glob = str(out / "rejects" / "*.parquet")
    assert (out / part_key("rejects", 1)).stat().st_size > 0  # the empty part is there
    assert pds.dataset(out / "steps", format="parquet").to_table().num_rows == 0
    assert duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchall() == [(2,)]
    # before: DatasetGenerationError (BatchSize must be greater than 0) for any 0-row part
    rejects = datasets.load_dataset("parquet", data_files=glob, split="train", cache_dir=cache)
    assert rejects.num_rows == 2
    by_card = datasets.load_dataset(str(out), "rejects", split="train", cache_dir=cache)
    assert by_card.num_rows == 2


def test_the_card_has_a_default_config_and_none_for_an_empty_table(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = output_with_an_empty_shard(tmp_path)
    card = yaml.safe_load((out / "README.md").read_text().split("---")[1])
    # steps is the default; this output has no steps, so the first table with rows is
    assert card["configs"] == [
        {"config_name": "rejects", "data_files": "rejects/*.parquet", "default": True}
    ]
    assert [c["config_name"] for c in card["dataset_info"]] == ["rejects"]
    assert "| steps | 0 | 2 |" in (out / "README.md").read_text()  # still counted
    # before: "Config name is missing. Please pick one among the available configs"
    loaded = datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == 2 and loaded[0]["reason"] == "blocked_url"
