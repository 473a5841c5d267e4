"""The one reader of committed parts (`sink.checked`): parts that are FIFOs, symlinks to a
device or out of the output, of another schema, or that decode to GBs from a few KB, are
refused quickly with the shard and the fix, by `read_committed`, `verify`, `inspect` and
`export` alike (the last two through the CLI, in a subprocess: a hang would be a timeout)."""

from __future__ import annotations

import functools
import hashlib
import io
import os
import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.errors import OutputError
from datagen.records import RejectRow
from datagen.sink.checked import MAX_DECODED_BYTES, PartError, parse_part
from datagen.sink.models import to_json
from datagen.sink.read import read_committed
from datagen.sink.schema import TABLES, arrow_schema
from datagen.sink.storage import LocalStorage
from datagen.sink.verify import verify_output
from datagen.sink.writer import (
    claim_output,
    marker_key,
    parquet_bytes,
    parse_marker,
    part_key,
    write_shard,
)
from tests.helpers import datagen_calls, shard_stats

KEY = part_key("rejects", 1)


def reject(i: int, detail: str = "x") -> RejectRow:
    return RejectRow(
        run_id="r",
        schema_version="1.3",
        task_id=f"t{i}",
        episode_id=f"e{i}",
        browser_version="chromium/1",
        stage="task",
        reason="unreachable",
        detail=detail,
    )


def output(tmp_path: Path) -> LocalStorage:
    """Two committed shards of a few rejects each."""
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {"name": "t"})
    for shard in (0, 1):
        rows = [reject(10 * shard + i) for i in range(3)]
        write_shard(storage, shard, {"rejects": rows}, shard_stats(shard, tasks=3, rejects=3))
    return storage


