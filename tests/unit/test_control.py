"""The in-flight budget's control law and the gate that enforces it."""

from __future__ import annotations

import asyncio

import pytest

from datagen.engine.control import MAX_SHEDS, EngineLoad, InFlightController, PriorityGate


def test_long_queue_shrinks_budget_to_running_plus_a_short_queue() -> None:
    c = InFlightController(1000, start=1000)
    full = EngineLoad(running=200, waiting=800, kv_usage=0.5)
    assert c.update(full) == 360  # one reading of a queue is not enough; the cache caps it
    assert c.update(full) == 220 and c.last_reason == "full"  # seen twice: keep a short queue


def test_preemption_backs_off_below_what_was_running() -> None:
    c = InFlightController(1000, start=300)
    c.update(EngineLoad(running=150, waiting=0, kv_usage=0.5, preemptions=7))  # first look
    assert c.update(EngineLoad(running=150, waiting=0, kv_usage=0.8, preemptions=9)) == 120
    assert c.last_reason == "memory"


def test_budget_capped_at_what_the_kv_cache_holds() -> None:
    c = InFlightController(1000, start=100)
    # 100 running fill 75% of the cache: 120 fit at the 0.9 target, although probing wants 150
    assert c.update(EngineLoad(running=100, waiting=0, kv_usage=0.75)) == 120
    assert c.last_reason == "cache"


def test_probes_up_when_the_budget_is_used_and_nothing_waits() -> None:
    c = InFlightController(1000, start=40)
    assert c.update(EngineLoad(running=40, waiting=0, kv_usage=0.1)) == 60
    assert c.update(EngineLoad(running=60, waiting=0, kv_usage=0.15)) == 90
    assert c.last_reason == "probe"


def test_holds_when_demand_is_below_the_budget_and_respects_bounds() -> None:
    c = InFlightController(64, floor=4, start=50)
    assert c.update(EngineLoad(running=10, waiting=0, kv_usage=0.05)) == 50
    assert c.last_reason == "hold"
    assert c.update(EngineLoad(running=50, waiting=0, kv_usage=0.1)) == 64  # ceiling
    assert c.update(EngineLoad(running=0, waiting=0, kv_usage=0.99)) == 4  # floor


async def _hold(gate: PriorityGate, name: str, release: asyncio.Event, log: list[str]) -> None:
    async with gate.slot(name):
        log.append(name)
        await release.wait()


def test_gate_serves_the_policy_first_and_holds_roles_to_their_share() -> None:
    async def scenario() -> None:
        gate = PriorityGate(4)
        gate.add_class("policy", priority=0, share=1.0)
        gate.add_class("writer", priority=3, share=0.5)
        release = asyncio.Event()
        log: list[str] = []
        blockers = [asyncio.create_task(_hold(gate, "policy", release, log)) for _ in range(4)]
        await asyncio.sleep(0)
        assert gate.active == 4
        writers = [asyncio.create_task(_hold(gate, "writer", release, log)) for _ in range(3)]
        policy = [asyncio.create_task(_hold(gate, "policy", release, log)) for _ in range(3)]
        await asyncio.sleep(0)
        assert gate.waiting == 6
        del log[:]
        release.set()  # every holder finishes: the policy's waiters go first
        await asyncio.gather(*blockers, *writers, *policy)
        assert log[:3] == ["policy"] * 3 and log[3:] == ["writer"] * 3
        assert gate.active == 0

        # share: the writer alone may hold 2 of 4 slots, however many it asks for
        release.clear()
        writers = [asyncio.create_task(_hold(gate, "writer", release, log)) for _ in range(5)]
        await asyncio.sleep(0)
        assert gate.active == 2 and gate.waiting == 3
        gate.limit = 8  # a larger budget wakes waiters at once
        await asyncio.sleep(0)
        assert gate.active == 4
        release.set()
        await asyncio.gather(*writers)

    asyncio.run(scenario())


