"""Control files read with a bound and their types checked (issue 36): a marker, `_run.json`
or a lease made 3 GB (a sparse file: `truncate -s 3G`, no disk used) is refused from its size
before it is read, by `verify`, `inspect` and every reader; `verify` compares a part's size with
its marker's before reading it (a 3 GB part of the wrong size is never read) and streams the
hash; a marker's times and counts must be finite numbers, a lease's fields of their types.

What is read is counted, not timed: the bytes this process read through `read()` (Linux's
`/proc/self/io` rchar) stay far below the files' size, and each test has a generous watchdog.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.errors import OutputError
from datagen.sink.checked import PartError
from datagen.sink.lease import CLAIMS, ShardLeases, parse_holder
from datagen.sink.read import read_committed
from datagen.sink.storage import LocalStorage, read_small
from datagen.sink.verify import verify_output
from datagen.sink.writer import (
    RUN_FILE,
    claim_output,
    marker_key,
    parse_marker,
    part_key,
    read_markers,
    read_run,
    write_shard,
)
from tests.helpers import shard_stats
from tests.unit.test_checked_reader import reject

THREE_GB = 3 << 30
READ_AT_MOST = 64 << 20  # what the tests' own small files and Python's imports may add
IO = Path("/proc/self/io")
pytestmark = pytest.mark.skipif(not IO.exists(), reason="counts reads with /proc/self/io")


def bytes_read() -> int:
    """Bytes this process has read through read() so far (rchar: files, pipes, sockets)."""
    for line in IO.read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def output(tmp_path: Path) -> LocalStorage:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {"name": "x"})
    for shard in (0, 1):
        write_shard(storage, shard, {"rejects": []}, shard_stats(shard))
    return storage


def sparse(path: Path, size: int = THREE_GB) -> None:
    """`truncate -s`: the file says `size` bytes and holds none on disk."""
    os.truncate(path, size)


@pytest.mark.timeout(120)  # a watchdog: read whole, a 3 GB marker took 107 s and 6.2 GB
def test_verify_refuses_a_3gb_marker_from_its_size(tmp_path: Path) -> None:
    storage = output(tmp_path)
    sparse(storage.root / marker_key(1))
    before = bytes_read()
    report = verify_output(storage)
    assert bytes_read() - before < READ_AT_MOST
    [(shard, kind, detail)] = [(p.shard, p.kind, p.detail) for p in report.problems]
    assert (shard, kind) == (1, "unreadable marker")
    assert f"is {THREE_GB:,} bytes, more than the" in detail


@pytest.mark.timeout(120)  # a watchdog: `inspect` ran out of time on it
def test_inspect_and_readers_skip_a_3gb_marker_without_reading_it(tmp_path: Path) -> None:
    storage = output(tmp_path)
    sparse(storage.root / marker_key(1))
    before = bytes_read()
    with pytest.warns(UserWarning, match="shard 1 skipped"):
        assert [m.shard for m in read_markers(storage)] == [0]
    done = CliRunner().invoke(app, ["inspect", str(storage.root)])
    assert bytes_read() - before < READ_AT_MOST
    assert done.exit_code == 0, done.output
    assert "unreadable marker" in done.output and "Traceback" not in done.output


@pytest.mark.timeout(120)
def test_verify_never_reads_a_3gb_part_of_the_wrong_size(tmp_path: Path) -> None:
    storage = output(tmp_path)
    sparse(storage.root / part_key("steps", 1))
    before = bytes_read()
    report = verify_output(storage)  # full: sha256 of every part it can match
    assert bytes_read() - before < READ_AT_MOST
    [problem] = report.problems
    assert (problem.shard, problem.kind) == (1, "size mismatch")
    assert f"{THREE_GB} bytes, the marker says" in problem.detail
    assert report.hashed_bytes < READ_AT_MOST  # the other parts only


def test_a_swapped_part_of_another_size_is_still_found(tmp_path: Path) -> None:
    """Hashing only parts of a committed size keeps what the hash is for: a part holding
    another shard's bytes (another size) is named as swapped, not only a size mismatch."""
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    write_shard(storage, 0, {"rejects": []}, shard_stats(0))
    write_shard(storage, 1, {"rejects": [reject(i) for i in range(40)]}, shard_stats(1))
    zero, one = storage.root / part_key("rejects", 0), storage.root / part_key("rejects", 1)
    a, b = zero.read_bytes(), one.read_bytes()
    assert len(a) != len(b)
    zero.write_bytes(b)
    one.write_bytes(a)
    kinds = {(p.shard, p.kind) for p in verify_output(storage).problems}
    assert kinds == {(0, "swapped"), (1, "swapped")}


@pytest.mark.timeout(120)
def test_a_3gb_run_file_is_refused_from_its_size(tmp_path: Path) -> None:
    storage = output(tmp_path)
    sparse(storage.root / RUN_FILE)
    before = bytes_read()
    with pytest.raises(OutputError, match=r"not a datagen run's claim .*more than the"):
        read_run(storage)
    assert bytes_read() - before < READ_AT_MOST


