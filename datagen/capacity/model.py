"""The capacity model of `datagen plan`: sessions, CPU workers and GPU hours a pipeline needs.

    pipeline ─► calls per step (roles) ─► prompt tokens per call (viewport → resize → tiling)
             ─► engine model (the stand-in's, calibrated to Holotron-12B on one H100)
             ─► engine steps/s at its best in-flight count ─► Little's law ─► sessions
             ─► CPU per step (measured: `--measure`, or the benchmarks' figure)
             ─► cores, workers per GPU ─► hours, GPU cost

The engine model is `datagen.engine.sim.engine`: continuous batching with vLLM's token budget,
`max_num_seqs`, and a memory pool that preempts when overfull; its timing constants give
≈ 8,900 output tokens/s with 100 sequences decoding (the published figure). It is a model:
the plan is an estimate, to be checked against the first minutes of a real run (the
dashboard shows the same figures live).
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from datagen.config import PipelineConfig, SimConfig, VlmPolicyConfig
from datagen.engine.hindsight import HINDSIGHT, Frame
from datagen.engine.profiles import PROFILES, encode_screenshot
from datagen.engine.sim.engine import Shape, virtual_rate
from datagen.engine.sim.protocol import ChatBody, measure

# Measured on this project's 2-vCPU machine (docs/benchmarks.md): CPU per step of our browser
# loop (Python + Playwright driver + Chromium; bench/browser_loop.py); what the rest of the
# pipeline adds (grounding, validation, Parquet, Dask: bench/scale_out.py measured 110-123 ms
# of machine CPU per step in all); and a session's wall time per step (4 sessions on one worker
# made 12.3-12.6 steps/s: ~320 ms a step each, settle_ms 120 included).
BROWSER_CPU_MS = 88.0
PIPELINE_CPU_MS = 27.0
CPU_MS_PER_STEP = BROWSER_CPU_MS + PIPELINE_CPU_MS
STEP_WALL_MS = 350.0
# bench/memory.py: PSS per concurrent session (bundled sites) and of a browser with none open
SESSION_MB, BROWSER_MB = 34.0, 314.0


@dataclass(frozen=True)
class Call:
    """One kind of engine request made per step."""

    role: str
    per_step: float
    prompt_tokens: int
    tiles: int
    completion_tokens: int


@dataclass
class CapacityPlan:
    """The estimate, with the figures it assumed (CPU and wall time per step, the worker's
    cores, the GPU's price and the server's max_num_seqs) so that it can be shown alone."""

    episodes: int
    steps_per_episode: float
    calls: list[Call]
    cpu_ms_per_step: float = CPU_MS_PER_STEP
    step_wall_ms: float = STEP_WALL_MS
    cores_per_worker: int = 8
    gpu_hour_usd: float = 3.0
    max_num_seqs: int = 0  # of the engine modelled; 0: no model calls, no engine
    engine_steps_per_s: float = 0.0
    engine_requests_per_s: float = 0.0
    engine_tokens_per_s: float = 0.0
    engine_in_flight: int = 0
    engine_latency_s: float = 0.0
    sessions: int = 0
    cores: float = 0.0
    workers_per_gpu: int = 0
    hours: float = 0.0
    gpu_cost: float = 0.0
    browser_memory_mb: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def steps(self) -> float:
        """Steps of the whole run."""
        return self.episodes * self.steps_per_episode


def calls_per_step(
    config: PipelineConfig, steps_per_episode: float, click_share: float = 0.7
) -> list[Call]:
    """The engine requests one step makes, with their prompt and answer sizes (`click_share`:
    the steps whose action is a click, which the localizer re-grounds). Prompts are the real
    profile's messages, counted by the stand-in's own `measure` (text, tiling, vLLM's limits)."""
    policy = config.policy if isinstance(config.policy, VlmPolicyConfig) else None
    expressions = config.annotation.model_expressions
    relabel = config.annotation.relabel
    if policy is None and expressions is None and relabel is None:
        return []
    sent = policy or VlmPolicyConfig(type="vlm")  # the profile and image size the calls use
    profile = PROFILES[sent.profile]
    vp, dsf = config.browser.viewport, config.browser.device_scale_factor
    width, height = round(vp.width * dsf), round(vp.height * dsf)
    scale = min(1.0, sent.image_max_width / width)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    blank = io.BytesIO()
    Image.new("RGB", size).save(blank, "JPEG")
    image = encode_screenshot(blank.getvalue(), "jpeg", *size, sent.image_max_width)
    limits = SimConfig(max_model_len=10**7)  # count only: a long prompt is not an error here
    out: list[Call] = []

    def add(role: str, per_step: float, messages: list[dict[str, Any]], answer: int) -> None:
        prompt = measure(ChatBody(messages=messages), limits)
        out.append(Call(role, per_step, prompt.tokens, prompt.tiles, answer))

    if policy is not None:
        previous = ["click(x=500, y=300)"] * 10
        task = "a typical task of one or two sentences " * 3
        nav = profile.navigation_messages(task, 10, "", previous, [image] * policy.history_images)
        add("policy", 1.0, nav, min(policy.policy.max_tokens, 120))
        if policy.localizer is not None:
            target = "the blue 'Add to cart' button under the first product"
            loc = profile.localization_messages(image, target)
            add("localizer", click_share, loc, min(policy.localizer.max_tokens, 16))
        if policy.judge is not None:
            judge = profile.judge_messages("a task", "an answer", image)
            add("judge", 1 / steps_per_episode, judge, min(policy.judge.max_tokens, 40))
    if expressions is not None:
        writer = profile.expression_messages(image, [10, 10, 200, 60])
        add("writer", expressions.per_step, writer, min(expressions.writer.max_tokens, 24))
        loc = profile.localization_messages(image, "a short referring expression")
        add("localizer (round-trip)", expressions.per_step, loc, 16)
    if relabel is not None:  # once per episode, its screenshots and one line per step
        actions = [('Click the "Add to cart" button', None)] * max(1, round(steps_per_episode))
        frames = [Frame(image, "before action 1")] * min(relabel.images, len(actions) + 1)
        asked = HINDSIGHT.relabel_messages(actions, frames)
        add("relabel", 1 / steps_per_episode, asked, min(relabel.max_tokens, 80))
        if relabel.check != "none":
            check = HINDSIGHT.check_messages("an instruction of one sentence", actions, image)
            add(f"relabel check ({relabel.check})", 1 / steps_per_episode, check, 40)
    return out


def engine_rate(config: SimConfig, calls: list[Call], in_flight: int, requests: int = 800) -> float:
    """Completed steps per engine-second with `in_flight` requests kept at the engine, the
    calls mixed in their per-step proportions."""
    mix = [c for c in calls if c.per_step > 0]
    shapes = [Shape(c.prompt_tokens, c.completion_tokens, c.tiles, c.per_step) for c in mix]
    return virtual_rate(config, shapes, in_flight, requests) / sum(c.per_step for c in mix)


def plan_capacity(
    config: PipelineConfig,
    episodes: int,
    *,
    steps_per_episode: float | None = None,
    engine: SimConfig | None = None,
    cpu_ms_per_step: float = CPU_MS_PER_STEP,
    step_wall_ms: float = STEP_WALL_MS,
    cores_per_worker: int = 8,
    gpu_hour_usd: float = 3.0,
) -> CapacityPlan:
    """The plan; `engine` defaults to the calibrated model with the pipeline's max_num_seqs."""
    per_episode = steps_per_episode or float(config.run.max_steps)
    calls = calls_per_step(config, per_episode)
    plan = CapacityPlan(
        episodes, per_episode, calls, cpu_ms_per_step, step_wall_ms, cores_per_worker, gpu_hour_usd
    )
    cpu_s = cpu_ms_per_step / 1000
    if not calls:  # CPU only: hours on the configured workers
        plan.notes.append("no model calls: the run is CPU-bound and needs no GPU")
        local = not config.cluster.address  # a LocalCluster shares this machine's cores
        plan.cores = (os.cpu_count() or 1) if local else config.cluster.workers * cores_per_worker
        plan.sessions = config.cluster.workers * config.cluster.sessions_per_worker
        # the slower of two limits: the cores, and the sessions (each a step per step_wall_ms)
        rate = min(plan.cores / cpu_s, plan.sessions / (step_wall_ms / 1000))
        plan.hours = plan.steps / rate / 3600
        if rate < plan.cores / cpu_s:
            plan.notes.append(
                f"sessions limit the run, not cores: {plan.sessions} sessions make "
                f"{rate:.1f} steps/s; more sessions_per_worker would use the idle cores"
            )
        return plan
    engine = engine or SimConfig(max_num_seqs=config.engine.sim.max_num_seqs)
    plan.max_num_seqs = engine.max_num_seqs
    best, best_in_flight = 0.0, 1
    for in_flight in _candidates(engine.max_num_seqs):
        rate = engine_rate(engine, calls, in_flight)
        if rate > best * 1.02:  # the smallest in-flight count within 2% of the best
            best, best_in_flight = rate, in_flight
    per_step_requests = sum(c.per_step for c in calls)
    plan.engine_steps_per_s = best
    plan.engine_requests_per_s = best * per_step_requests
    plan.engine_tokens_per_s = best * sum(
        c.per_step * (c.prompt_tokens + c.completion_tokens) for c in calls
    )
    plan.engine_in_flight = best_in_flight
    plan.engine_latency_s = best_in_flight / plan.engine_requests_per_s  # Little's law
    # a session spends its cycle in the browser and waiting for its calls, one after another
    cycle_s = step_wall_ms / 1000 + per_step_requests * plan.engine_latency_s
    plan.sessions = math.ceil(best * cycle_s)
    plan.cores = best * cpu_s
    plan.workers_per_gpu = math.ceil(plan.cores / cores_per_worker)
    plan.browser_memory_mb = plan.sessions * SESSION_MB + plan.workers_per_gpu * BROWSER_MB
    plan.hours = plan.steps / best / 3600
    plan.gpu_cost = plan.hours * gpu_hour_usd
    return plan


def _candidates(max_num_seqs: int) -> list[int]:
    values = {max_num_seqs}
    n = 8
    while n < max_num_seqs:
        values.add(n)
        n = math.ceil(n * 1.25)
    return sorted(values)
