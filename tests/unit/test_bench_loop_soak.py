"""bench/browser_loop.py --soak: how a soak's rounds become first/last-quarter figures and the verdict."""

from __future__ import annotations

from bench.browser_loop import Cpu, RoundResult, drift, is_flat


def rounds(cpu_ms: list[float], steps: int = 100, wall_s: float = 10.0) -> list[RoundResult]:
    return [
        RoundResult(
            side="ours",
            round=i,
            steps=steps,
            wall_s=wall_s,
            cpu=Cpu(python=ms * steps / 1000),
            others_cores=0.0,
            action_errors=0,
            no_target=0,
        )
        for i, ms in enumerate(cpu_ms)
    ]


def test_quarters_are_compared() -> None:
    d = drift(rounds([100, 100, 110, 120, 130, 130, 140, 150]))
    assert (d["rounds"], d["steps"]) == (8, 800)
    assert (d["cpu_ms_first"], d["cpu_ms_last"]) == (100.0, 145.0)
    assert d["cpu_ratio"] == 1.45
    assert d["speed_ratio"] == 1.0


def test_a_loop_that_gets_dearer_is_not_flat() -> None:
    steady = drift(rounds([100] * 8))
    leaking = drift(rounds([100, 101, 104, 106, 108, 110, 112, 115]))
    assert is_flat(steady, steady)
    assert not is_flat(leaking, steady)
    # the machine slowing both sides alike is no leak of ours
    drifting = drift(rounds([100, 100, 102, 103, 104, 105, 107, 108]))
    assert is_flat(drifting, drifting)
    assert not is_flat(drifting, drift(rounds([100, 100, 99, 98, 98, 97, 96, 96])))
