"""Integrity of committed output on local disk: what the markers record, what `verify_output`
finds when parts are altered, truncated, swapped or deleted and markers truncated, and how
readers and `finalize` treat an unreadable marker. Real files, no mocks."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datagen.errors import OutputError
from datagen.records import RejectRow
from datagen.sink.manifest import finalize
from datagen.sink.read import committed_keys, read_committed
from datagen.sink.storage import LocalStorage
from datagen.sink.verify import distrust, verify_output
from datagen.sink.writer import (
    UnreadableMarker,
    claim_output,
    completed_shards,
    marker_key,
    parse_marker,
    part_key,
    read_markers,
    write_shard,
)
from tests.helpers import shard_stats


def reject(shard: int, i: int) -> RejectRow:
    return RejectRow(
        run_id="r",
        schema_version="1",
        task_id=f"t{shard}-{i}",
        episode_id=f"e{shard}-{i}",
        browser_version="chromium/1",
        stage="task",
        reason="unreachable",
        detail=f"shard {shard} row {i} " + "x" * (shard * 37),
    )


def output(tmp_path: Path, shards: int = 7) -> LocalStorage:
    """An output with `shards` committed shards, each with a distinct `rejects` part."""
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {"name": "t"})
    for shard in range(shards):
        rows = [reject(shard, i) for i in range(shard + 1)]
        write_shard(storage, shard, {"rejects": rows}, shard_stats(shard, tasks=shard + 1))
    return storage


def flip_byte(path: Path, offset: int = 40) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_markers_record_each_parts_size_and_sha256(tmp_path: Path) -> None:
    storage = output(tmp_path, shards=2)
    for marker in read_markers(storage):
        assert len(marker.files) == 4
        for f in marker.files:
            data = (storage.root / f.key).read_bytes()
            assert f.bytes == len(data) and f.sha256 == hashlib.sha256(data).hexdigest()
    report = verify_output(storage)
    assert report.ok and report.shards == 2 and report.parts == 8
    assert list(report.lines())[-1].startswith("ok: 2 shards, 8 parts verified (sha256")


def test_verify_names_every_kind_of_damage(tmp_path: Path) -> None:
    storage = output(tmp_path)
    root = storage.root
    rejects = {s: root / part_key("rejects", s) for s in range(7)}
    flip_byte(rejects[0])  # same size: only the sha256 finds it
    rejects[1].write_bytes(rejects[1].read_bytes()[:-100])  # truncated
    two, three = rejects[2].read_bytes(), rejects[3].read_bytes()
    rejects[2].write_bytes(three)  # two shards' parts swapped
    rejects[3].write_bytes(two)
    rejects[4].unlink()  # deleted
    marker = root / marker_key(5)
    marker.write_bytes(marker.read_bytes()[:50])  # a truncated marker
    storage.put(part_key("steps", 9), b"a part of a shard that never committed")

    report = verify_output(storage)
    kinds = {shard: [p.kind for p in problems] for shard, problems in report.by_shard().items()}
    assert kinds == {
        0: ["altered"],
        1: ["truncated"],
        2: ["swapped"],
        3: ["swapped"],
        4: ["missing"],
        5: ["unreadable marker"],
    }
    assert report.uncommitted == [part_key("steps", 9)]
    text = "\n".join(report.lines())
    assert "shard 2: rejects/part-00002.parquet: swapped: holds shard 3's rejects part" in text
    assert "shard 5: _markers/shard-00005.json: unreadable marker: not JSON" in text
    assert "shard 0: rejects/part-00000.parquet: altered: sha256" in text
    assert "note: 1 part not committed by any marker (steps/part-00009.parquet)" in text
    assert text.splitlines()[-1].startswith("FAILED: 6 problems in 6 of 7 shards (sha256)")

    sizes = verify_output(storage, full=False)  # what a rerun checks: no downloads
    kinds = {shard: [p.kind for p in problems] for shard, problems in sizes.by_shard().items()}
    assert kinds == {
        1: ["truncated"],
        2: ["size mismatch"],  # shard 3's part is larger
        3: ["truncated"],
        4: ["missing"],
        5: ["unreadable marker"],
    }

    assert distrust(storage, report) == {
        s: "; ".join(str(p) for p in problems) for s, problems in report.by_shard().items()
    }
    assert completed_shards(storage) == {6}  # readers stop trusting the damaged shards
    assert verify_output(storage).ok


def test_readers_and_finalize_skip_an_unreadable_marker(tmp_path: Path) -> None:
    storage = output(tmp_path, shards=3)
    marker = storage.root / marker_key(1)
    marker.write_bytes(marker.read_bytes()[:-30])
    with pytest.warns(UnreadableMarker, match=r"shard 1 skipped: its marker _markers/shard-00001"):
        assert [m.shard for m in read_markers(storage)] == [0, 2]
    with pytest.warns(UnreadableMarker, match="shard 1"):
        assert committed_keys(storage, "rejects") == [part_key("rejects", s) for s in (0, 2)]
    with pytest.warns(UnreadableMarker, match="shard 1"):
        table = read_committed(str(storage.root), "rejects").to_table()
    assert table.num_rows == 1 + 3
    with pytest.warns(UnreadableMarker, match="shard 1"):
        manifest = finalize(storage, [0, 1, 2])
    assert not manifest.complete and list(manifest.shards.missing) == [1]
    assert not storage.exists(part_key("rejects", 1))  # its parts were not committed


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: b"{", "not JSON"),
        (lambda m: b"\xff\xfe", "not JSON"),
        (lambda m: json.dumps([1]).encode(), "not the marker of shard 4"),
        (lambda m: json.dumps({**m, "shard": 3}).encode(), "not the marker of shard 4"),
        (lambda m: json.dumps({**m, "files": m["files"][:3]}).encode(), "not one per table"),
        (lambda m: json.dumps({**m, "stats": None}).encode(), "no `stats`"),
        (
            lambda m: json.dumps({**m, "files": [{**m["files"][0], "bytes": "9"}]}).encode(),
            "lacks",
        ),
        (
            lambda m: json.dumps(
                {**m, "files": [{**f, "key": f["key"].replace("4", "5")} for f in m["files"]]}
            ).encode(),
            "names 'episodes/part-00005.parquet'",
        ),
        (
            lambda m: json.dumps(
                {**m, "files": [{**f, "sha256": "abc"} for f in m["files"]]}
            ).encode(),
            "bad rows, bytes or sha256",
        ),
    ],
)
def test_a_marker_of_the_wrong_shape_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], bytes], message: str
) -> None:
    storage = LocalStorage(tmp_path)
    marker = write_shard(storage, 4, {}, shard_stats(4))
    written = marker.model_dump(mode="json")
    assert parse_marker(json.dumps(written).encode(), 4) == marker
    with pytest.raises(ValueError, match=message):
        parse_marker(edit(written), 4)


def test_verify_refuses_a_folder_that_is_no_output(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="holds no datagen output"):
        verify_output(LocalStorage(tmp_path))


def test_verify_timing_on_a_larger_output(tmp_path: Path) -> None:
    """A figure, not a limit: sizes only vs sha256 on 50 shards × 4 parts."""
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    for shard in range(50):
        rows = [reject(shard % 7, i) for i in range(50)]
        write_shard(storage, shard, {"rejects": rows}, shard_stats(shard))
    started = time.perf_counter()
    sizes = verify_output(storage, full=False)
    full = verify_output(storage)
    assert sizes.ok and full.ok and full.parts == 200
    print(
        f"verify 50 shards: sizes {sizes.seconds * 1000:.0f} ms, sha256 {full.seconds * 1000:.0f} "
        f"ms ({full.hashed_bytes / 1e6:.2f} MB); both {time.perf_counter() - started:.2f} s"
    )
