"""The engine-health watchdog against servers over HTTP: the stand-in (default suite) and a
real vLLM on the CPU started with prefix caching off (slow, `vllm`): the condition is raised
where the prompts share a prefix and hits stay 0, and not where the cache works."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from datagen.config import SimConfig
from datagen.engine.client import EngineClient, EngineUnavailable
from datagen.engine.control import InFlightController
from datagen.engine.sim import SimServer
from tests.vllmserver import SERVED, RealVllm, start

SYSTEM = {"role": "system", "content": "You are a web agent on a shopping site. " * 30}
WATCHDOG_S = 240  # a generous bound on waiting for a reading; no assertion on durations


def ask(model: str, i: int) -> dict[str, object]:
    return {
        "model": model,
        "messages": [SYSTEM, {"role": "user", "content": f"Step {i}: what next?"}],
        "max_tokens": 4,
        "temperature": 0,
    }


async def shared_prompts(url: str, model: str) -> dict[str, str]:
    """Requests sharing a long system prompt, /metrics read by the control loop, until the
    watchdog has seen 12 requests answered and two readings after them."""
    async with EngineClient(url, retries=0) as client:
        steering = asyncio.create_task(client.control(InFlightController(8), interval_s=0.2))
        try:
            deadline = time.monotonic() + WATCHDOG_S
            i = 0
            while i < 12 or (time.monotonic() < deadline and not client.health.raised):
                await client.chat(ask(model, i))
                i += 1
                if i >= 24:  # enough requests; now only wait for readings
                    await asyncio.sleep(0.5)  # a few more readings (every 0.2 s)
                    if i >= 30:
                        break
        finally:
            steering.cancel()
        return dict(client.health.raised)


@pytest.mark.parametrize("caching", [False, True])
def test_standin_prefix_cache_off_is_named(caching: bool) -> None:
    with SimServer(SimConfig(speed_factor=50, prefix_caching=caching)) as sim:
        raised = asyncio.run(shared_prompts(sim.url, "datagen-sim"))
    assert ("prefix_cache_cold" in raised) is not caching


def test_standin_engine_errors_are_named() -> None:
    async def run(url: str) -> dict[str, str]:
        async with EngineClient(url, retries=0) as client:
            with pytest.raises(EngineUnavailable):
                await client.chat(ask("datagen-sim", 0))
            return dict(client.health.raised)

    with SimServer(SimConfig(speed_factor=50, dead=True)) as sim:
        assert list(asyncio.run(run(sim.url))) == ["server_errors"]


@pytest.fixture(scope="module")
def uncached_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealVllm]:
    yield from start(tmp_path_factory.mktemp("vllm-nocache"), "--no-enable-prefix-caching")


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.timeout(1500)
def test_real_vllm_with_prefix_caching_off_is_named(uncached_vllm: RealVllm) -> None:
    raised = asyncio.run(shared_prompts(uncached_vllm.url, SERVED))
    assert list(raised) == ["prefix_cache_cold"]


@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.timeout(1500)
def test_real_vllm_with_prefix_caching_on_is_healthy(real_vllm: RealVllm) -> None:
    assert asyncio.run(shared_prompts(real_vllm.url, SERVED)) == {}
