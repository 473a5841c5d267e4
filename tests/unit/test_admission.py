"""The CPU-aware session limit with injected signals: it falls while the browsers starve,
rises when they recover, stays between its floor and sessions_per_worker, always admits when
nothing runs, and names the limit that holds the sessions in flight."""

from __future__ import annotations

import asyncio

import pytest

from datagen.browser.admission import (
    BINDINGS,
    AdmissionController,
    Signals,
    binding,
    binding_name,
)
from datagen.config import AdmissionConfig
from datagen.records import Observation
from tests.helpers import observation as make_observation

CALM = Signals(observe_ms=100.0, loop_lag_ms=5.0, cpu_busy=0.5)


def controller(ceiling: int = 32, **config: object) -> AdmissionController:
    """Started at the ceiling (the slow start has its own test)."""
    return AdmissionController(AdmissionConfig.model_validate(config), ceiling, start=ceiling)


def pressed_update(c: AdmissionController, signals: Signals, in_flight: int) -> int:
    c.pressed = True  # an episode waited for the limit since the last look
    return c.update(signals, in_flight)


@pytest.mark.parametrize(
    "starving",
    [
        Signals(observe_ms=1500.0, loop_lag_ms=5.0, cpu_busy=0.5),  # observations slow
        Signals(observe_ms=100.0, loop_lag_ms=300.0, cpu_busy=0.5),  # the loop is late
        Signals(observe_ms=400.0, loop_lag_ms=5.0, cpu_busy=1.0),  # saturated, latency rising
    ],
    ids=["observe", "loop-lag", "cpu"],
)
def test_the_limit_falls_while_starving_to_its_floor_and_rises_back_to_the_ceiling(
    starving: Signals,
) -> None:
    c = controller(32, min_sessions=3)
    limits = [c.update(starving, in_flight=c.limit) for _ in range(40)]
    assert limits[0] < 32 and limits == sorted(limits, reverse=True)
    assert limits[-1] == 3 and min(limits) == 3  # down to the floor, never below
    assert c.reason.startswith(("starving", "cpu saturated, latency"))
    rising = [pressed_update(c, CALM, in_flight=c.limit) for _ in range(40)]
    assert rising[0] > 3 and rising == sorted(rising)
    assert rising[-1] == 32 and max(rising) == 32  # back up to the ceiling, never above


def test_a_cut_follows_what_ran_and_only_pressure_raises_the_limit() -> None:
    c = controller(32)
    assert c.update(Signals(observe_ms=5000.0), in_flight=10) == 7  # 0.7 × the 10 that ran
    assert c.update(CALM, in_flight=7) == 7  # nobody waited: hold
    assert pressed_update(c, CALM, in_flight=7) == 9  # + 32 / 16
    assert c.update(Signals(), in_flight=9) == 9  # nothing to go by yet: hold


def test_a_saturated_cpu_alone_holds_the_limit() -> None:
    c = controller(32)
    c.limit = 10
    saturated = Signals(observe_ms=100.0, loop_lag_ms=5.0, cpu_busy=0.99)
    assert pressed_update(c, saturated, in_flight=10) == 10  # no more, and no fewer
    assert c.reason == "cpu saturated"


def test_a_cut_waits_for_fresh_observations() -> None:
    c = controller(32)
    for ms in (2000.0, 2100.0, 2200.0):
        c.observed(observation(observe_ms=ms + 1500.0, settle_ms=1500.0))  # settle left out
    first = c.look()
    assert first.observe_ms == 2100.0
    c.update(first, in_flight=32)
    assert c.look().observe_ms is None  # the window starts afresh after a cut


def test_static_control_keeps_sessions_per_worker() -> None:
    c = controller(32, control="static")
    assert [c.update(Signals(observe_ms=9e9, loop_lag_ms=9e9), 32) for _ in range(5)] == [32] * 5


def test_nothing_running_is_always_admitted_and_a_full_limit_waits_for_a_session_to_close() -> None:
    async def scenario() -> tuple[bool, bool, bool, int, str]:
        c = controller(8, min_sessions=2)
        c.limit = 2
        await c.admit(0, over_memory=lambda: True)  # nothing runs: admitted over memory too
        c.opened()
        c.opened()
        waiting = asyncio.create_task(c.admit(2, over_memory=lambda: False))
        for _ in range(5):
            await asyncio.sleep(0)
        held = not waiting.done()
        bound = c.tick(1.0)
        c.closed()
        for _ in range(5):
            await asyncio.sleep(0)
        return held, waiting.done(), c.pressed, c.waits["cpu"], bound

    held, admitted, pressed, waits, bound = asyncio.run(scenario())
    assert held and admitted and pressed and waits == 1 and bound == "cpu"


