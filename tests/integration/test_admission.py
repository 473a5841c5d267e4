"""CPU-aware admission on real Chromium: a worker whose observations take longer than its
target (here an artificially low target, 1 ms, which every real observation passes) lowers its
session limit to the floor and holds its sessions there, and every episode still runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from datagen.records import TaskSpec, Wait
from datagen.runtime.plugin import BrowserPlugin
from datagen.source.serve import SiteServer
from tests.helpers import Local, make_config, set_up

pytestmark = pytest.mark.browser
SESSIONS, FLOOR, EPISODES = 6, 2, 18


@pytest.mark.slow  # a long scenario: CI's second step (scripts/test.sh -m slow)
def test_starving_observations_hold_the_sessions_at_the_floor(
    chromium: str, pages: SiteServer, tmp_path: Path
) -> None:
    config = make_config(
        tmp_path,
        browser={"allow": [pages.origin]},
        policy={"type": "scripted"},
        cluster={
            "workers": 1,
            "sessions_per_worker": SESSIONS,
            "dashboard": "127.0.0.1:0",
            "admission": {"observe_target_ms": 1, "min_sessions": FLOOR, "interval_s": 0.2},
        },
    )
    tasks = [
        TaskSpec(
            id=f"t{i}",
            start_url=pages.base_url + "plain.html",
            instruction="wait",
            actions=(Wait(seconds=0.2),) * 3,
        )
        for i in range(EPISODES)
    ]
    with set_up(BrowserPlugin(config)) as plugin:
        admission = plugin.host.admission
        grants: list[tuple[int, int]] = []  # (limit, others in flight) at each admission
        admit = admission.admit

        async def spied(others_running: int, over_memory: Callable[[], bool]) -> None:
            await admit(others_running, over_memory)
            grants.append((admission.limit, admission.in_flight - 1))

        admission.admit = spied  # type: ignore[method-assign]
        result = Local(plugin).run(config, 1, tasks, timeout=240).result
        figures = admission.figures()
    assert result.episodes + sum(result.reject_reasons.values()) == EPISODES
    assert result.episodes == EPISODES  # held back, never dropped
    assert admission.limit == FLOOR and any(
        r.startswith("starving") for _, _, r in admission.history
    )
    at_floor = [others for limit, others in grants if limit == FLOOR]
    assert at_floor and all(others < FLOOR for others in at_floor)  # held at the floor
    assert admission.waits["cpu"] > 0 and figures["bound_cpu_s"] > 0
    assert result.peak_sessions <= SESSIONS
