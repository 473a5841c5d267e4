"""Claiming an output and its shards on local disk: exactly one of many simultaneous claims
wins, shard leases are skipped while their run lives and taken over when it is gone, and the
leftovers of killed writes are swept. Real files and threads, no mocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from datagen.sink.lease import CLAIMS, TEMP_AGE_S, Holder, ShardLeases, shard_lease_key
from datagen.sink.manifest import finalize
from datagen.sink.storage import LocalStorage, Storage
from datagen.sink.writer import RUN_FILE, claim_output, part_key, write_shard
from tests.helpers import CLAIMERS, race, shard_stats


def test_one_of_100_simultaneous_claims_wins(tmp_path: Path) -> None:
    trials = 20
    for trial in range(trials):
        storage = LocalStorage(tmp_path / f"out-{trial}")
        outcomes = race(storage, [f"run-{i}" for i in range(CLAIMERS)])
        winners = [i for i, o in enumerate(outcomes) if o is False]
        assert len(winners) == 1, outcomes
        assert outcomes.count(True) == 0  # no one else resumes a run that is not theirs
        assert all(f"holds run run-{winners[0]}" in str(o) for o in outcomes if o is not False)
        assert f'"run_id": "run-{winners[0]}"' in (storage.root / RUN_FILE).read_text()
        assert not [p for p in storage.root.iterdir() if p.name != RUN_FILE]  # no temp left
    print(f"claims: {trials} trials × {CLAIMERS} threads, one winner each time")


def test_simultaneous_claims_of_the_same_run_resume_it(tmp_path: Path) -> None:
    outcomes = race(LocalStorage(tmp_path / "out"), ["same"] * 20)
    assert Counter(outcomes) == {False: 1, True: 19}


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def dead_run(storage: Storage, holder_edit: dict[str, object], shards: list[int]) -> ShardLeases:
    """A run that took leases and then stopped without letting go (as a SIGKILL leaves it)."""
    leases = ShardLeases(storage, "r")
    leases.me = Holder(**{**leases.me.__dict__, "token": leases.token, **holder_edit})
    leases._renew()
    assert leases.take(shards) == shards
    return leases  # never entered: no heartbeat, never exits


def test_leased_shards_are_skipped_then_taken_when_let_go(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    with ShardLeases(storage, "r") as first, ShardLeases(storage, "r") as second:
        assert first.take(range(6)) == [0, 1, 2, 3, 4, 5]
        assert second.take(range(8)) == [6, 7]
        assert first.busy() == {6, 7} and second.busy() == {0, 1, 2, 3, 4, 5}
        assert [str(h) for h in second.others()] == [str(first.me)]
        write_shard(storage, 0, {}, shard_stats(0))  # first commits shard 0 and lets go
        first.release(0)
        first.release(1)  # shard 1 failed for good: let go uncommitted
        assert second.take(range(6)) == [1]  # committed 0 is not taken, free 1 is
        for shard in (2, 3, 4, 5):
            write_shard(storage, shard, {}, shard_stats(shard))
            first.release(shard)
        assert second.wait(range(6)) == []  # all committed now
    assert not storage.list(CLAIMS)  # every lease removed on the way out


def test_wait_returns_the_shards_a_run_lets_go_uncommitted(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    with ShardLeases(storage, "r") as first, ShardLeases(storage, "r", poll_s=0.05) as second:
        first.take([0, 1, 2])
        got: list[list[int]] = []
        waiter = threading.Thread(target=lambda: got.append(second.wait([0, 1, 2])))
        waiter.start()
        write_shard(storage, 0, {}, shard_stats(0))
        first.release(0)
        first.release(2)
        waiter.join(timeout=30)
        assert got == [[2]]  # 0 was committed, 1 is still held, 2 was let go
        assert 1 in first.held and 2 in second.held


def test_a_killed_run_on_this_machine_is_taken_over_at_once(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    dead_run(storage, {"pid": dead_pid()}, [0, 1, 2])
    with ShardLeases(storage, "r") as leases:
        assert leases.others() == []
        assert leases.take([0, 1, 2, 3]) == [0, 1, 2, 3]
        assert sorted(leases.held.values()) == [  # the dead run's generation 0, taken over
            *[f"{CLAIMS}/shard-{s:05d}.g0001.json" for s in (0, 1, 2)],
            f"{CLAIMS}/shard-00003.g0000.json",
        ]


def test_a_run_elsewhere_counts_until_its_heartbeat_is_older_than_the_ttl(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    other = dead_run(storage, {"host": "another-machine", "pid": 1}, [0, 1])
    with ShardLeases(storage, "r", ttl_s=60) as leases:
        assert leases.take([0, 1, 2]) == [2]  # its heartbeat is fresh: it may be running
        beat = storage.root / other.run_key
        old = time.time() - 61
        os.utime(beat, (old, old))
        assert leases.take([0, 1, 2]) == [0, 1]


def test_of_many_runs_taking_the_same_shards_each_shard_gets_one(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    dead_run(storage, {"pid": dead_pid()}, list(range(5)))  # half of them to take over
    runs = [ShardLeases(storage, "r").__enter__() for _ in range(12)]
    barrier = threading.Barrier(len(runs))

    def take(leases: ShardLeases) -> list[int]:
        barrier.wait()
        return leases.take(range(10))

    try:
        with ThreadPoolExecutor(len(runs)) as pool:
            taken = list(pool.map(take, runs))
        assert sorted(s for shards in taken for s in shards) == list(range(10)), taken
    finally:
        for leases in runs:
            leases.__exit__(None, None, None)


def test_finalize_keeps_the_parts_a_live_run_is_writing(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    write_shard(storage, 0, {}, shard_stats(0))
    with ShardLeases(storage, "r") as mine, ShardLeases(storage, "r") as other:
        other.take([1])
        storage.put(part_key("steps", 1), b"being written by the other run")
        storage.put(part_key("steps", 2), b"left by a killed attempt")
        finalize(storage, [0, 1, 2], busy=mine.busy())
    assert storage.exists(part_key("steps", 1)) and not storage.exists(part_key("steps", 2))


def temp_file(folder: Path, name: str, age_s: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"half a part")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_leftovers_of_killed_writes_are_swept(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    steps = storage.root / "steps"
    old = temp_file(steps, ".part-00001.parquet.k1ll3d_0", TEMP_AGE_S + 60)
    young = temp_file(steps, ".part-00002.parquet.abcd1234", 5)
    marker = temp_file(storage.root / "_markers", ".shard-00001.json.x9y8z7w6", 5)
    hidden = temp_file(storage.root, ".notes.txt", TEMP_AGE_S + 60)  # not a datagen temp name
    gone = dead_run(storage, {"pid": dead_pid()}, [1])
    with ShardLeases(storage, "r") as other, ShardLeases(storage, "r") as leases:
        # another run is live: it may be writing the young temp files, only the old one goes
        assert leases.sweep() == [
            "steps/.part-00001.parquet.k1ll3d_0",
            f"{CLAIMS}/run-{gone.token}.json",  # the dead run's lease
        ]
        assert not old.exists() and young.exists() and marker.exists()
        other.__exit__(None, None, None)
        assert leases.sweep() == [
            "_markers/.shard-00001.json.x9y8z7w6",
            "steps/.part-00002.parquet.abcd1234",
        ]  # alone now: every leftover goes
    assert hidden.exists()


def test_a_lease_whose_put_answer_was_lost_is_this_runs(tmp_path: Path) -> None:
    """A conditional PUT that landed but whose answer was lost is retried, gets 412, and the
    lease names this run: it is this run's, never a shard nobody runs."""
    storage = LocalStorage(tmp_path / "out")
    claim_output(storage, "r", {})
    with ShardLeases(storage, "r") as leases:
        storage.put(shard_lease_key(3, 0), json.dumps({"token": leases.token}).encode())
        assert leases.take([3]) == [3] and leases.held == {3: shard_lease_key(3, 0)}