def test_a_browser_over_its_memory_holds_new_episodes() -> None:
    async def scenario() -> tuple[bool, str, int]:
        c = AdmissionController()  # a host outside a worker: no session limit, memory only
        c.opened()
        waiting = asyncio.create_task(c.admit(1, over_memory=lambda: True))
        for _ in range(5):
            await asyncio.sleep(0)
        held, bound = not waiting.done(), c.tick(1.0)
        waiting.cancel()
        return held, bound, c.waits["memory"]

    assert asyncio.run(scenario()) == (True, "memory", 1)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"in_flight": 8, "waiting": {"cpu": 2}, "engine_bound": True}, "engine"),
        ({"in_flight": 8, "waiting": {"memory": 1, "cpu": 2}}, "memory"),
        ({"in_flight": 8, "waiting": {"cpu": 2}}, "cpu"),
        ({"in_flight": 32, "waiting": {}}, "sessions"),
        ({"in_flight": 30, "waiting": {"sessions": 1}}, "sessions"),
        ({"in_flight": 5, "waiting": {}}, "tasks"),  # a shard's tail: nothing more to start
        ({"in_flight": 0, "waiting": {}}, "idle"),
        ({"in_flight": 0, "waiting": {}, "engine_bound": True}, "engine"),  # relabels queue
    ],
)
def test_the_binding_limit_is_named(state: dict[str, object], expected: str) -> None:
    kwargs: dict[str, object] = {"ceiling": 32, "engine_bound": False, **state}
    assert binding(**kwargs) == expected  # type: ignore[arg-type]


def test_seconds_are_counted_per_binding_limit_and_shown_as_fixed_figures() -> None:
    c = controller(4)
    c.engine_bound = lambda: True
    c.tick(2.0)
    c.engine_bound = lambda: False
    c.tick(5.0)  # nothing in flight: idle, not counted
    for _ in range(4):
        c.opened()
    c.tick(3.0)  # every configured session in flight
    figures = c.figures()
    assert figures["bound_engine_s"] == 2.0 and figures["bound_sessions_s"] == 3.0
    assert sum(figures[f"bound_{b}_s"] for b in BINDINGS) == 5.0
    assert binding_name(figures["binding"]) == "sessions" and figures["session_limit"] == 4
    assert set(figures) == set(AdmissionController().figures())  # the same set everywhere


def observation(observe_ms: float, settle_ms: float) -> Observation:
    return make_observation(
        viewport=(1280, 800),
        url="http://example.com/",
        title="",
        observe_ms=observe_ms,
        settle_ms=settle_ms,
    )


def test_the_dashboard_report_and_summary_say_what_held_the_sessions() -> None:
    from rich.console import Console

    from datagen.observe.outcome import RunSummary
    from datagen.observe.summary import show_limits
    from datagen.runtime.dashboard import binding_table, page, table
    from datagen.runtime.report import Timeline, binding_line

    workers = {
        "0": {"session_limit": 12.0, "binding": 2.0, "bound_engine_s": 30.0, "bound_cpu_s": 10.0},
        "1": {"session_limit": 32.0, "binding": 5.0, "bound_engine_s": 50.0, "bound_tasks_s": 10.0},
    }
    headers, rows = table(workers)
    assert headers == ["worker", "session limit", "binds now"]
    assert rows == [["0", "12", "cpu"], ["1", "32", "tasks"], ["total", "", ""]]
    assert binding_table(workers) == (
        ["limit", "0", "1", "total s", "share"],
        [["engine", "30", "50", "80", "80%"], ["cpu", "10", "0", "10", "10%"],
         ["tasks", "0", "10", "10", "10%"]],
    )  # fmt: skip
    assert "what held sessions in flight" in page(workers)

    timeline = Timeline(client=None)
    for t, bound in ((1.0, 5.0), (2.0, 9.0)):  # a worker's seconds only grow: its last counts
        timeline.samples += [(t, "0", {"bound_cpu_s": bound}), (t, "1", {"bound_engine_s": t})]
    assert timeline.bound_seconds() == {"engine": 2.0, "cpu": 9.0}
    assert binding_line(timeline.bound_seconds()) == "cpu 82%, engine 18%"

    console = Console(record=True, width=200)
    show_limits(console, RunSummary(bound_s={"engine": 2.0, "cpu": 9.0, "memory": 0.0}))
    assert "share of worker-time): cpu 82%, engine 18%" in console.export_text()


def test_no_second_cut_before_the_first_took_effect() -> None:
    c = controller(32)
    starving = Signals(observe_ms=5000.0)
    assert c.update(starving, in_flight=32) == 22
    assert c.update(starving, in_flight=30) == 22  # 30 still run: the cut has not acted yet
    assert c.update(starving, in_flight=22) == 15


def test_the_slow_start_doubles_until_the_first_sign_of_starvation_then_adds() -> None:
    c = AdmissionController(AdmissionConfig(), 64, start=4)
    assert c.limit == 4 and c.slow_start
    assert [pressed_update(c, CALM, in_flight=c.limit) for _ in range(3)] == [8, 16, 32]
    assert c.update(Signals(observe_ms=900.0), in_flight=32) == 22 and not c.slow_start
    assert pressed_update(c, CALM, in_flight=22) == 26  # + 64 / 16 from here on
    static = AdmissionController(AdmissionConfig(control="static"), 64, start=4)
    assert static.limit == 64  # static: the ceiling from the start
