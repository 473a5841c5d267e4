"""The adaptive in-flight budget against the stand-in over HTTP: it follows the engine's
capacity when that changes mid-run (POST /sim/config), from /metrics alone."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from datagen.config import SimConfig
from datagen.engine.client import EngineClient
from datagen.engine.control import InFlightController
from datagen.engine.sim import SimServer

CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 200}


def test_budget_follows_the_engine_capacity() -> None:
    config = SimConfig(speed_factor=5, max_num_seqs=32, text_reply="x" * 400)
    with SimServer(config) as server:

        async def scenario() -> tuple[list[tuple[str, int, int]], dict[str, Any]]:
            # A request shed (its client hung up) while the stand-in's step emitting its last
            # token ran used to stop the stand-in's engine for good: every later request got
            # no answer, and this test hung into its timeout (tests/unit/test_sim_abort.py).
            # A request without an answer is timed out after 60 s and sent again, and counted
            # (`lost`): none may be, and a hang shows as that assertion, not as a timeout.
            async with EngineClient(
                server.url, max_in_flight=100, retries=2, timeout_s=60
            ) as client:
                controller = InFlightController(100, start=100)
                control = asyncio.create_task(client.control(controller, interval_s=0.2))
                stop = asyncio.Event()
                seen: list[tuple[str, int, int]] = []

                async def session() -> None:
                    while not stop.is_set():
                        await client.chat(CHAT)

                async def watch(phase: str, seconds: float) -> None:
                    for _ in range(int(seconds / 0.1)):
                        await asyncio.sleep(0.1)
                        seen.append((phase, client.gate.limit, client.gate.active))

                async def until_full(bound_s: float) -> None:
                    """Sample until the budget has held 32 + a short queue for 5 looks (how
                    soon depends on the machine's speed: no fixed time, a generous bound)."""
                    for _ in range(int(bound_s / 0.1)):
                        await watch("full", 0.1)
                        last = [limit for phase, limit, _ in seen if phase == "full"][-5:]
                        if len(last) == 5 and all(32 <= limit <= 40 for limit in last):
                            return

                sessions = [asyncio.create_task(session()) for _ in range(100)]
                await until_full(20.0)  # 32 slots: the budget settles at 32 + a short queue
                httpx.post(server.url + "/sim/config", json={"pool_gib": 1.5})  # ≈ 11 fit
                await watch("small", 4.0)
                before = await client.metrics()
                await watch("settled", 2.0)
                after = await client.metrics()
                stop.set()
                await asyncio.gather(*sessions)
                control.cancel()
                preempted = after["vllm:num_preemptions_total"] - before.get(
                    "vllm:num_preemptions_total", 0.0
                )
                stats = client.stats
                figures = {"preempted": preempted, "shed": stats.shed, "failed": stats.failures}
                return seen, figures | {"lost": stats.retries}

        seen, figures = asyncio.run(scenario())
    full = [limit for phase, limit, _ in seen if phase == "full"][-5:]
    settled = [limit for phase, limit, _ in seen if phase == "settled"]
    assert all(32 <= limit <= 40 for limit in full), full  # engine full, queue short
    assert all(limit <= 11 for limit in settled), settled  # what the smaller cache holds
    assert max(active for phase, _, active in seen if phase == "settled") <= 11
    assert figures["preempted"] == 0  # no more thrashing once settled
    # getting there shed requests already sent; each was sent again, none failed
    assert figures["shed"] > 0 and not figures["failed"]
    assert figures["lost"] == 0, figures  # every request answered the first time it was sent
