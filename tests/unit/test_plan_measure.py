"""`datagen plan --measure`'s comparisons (datagen/capacity/measure.py): with the last
measurement, and with what a run's output shows. The measured run itself is tested in
tests/integration/test_plan_measure.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from datagen.capacity.measure import RunCost, compare, load_last, run_wall_ms, save_last
from datagen.records import ShardResult
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import claim_output, read_markers, write_shard


def cost(cpu_ms: float, wall_ms: float) -> RunCost:
    return RunCost(cpu_ms, cpu_ms - 20, 3.5, wall_ms, 96, 4, 40.0, 1_790_000_000.0, 9)


def test_the_last_measurement_is_kept_and_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert load_last() is None
    assert "no earlier measurement" in compare(cost(178, 400), None, None)[0]
    save_last(cost(158, 420))
    last = load_last()
    assert last == cost(158, 420)
    (line,) = compare(cost(178, 400), last, None)
    assert "CPU per step -11% (158 ms, now 178 ms)" in line
    assert "a session's time per step +5% (420 ms, now 400 ms)" in line


def test_an_unreadable_last_measurement_counts_as_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "datagen").mkdir()
    (tmp_path / "datagen" / "plan-measure.json").write_text('{"cpu_ms": 1')
    assert load_last() is None


def test_a_runs_output_gives_its_session_time_per_step(tmp_path: Path) -> None:
    out = tmp_path / "out"
    storage = LocalStorage(out)
    claim_output(storage, "r", {"name": "x", "cluster": {"workers": 2, "sessions_per_worker": 3}})
    for shard in (0, 1):
        stats = ShardResult(shard=shard, tasks=4, episodes=4, steps=30, grounding=0, rejects=0,
                            solved=0, reject_reasons={}, seconds=5.0)  # fmt: skip
        write_shard(storage, shard, {"episodes": [], "steps": [], "grounding": [], "rejects": []}, stats)  # fmt: skip
    seen = run_wall_ms(str(out))
    assert seen is not None
    wall, steps, sessions = seen
    assert (steps, sessions) == (60, 6)
    # both shards took 5 s, written one after the other: the phase runs from the first one's
    # start (its marker's time less 5 s) to the last marker, however long the writes took
    written = [m.written_at for m in read_markers(storage)]
    phase_s = max(written) - (min(written) - 5.0)
    assert wall == pytest.approx(phase_s * 1000 * sessions / steps) and wall >= 500
    (line,) = compare(cost(178, 250), None, str(out))
    assert "60 steps, 6 sessions" in line and "not recorded" in line
    assert "no committed shard" in compare(cost(178, 250), None, str(tmp_path / "none"))[0]
