"""The named calibrations of the engine model: fitted to the published figures on the reference
workload, used alike by `datagen plan` and the stand-in, and the plan's in-flight pick and
short-side line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from datagen.capacity.calibration import (
    TIME_KEYS,
    fitted_settings,
    linear_calibrations,
    reference_calls,
    reference_config,
    resolve,
    tokens_per_s,
)
from datagen.capacity.model import (
    CapacityPlan,
    CurvePoint,
    pick_in_flight,
    plan_capacity,
    short_side,
)
from datagen.config.sim import CALIBRATIONS, SimConfig
from tests.helpers import make_config

NAMES = [c.name for c in linear_calibrations()]


@pytest.fixture(scope="module")
def plans() -> dict[str, CapacityPlan]:
    """The plan of the reference workload under each fitted calibration (Holo2-8B's curve cut at
    137 in flight: flat from ≈ 55, and the longest points to model)."""
    config = reference_config()
    cut = {"holo2-8b/all-tokens": 137, "holo2-8b/output-tokens": 137}
    return {
        name: plan_capacity(
            config, 100, engine=SimConfig(calibration=name, max_num_seqs=cut.get(name, 128))
        )
        for name in NAMES
    }


def test_the_literals_in_config_are_the_fit_of_todays_workload() -> None:
    fitted = fitted_settings()
    for name, settings in fitted.items():
        written = {k: CALIBRATIONS[name].settings[k] for k in TIME_KEYS}
        assert written == pytest.approx(settings, rel=2e-3), (
            f"{name}: config/sim.py has {written}; the reference workload now fits {settings} "
            "(datagen.capacity.calibration.fitted_settings()): paste these"
        )


@pytest.mark.parametrize("name", NAMES)
def test_the_plan_at_100_agents_reproduces_the_calibration_point(
    plans: dict[str, CapacityPlan], name: str
) -> None:
    plan, cal = plans[name], CALIBRATIONS[name]
    assert plan.calibration is cal
    assert plan.point_tokens_per_s == pytest.approx(cal.tokens_per_s, rel=0.01)
    # the figure counts what the calibration says: all tokens, or the answers alone
    per_step = plan.engine_tokens_per_s / plan.engine_steps_per_s
    answers = plan.engine_output_tokens_per_s / plan.engine_steps_per_s
    assert plan.counted_tokens_per_step == pytest.approx(
        per_step if cal.counts == "all" else answers
    )


def test_holotron_scales_linearly_and_holo2_plateaus_before_100(
    plans: dict[str, CapacityPlan],
) -> None:
    for name, plan in plans.items():
        rate = {p.in_flight: p.steps_per_s for p in plan.curve}
        if name.startswith("holotron"):
            # half the agents, half the throughput (within 5%); a tenth, a tenth
            assert rate[55] / rate[100] == pytest.approx(0.55, rel=0.05)
            assert rate[10] / rate[100] == pytest.approx(0.10, rel=0.1)
        else:
            knee = min(n for n, r in rate.items() if r >= 0.98 * rate[100])
            assert 40 < knee < 100, (name, knee)
            assert rate[137] == pytest.approx(rate[100], rel=0.02)  # flat past the knee
            assert rate[28] / rate[100] > 0.45  # linear below it: 28 of ≈ 55


def test_the_in_flight_pick_respects_the_latency_budget(plans: dict[str, CapacityPlan]) -> None:
    for plan in plans.values():
        assert plan.step_wait_s <= plan.latency_budget_s
        assert plan.latency_budget_s == pytest.approx(2 * plan.unloaded_step_wait_s)
    curve = plans["holo2-8b/all-tokens"].curve
    wait = {p.in_flight: p.step_wait_s for p in curve}
    budget = (wait[87] + wait[100]) / 2  # past the plateau, waits grow with the queue
    chosen = pick_in_flight(curve, budget)
    assert chosen.step_wait_s <= budget
    # within the budget, nothing gives 1% more throughput than the point chosen
    fits = [p for p in curve if p.step_wait_s <= budget]
    assert max(p.steps_per_s for p in fits) < 1.01 * chosen.steps_per_s
    assert chosen.in_flight < 87  # flat beyond the knee: the fewest in flight for it


def test_pick_takes_the_most_throughput_in_budget_not_the_flattest_point() -> None:
    curve = [CurvePoint(n, r) for n, r in ((1, 1.0), (16, 10.0), (87, 11.0), (128, 11.05))]
    # waits: 1, 1.6, 7.9, 11.6 s; a 2 s budget leaves 16 in flight although 87 gives 10% more
    assert pick_in_flight(curve, 2.0).in_flight == 16
    assert pick_in_flight(curve, 10.0).in_flight == 87  # 128 adds less than 1%
    assert pick_in_flight(curve, 0.5).in_flight == 1  # nothing fits: the shortest wait


@pytest.mark.parametrize(("workers", "sessions", "short"), [(1, 2, "CPU side"), (4, 64, "GPU")])
def test_the_comparison_names_the_short_side(
    tmp_path: Path, workers: int, sessions: int, short: str
) -> None:
    vlm = {"type": "vlm", "history_images": 3}
    config = make_config(
        tmp_path,
        policy=vlm,
        cluster={"workers": workers, "sessions_per_worker": sessions, "dashboard": "127.0.0.1:0"},
    )
    engine = SimConfig(calibration="holotron-12b/output-tokens", max_num_seqs=16)
    plan = plan_capacity(config, 10, engine=engine)
    line = short_side(plan)
    assert plan.configured_sessions == workers * sessions
    assert line.startswith(short)
    assert str(abs(plan.sessions - workers * sessions)) in line
    balanced = dataclasses.replace(plan, configured_sessions=plan.sessions)
    assert short_side(balanced).startswith("balanced")


def test_the_standin_serves_the_plans_engine(plans: dict[str, CapacityPlan]) -> None:
    from datagen.engine.sim import SimServer

    name = "holotron-12b/output-tokens"
    # `datagen engine sim --calibration NAME` builds its settings the same way
    with SimServer(SimConfig.model_validate({"calibration": name, "speed_factor": 50})) as sim:
        import httpx

        served = SimConfig(**httpx.get(sim.url + "/sim/stats", timeout=5).json()["config"])
    assert served.calibration == name
    for key, value in CALIBRATIONS[name].settings.items():
        assert getattr(served, key) == value, key
    # the stand-in's engine model at the calibration point is the plan's figure (at speed 1:
    # speed_factor only divides every step's time)
    at_point = tokens_per_s(served, reference_calls(), 100, "output") / served.speed_factor
    assert at_point == pytest.approx(plans[name].point_tokens_per_s, rel=1e-9)


def run_closed(config: SimConfig, in_flight: int, requests: int) -> tuple[int, float]:
    """The engine model with `in_flight` reference requests kept at it (a virtual clock):
    the most requests it ran at once, and its preemptions per completed request."""
    from datagen.engine.sim.engine import SimEngine, SimRequest
    from datagen.engine.sim.metrics import SimMetrics

    engine = SimEngine(config, SimMetrics("m", config.max_model_len))
    policy = reference_calls()[0]
    made = 0
    while engine.completed < requests:
        while len(engine.waiting) + len(engine.running) < in_flight:
            answer = "x" * 4 * policy.completion_tokens
            engine.submit(SimRequest(str(made), policy.prompt_tokens, 0, 10**6, answer))
            made += 1
        work, _ = engine.plan_step()
        engine.complete_step(work, 0.0)
    preempted = engine.labelled(engine.metrics.preemptions)._value.get()
    return engine.peak_running, preempted / engine.completed


def test_holo2_runs_what_its_kv_cache_holds_and_queues_the_rest() -> None:
    fitted = SimConfig(calibration="holo2-8b/all-tokens")
    peak, preemptions = run_closed(fitted, 100, 300)
    per_sequence = (policy := reference_calls()[0]).prompt_tokens + policy.completion_tokens
    holds = fitted.pool_gib * 2**30 / (per_sequence * fitted.kv_bytes_per_token)
    # ≈ 51 whole sequences fit (more while some are still prefilling); the rest of 100 wait
    assert 0.8 * holds < peak < 1.2 * holds
    assert preemptions < 0.2
    # the stand-in's old rule (admit, preempt later) thrashes where vLLM's waits
    _, thrash = run_closed(fitted.model_copy(update={"admit_when_fits": False}), 100, 300)
    assert thrash > 2 * preemptions


def test_names_and_the_default_standin() -> None:
    assert resolve("holo2-8b", None) == "holo2-8b/all-tokens"
    assert resolve("holotron-12b", "output-tokens") == "holotron-12b/output-tokens"
    assert resolve("holotron-12b", "decode") == "decode"
    with pytest.raises(ValueError, match="one of"):
        resolve("holo3", "all-tokens")
    with pytest.raises(ValueError, match="--model holotron-12b"):
        resolve("holo2-8b", "holotron-12b/output-tokens")
    # the stand-in's default stays the decode fit the existing tests are written against
    default = SimConfig()
    assert default.calibration == "decode"
    assert default.t_fixed_ms == CALIBRATIONS["decode"].settings["t_fixed_ms"]
    # a setting given beside a calibration wins; the calibration itself is fixed once made
    assert SimConfig(calibration="holo2-8b/all-tokens", pool_gib=3.0).pool_gib == 3.0
    with pytest.raises(ValueError, match="frozen"):
        default.calibration = "holo2-8b/all-tokens"  # type: ignore[misc]
