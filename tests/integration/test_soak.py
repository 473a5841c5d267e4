"""Soak: 500 episodes on the bundled sites through one browser, no recycling, measuring the
browser's own memory (USS over its processes). Bounded in count; not in the default run:

    .venv/bin/python -m pytest -m soak -s tests/integration/test_soak.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from datagen.source import BUNDLED_SITES, shard_tasks
from datagen.source.readers import read_sites
from tests.helpers import Local, ReadyPlugin, make_config

pytestmark = [pytest.mark.browser, pytest.mark.soak, pytest.mark.timeout(3600)]  # 500 episodes
EPISODES = 500
WARM_UP = 60
FACTOR = 1.5  # memory at the end within this factor of memory after warm-up


def test_browser_memory_stays_bounded(browser_plugin: ReadyPlugin, tmp_path: Path) -> None:
    config = make_config(
        tmp_path,
        run={"max_steps": 4, "repeats": 1},
        cluster={"sessions_per_worker": 4, "dashboard": "127.0.0.1:0"},
    )
    tasks = read_sites(BUNDLED_SITES)
    host = browser_plugin.host
    runner = Local(browser_plugin).runner(config, run_id="soak")  # one context, every shard
    samples: list[tuple[int, float, int]] = []
    done, shard, started = 0, 0, time.monotonic()
    while done < EPISODES:
        for batch in shard_tasks(tasks, 10):
            result = browser_plugin.run(runner.run(shard, batch), timeout=600).result
            shard += 1
            assert result.episodes >= len(batch) - 1, (
                result
            )  # the sites load: episodes, not rejects
            done += len(batch)  # every task ends once, as an episode or a reject
            samples.append((done, host.memory_mb(max_age_s=0), host.open_contexts))
            if done >= EPISODES:
                break
    warm = next(mb for n, mb, _ in samples if n >= WARM_UP)
    end = samples[-1][1]
    report = {
        "episodes": done,
        "minutes": round((time.monotonic() - started) / 60, 1),
        "warm_mb": round(warm, 1),
        "end_mb": round(end, 1),
        "max_mb": round(max(mb for _, mb, _ in samples), 1),
        "ratio": round(end / warm, 2),
        "open_contexts_end": samples[-1][2],
    }
    print("soak:", json.dumps(report))
    assert samples[-1][2] == 0  # every context closed
    assert end <= FACTOR * warm, report