def commit(storage: LocalStorage, key: str, data: bytes) -> None:
    """Put `data` at a part's key and rewrite its marker to vouch for it (a forged output:
    the size and sha256 then match, so only the later checks can stop it)."""
    (storage.root / key).write_bytes(data)
    shard = int(key.rsplit("-", 1)[1].split(".")[0])
    marker = parse_marker(storage.get(marker_key(shard)), shard)
    files = tuple(
        f.model_copy(update={"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        if f.key == key
        else f
        for f in marker.files
    )
    storage.put(marker_key(shard), to_json(marker.model_copy(update={"files": files})))


def fifo(storage: LocalStorage) -> None:
    path = storage.root / KEY
    path.unlink()
    os.mkfifo(path)


def dev_zero(storage: LocalStorage) -> None:
    path = storage.root / KEY
    path.unlink()
    path.symlink_to("/dev/zero")


def link_out(storage: LocalStorage) -> None:
    """The same bytes, in a file outside the output, linked in."""
    path = storage.root / KEY
    outside = storage.root.parent / "elsewhere.parquet"
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


def wrong_schema(storage: LocalStorage) -> None:
    data, _ = parquet_bytes("episodes", [])
    commit(storage, KEY, data)


def dictionary_bomb(storage: LocalStorage) -> None:
    commit(storage, KEY, bomb())


@functools.cache  # the same bytes each time: made once per process
def bomb(rows: int = 22_000, size: int = 100_000) -> bytes:
    """A rejects part of a few tens of KB whose `detail` column holds one 100 KB string in
    its dictionary, referenced by every row: 2.2 GB decoded. The table is the one row's
    chunk repeated, never combined: the writer reads it chunk by chunk into one row group,
    the same bytes as from a combined table without making 2.2 GB first."""
    schema = arrow_schema(TABLES["rejects"])
    row = reject(0, "y" * size).model_dump()
    table = pa.Table.from_pylist([row], schema=schema)
    table = pa.concat_tables([table] * rows)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", row_group_size=rows)
    return sink.getvalue()


BAD: dict[str, tuple[Callable[[LocalStorage], None], str]] = {
    "fifo": (fifo, "missing"),
    "dev-zero": (dev_zero, "missing"),
    "link-out": (link_out, "missing"),
    "wrong-schema": (wrong_schema, "malformed"),
    "dictionary-bomb": (dictionary_bomb, "malformed"),
}


@pytest.mark.timeout(120)  # a watchdog, not a measure: a FIFO read whole would hang forever
@pytest.mark.parametrize("name", list(BAD))
def test_read_committed_refuses_a_bad_part_naming_its_shard(tmp_path: Path, name: str) -> None:
    storage = output(tmp_path)
    spoil, _ = BAD[name]
    spoil(storage)
    with pytest.raises(PartError) as caught:
        read_committed(str(storage.root), "rejects")
    assert caught.value.shard == 1 and caught.value.key == KEY
    assert "datagen run <pipeline> --verify" in str(caught.value)


@pytest.mark.parametrize("name", list(BAD))
def test_verify_finds_a_bad_part(tmp_path: Path, name: str) -> None:
    """A part that is a FIFO, a device or a symlink out of the output is no part (`missing`,
    also by sizes alone: what every rerun checks); one that the marker vouches for (forged)
    but no reader takes is `malformed` (sha256 checks only: `run --verify` redoes it)."""
    storage = output(tmp_path)
    spoil, kind = BAD[name]
    spoil(storage)
    report = verify_output(storage)
    assert [(p.shard, p.kind) for p in report.problems] == [(1, kind)]
    sizes = verify_output(storage, full=False)
    assert [p.kind for p in sizes.problems] == ([kind] if kind == "missing" else [])


def test_the_bomb_is_small_and_refused_without_being_decoded() -> None:
    data = bomb()
    assert len(data) < 100_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ValueError, match=r"decodes to .* MiB"):
        parse_part(data, "rejects")
    # not decoded: the process's peak memory grew by a fraction of what decoding would take
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < MAX_DECODED_BYTES / 2**20 / 4


def test_an_older_part_missing_later_columns_reads_with_nulls(tmp_path: Path) -> None:
    storage = output(tmp_path)
    table = pq.read_table(storage.root / KEY).drop_columns(["element_index"])
    sink = io.BytesIO()
    pq.write_table(table, sink)
    commit(storage, KEY, sink.getvalue())
    rows = read_committed(str(storage.root), "rejects").to_table().to_pylist()
    assert len(rows) == 6 and [r["element_index"] is None for r in rows].count(True) == 6


def test_a_part_under_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    storage = output(tmp_path)
    moved = tmp_path / "moved"
    (storage.root / "rejects").rename(moved)
    (storage.root / "rejects").symlink_to(moved)
    with pytest.raises(OutputError, match="symlink"):
        read_committed(str(storage.root), "rejects")
    assert {p.kind for p in verify_output(storage).problems} == {"missing"}


@pytest.fixture(scope="module")
def cli_answers(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, list[subprocess.CompletedProcess[str]]]:
    """`datagen export --format sft` and `datagen inspect` on an output spoiled each way in
    BAD: the ten calls in one subprocess (`datagen_calls`: one import of datagen, not ten)."""
    calls: dict[str, list[list[str]]] = {}
    for name, (spoil, _) in BAD.items():
        storage = output(tmp_path_factory.mktemp(name))
        spoil(storage)
        root = str(storage.root)
        calls[name] = [["export", root, "--format", "sft"], ["inspect", root]]
    # a watchdog: a FIFO read whole would never return
    answers = iter(datagen_calls([args for pair in calls.values() for args in pair], 240))
    return {name: [next(answers) for _ in pair] for name, pair in calls.items()}


@pytest.mark.parametrize("name", list(BAD))
def test_export_and_inspect_stop_with_one_line(
    cli_answers: dict[str, list[subprocess.CompletedProcess[str]]], name: str
) -> None:
    for done in cli_answers[name]:  # export, then inspect
        assert done.returncode != 0, done.stdout
        assert "Traceback" not in done.stderr + done.stdout
        assert "shard 1" in done.stderr or "missing" in done.stderr + done.stdout


def test_inspect_through_the_runner(tmp_path: Path) -> None:
    storage = output(tmp_path)
    wrong_schema(storage)
    result = CliRunner().invoke(app, ["inspect", str(storage.root)])
    assert (result.exit_code == 2 and result.exception is None) or isinstance(
        result.exception, SystemExit
    )
    assert "does not have the rejects table's schema" in " ".join(result.output.split())
