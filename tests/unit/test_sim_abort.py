"""The stand-in engine goes on after a client hangs up mid-step (datagen/engine/sim/engine.py).

A request aborted while the step that emits its last token is running (the client left; vLLM
aborts it) was emitted anyway when the step ended: removing it from the running list raised,
the engine's loop died, and every later request waited for an answer that never came (the
stand-in's event loop idle, the client's too: the hang seen in test_engine_control).
"""

from __future__ import annotations

import asyncio

from datagen.config import SimConfig
from datagen.engine.sim.engine import SimEngine, SimRequest
from datagen.engine.sim.metrics import SimMetrics


def test_a_request_aborted_during_its_last_step_does_not_stop_the_engine() -> None:
    async def scenario() -> tuple[str, str, bool]:
        config = SimConfig(speed_factor=1)
        engine = SimEngine(config, SimMetrics("m", config.max_model_len))
        loop = asyncio.get_running_loop()
        left = SimRequest("left", 10, 0, 1, "x")  # one token: its first step is its last
        left.done = loop.create_future()
        engine.submit(left)
        runner = asyncio.create_task(engine.run())
        while engine.steps == 0 and left not in engine.running:  # its step has begun
            await asyncio.sleep(0)
        engine.abort(left)  # the client hung up while that step ran
        after = SimRequest("after", 10, 0, 1, "y")
        after.done = loop.create_future()
        engine.submit(after)
        try:
            reason = await asyncio.wait_for(after.done, 5.0)
        finally:
            alive = not runner.done()
            runner.cancel()
        return left.finish_reason, reason, alive

    left, after, alive = asyncio.run(scenario())
    assert left == "abort"
    assert after in ("stop", "length") and alive  # the next request was answered