def test_gate_cancelled_waiters_leak_no_slot() -> None:
    async def scenario() -> None:
        gate = PriorityGate(1)
        release = asyncio.Event()
        log: list[str] = []
        holder = asyncio.create_task(_hold(gate, "a", release, log))
        await asyncio.sleep(0)
        waiters = [asyncio.create_task(_hold(gate, "a", release, log)) for _ in range(3)]
        await asyncio.sleep(0)
        waiters[0].cancel()
        waiters[1].cancel()
        release.set()
        await holder
        await waiters[2]
        for w in waiters[:2]:
            with pytest.raises(asyncio.CancelledError):
                await w
        assert gate.active == 0 and gate.waiting == 0 and log == ["a", "a"]

    asyncio.run(scenario())


def test_shed_cancels_the_newest_holders_work_not_the_holder() -> None:
    async def scenario() -> None:
        gate = PriorityGate(3)
        order: list[str] = []
        outcome: dict[str, str] = {}

        async def holder(name: str) -> None:
            async with gate.slot() as ticket:
                order.append(name)
                ticket.work = asyncio.ensure_future(asyncio.sleep(10))
                try:
                    await ticket.work
                    outcome[name] = "done"
                except asyncio.CancelledError:
                    outcome[name] = "shed" if ticket.shed else "cancelled"

        tasks = [asyncio.create_task(holder(n)) for n in "abc"]
        await asyncio.sleep(0)
        assert order == ["a", "b", "c"]
        assert gate.shed(2) == 2  # c and b: the newest
        for _ in range(3):  # the cancellations reach their holders
            await asyncio.sleep(0)
        assert outcome == {"c": "shed", "b": "shed"} and gate.active == 1
        tasks[0].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert gate.active == 0

    asyncio.run(scenario())


def test_shed_takes_the_lowest_priority_first_and_spares_the_often_shed() -> None:
    async def scenario() -> None:
        gate = PriorityGate(4)
        gate.add_class("policy", priority=0)
        gate.add_class("writer", priority=3)
        shed: list[str] = []

        async def holder(label: str, role: str, sheds: int = 0) -> None:
            async with gate.slot(role, sheds) as ticket:
                ticket.work = asyncio.ensure_future(asyncio.sleep(10))
                try:
                    await ticket.work
                except asyncio.CancelledError:
                    shed.append(label)

        tasks = [
            asyncio.create_task(holder("writer-old", "writer")),
            asyncio.create_task(holder("policy-a", "policy")),
            asyncio.create_task(holder("writer-tired", "writer", sheds=MAX_SHEDS)),
            asyncio.create_task(holder("policy-new", "policy")),
        ]
        await asyncio.sleep(0)
        assert gate.active == 4
        assert gate.shed(2) == 2  # the one writer still sheddable, then the newest policy
        for _ in range(3):  # the cancellations reach their holders
            await asyncio.sleep(0)
        assert shed == ["writer-old", "policy-new"]
        assert gate.shed(5) == 1  # policy-a; writer-tired was shed too often already
        for _ in range(3):
            await asyncio.sleep(0)
        assert shed[-1] == "policy-a"
        tasks[2].cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert gate.active == 0

    asyncio.run(scenario())


def test_a_class_held_at_its_share_does_not_block_the_others() -> None:
    async def scenario() -> None:
        gate = PriorityGate(10)
        gate.add_class("policy", priority=0, share=0.5)
        gate.add_class("judge", priority=2, share=1.0)
        release = asyncio.Event()
        log: list[str] = []
        policy = [asyncio.create_task(_hold(gate, "policy", release, log)) for _ in range(6)]
        await asyncio.sleep(0)
        assert gate.active == 5 and gate.waiting == 1  # the sixth waits at the policy's share
        judge = asyncio.create_task(_hold(gate, "judge", release, log))
        await asyncio.sleep(0)
        assert log.count("judge") == 1  # free slots are not held back for a capped class
        release.set()
        await asyncio.gather(*policy, judge)

    asyncio.run(scenario())