def test_read_small_refuses_what_is_larger_than_its_bound(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.put("a.json", b"x" * 1001)
    assert read_small(storage, "a.json", 1001) == b"x" * 1001
    with pytest.raises(ValueError, match="is 1,001 bytes, more than the 1,000"):
        read_small(storage, "a.json", 1000)
    os.mkfifo(tmp_path / "fifo.json")  # never blocks: not a regular file
    with pytest.raises(ValueError, match="not a regular file"):
        read_small(storage, "fifo.json", 1000)


def _marker(storage: LocalStorage, shard: int, edit: dict[str, object]) -> bytes:
    data = json.loads((storage.root / marker_key(shard)).read_bytes())
    for key, value in edit.items():
        if key.startswith("stats."):
            data["stats"][key.removeprefix("stats.")] = value
        else:
            data[key] = value
    return json.dumps(data).encode()  # json writes inf and nan as Infinity and NaN


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"written_at": float("inf")}, "written_at is inf"),
        ({"written_at": float("nan")}, "written_at is nan"),
        ({"written_at": -5.0}, "written_at is -5.0"),
        ({"stats.seconds": float("inf")}, "stats.seconds is inf"),
        ({"stats.steps": -3}, "stats.steps is -3"),
        ({"written_at": "soon"}, "not a marker's shape: written_at"),
    ],
)
def test_a_marker_with_numbers_no_run_writes_is_refused(
    tmp_path: Path, edit: dict[str, object], says: str
) -> None:
    storage = output(tmp_path)
    with pytest.raises(ValueError, match=says):
        parse_marker(_marker(storage, 1, edit), 1)


def test_a_marker_from_the_future_is_clamped_to_now(tmp_path: Path) -> None:
    storage = output(tmp_path)
    marker = parse_marker(_marker(storage, 1, {"written_at": 1e18}), 1)
    assert marker.written_at <= time.time()


@pytest.mark.parametrize(
    "holder",
    [
        {"pid": "abc"},
        {"pid": 2**70},
        {"process_started": float("inf")},
        {"host": ["h"]},
        {"token": 5},
    ],
)
def test_a_run_lease_of_the_wrong_types_is_no_live_run(
    tmp_path: Path, holder: dict[str, object]
) -> None:
    """Its holder read as no run (its shards free to take), never a TypeError out of
    `Holder.alive` (outside the reader's guard) that stopped the run."""
    storage = output(tmp_path)
    body = {
        "token": "ab" * 16,
        "run_id": "r",
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "process_started": 0.0,
        **holder,
    }
    storage.put(f"{CLAIMS}/run-{'ab' * 16}.json", json.dumps(body).encode())
    with pytest.raises(ValueError):
        parse_holder(json.dumps(body).encode())
    leases = ShardLeases(storage, "r")
    assert leases.others() == []


def test_a_3gb_lease_is_no_live_run_and_is_not_read(tmp_path: Path) -> None:
    storage = output(tmp_path)
    key = f"{CLAIMS}/run-{'cd' * 16}.json"
    storage.put(key, b"{}")
    sparse(storage.root / key)
    before = bytes_read()
    assert ShardLeases(storage, "r").others() == []
    assert bytes_read() - before < READ_AT_MOST


@pytest.mark.timeout(120)
def test_readers_refuse_a_3gb_part_from_its_size(tmp_path: Path) -> None:
    storage = output(tmp_path)
    sparse(storage.root / part_key("rejects", 1))
    before = bytes_read()
    with pytest.raises(PartError, match=f"is {THREE_GB} bytes, the marker says"):
        read_committed(str(storage.root), "rejects")
    assert bytes_read() - before < READ_AT_MOST


def test_a_heartbeat_from_the_future_is_no_heartbeat(tmp_path: Path) -> None:
    """A run lease on another machine whose modification time is a year ahead (beyond any
    clock skew the TTL allows): before, it counted as live for a year and its shards were
    never taken over; its age is held to ±TTL."""
    storage = output(tmp_path)
    key = f"{CLAIMS}/run-{'ef' * 16}.json"
    body = {
        "token": "ef" * 16,
        "run_id": "r",
        "host": "elsewhere",
        "pid": 7,
        "process_started": 1.0,
    }
    storage.put(key, json.dumps(body).encode())
    ahead = time.time() + 365 * 86400
    os.utime(storage.root / key, (ahead, ahead))
    assert ShardLeases(storage, "r").others() == []
    os.utime(storage.root / key, None)  # renewed now: live
    assert [h.host for h in ShardLeases(storage, "r").others()] == ["elsewhere"]


def test_a_run_lease_with_a_key_of_another_version_still_names_its_run() -> None:
    body = {"token": "ab", "run_id": "r", "host": "h", "pid": 7, "process_started": 1.5, "new": 1}
    assert parse_holder(json.dumps(body).encode()).pid == 7


NESTED = b"[" * 100_000  # deeper than Python's JSON reader follows: a RecursionError there


def test_control_files_nested_past_the_json_readers_depth_are_refused_as_bad_json(
    tmp_path: Path,
) -> None:
    """A marker, `_hosts.json`, a lease or `_export.json` of `[[[[…` (small: it passes the
    size bound) is refused as not JSON like any other bad file, never a RecursionError
    traceback out of `run`, `inspect` or `export`."""
    from datagen.errors import ExportError
    from datagen.export.state import STATE_KEY, load_state
    from datagen.sink.hosts import HOSTS_KEY, read_hosts

    storage = output(tmp_path)
    with pytest.raises(ValueError, match="not JSON"):
        parse_marker(NESTED, 1)
    storage.put(marker_key(1), NESTED)
    with pytest.warns(UserWarning, match="shard 1 skipped"):
        assert [m.shard for m in read_markers(storage)] == [0]
    storage.put(HOSTS_KEY, b'{"hosts": ' + NESTED)
    with pytest.raises(OutputError, match=r"_hosts.json is unreadable.*\n  fix:"):
        read_hosts(storage)
    with pytest.raises(ValueError, match="not JSON"):
        parse_holder(NESTED)
    storage.put(f"{CLAIMS}/run-{'ef' * 16}.json", NESTED)
    assert ShardLeases(storage, "r").others() == []
    storage.put(STATE_KEY, NESTED)
    with pytest.raises(ExportError, match="fix:"):
        load_state(storage)
