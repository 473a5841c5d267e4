"""`datagen plan --measure`: what one step costs on this machine, measured, not assumed.

The pipeline's browser settings and annotation run the bundled sites with the explore policy
(a model's calls cost the GPU, not this CPU) through `run_shard`, the code a worker runs:
observe, decide, act, settle, success check, grounding, validation, Parquet. One shard warms
up, the next is measured:

- CPU per step: user+system time of this process and every process under it (Playwright's
  driver, Chromium and its renderers), own time plus reaped children's, so renderers that exit
  during the shard are still counted;
- wall time per step per session: the shard's wall time × sessions ÷ steps.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from datagen.browser.host import BrowserHost
from datagen.config import PipelineConfig, parse_pipeline
from datagen.pipeline import ShardContext, run_shard
from datagen.runplan import make_plan
from datagen.sink.storage import LocalStorage
from datagen.source.readers import BUNDLED_SITES
from datagen.source.serve import SiteServer


@dataclass(frozen=True)
class StepCost:
    """What one step cost here: CPU (the whole process tree) and a session's wall time, in ms,
    over `steps` steps made by `sessions` sessions."""

    cpu_ms: float
    wall_ms: float
    steps: int
    sessions: int


def tree_cpu_seconds() -> float:
    """CPU time of this process and its descendants, including the reaped ones."""
    me = psutil.Process()
    total = 0.0
    for process in [me, *me.children(recursive=True)]:
        try:
            t = process.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def calibration_config(config: PipelineConfig, folder: Path, sessions: int) -> PipelineConfig:
    """`config`'s browser and annotation settings on the bundled sites with the explore policy,
    written to `folder`: two shards of `2 × sessions` short tasks, no model calls."""
    data = config.model_dump(mode="json", exclude={"sources", "policy", "engine", "output"})
    data |= {
        "sources": [{"type": "sites"}],
        "policy": {"type": "explore"},
        "output": {"uri": str(folder)},
        "run": {**data["run"], "max_steps": 8, "tasks_per_shard": 2 * sessions, "repeats": 1},
        "cluster": {**data["cluster"], "sessions_per_worker": sessions},
    }
    for model_calls in ("model_expressions", "relabel"):  # not this CPU's
        if data.get("annotation", {}).get(model_calls):
            data["annotation"][model_calls] = None
    return parse_pipeline(data)


async def measure(config: PipelineConfig, sessions: int = 4) -> StepCost:
    """Run one warm-up shard and one measured shard on the bundled sites."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = calibration_config(config, Path(tmp), sessions)
        shards = make_plan(cfg).shards
        sites = SiteServer(BUNDLED_SITES)
        host = BrowserHost(cfg.browser, allow=[sites.origin])
        await host.start()
        try:
            storage = LocalStorage(Path(tmp))
            ctx = ShardContext(cfg, "calibrate", host, storage, resolve_url=sites.resolve)
            await run_shard(0, shards[0], ctx)
            cpu, wall = tree_cpu_seconds(), time.perf_counter()
            result = await run_shard(1, shards[1 % len(shards)], ctx)
            cpu, wall = tree_cpu_seconds() - cpu, time.perf_counter() - wall
        finally:
            await host.close()
            sites.close()
    steps = max(1, result.steps)
    return StepCost(cpu * 1000 / steps, wall * 1000 * sessions / steps, result.steps, sessions)
