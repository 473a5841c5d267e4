"""The capacity model of `datagen plan`: sessions, CPU workers and GPU hours a pipeline needs.

    pipeline ─► calls per step (roles) ─► prompt tokens per call (viewport → resize → tiling)
             ─► engine model (the stand-in's, under a named calibration: config/sim.py)
             ─► its curve: steps/s and per-step wait at each in-flight count
             ─► the in-flight point: most throughput within the latency budget
             ─► Little's law ─► sessions ─► against the pipeline's workers × sessions
             ─► CPU per step (measured: `--measure`, or the benchmarks' figure)
             ─► cores, workers per GPU ─► hours, GPU cost

The engine model is `datagen.engine.sim.engine`: continuous batching with vLLM's token budget,
`max_num_seqs`, and a memory pool that preempts when overfull; its timing and memory settings
come from a calibration (`datagen.capacity.calibration`: a published tokens/s figure fitted on a
WebVoyager-like workload). The stand-in serves with the same settings. It is a model: the plan
is an estimate, to be checked against the first minutes of a real run (the dashboard shows the
same figures live).
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from datagen.config import PipelineConfig, RoleName, SimConfig, VlmPolicyConfig
from datagen.config.sim import Calibration
from datagen.engine.hindsight import HINDSIGHT, Frame
from datagen.engine.profiles import PROFILES, encode_screenshot
from datagen.engine.sim.engine import Shape, virtual_rate
from datagen.engine.sim.protocol import ChatBody, measure

# Measured on this project's 2-vCPU machine (docs/benchmarks.md): CPU per step of our browser
# loop (Python + Playwright driver + Chromium; bench/browser_loop.py); what the rest of the
# pipeline adds (grounding, validation, Parquet, Dask: bench/e2e.py --part scale_out measured 110-123 ms
# of machine CPU per step in all); and a session's wall time per step (4 sessions on one worker
# made 12.3-12.6 steps/s: ~320 ms a step each, settle_ms 120 included).
BROWSER_CPU_MS = 88.0
PIPELINE_CPU_MS = 27.0
CPU_MS_PER_STEP = BROWSER_CPU_MS + PIPELINE_CPU_MS
STEP_WALL_MS = 350.0
# bench/memory.py: PSS per concurrent session (bundled sites) and of a browser with none open
SESSION_MB, BROWSER_MB = 34.0, 314.0
# The default latency budget: a step may wait at the engine this many times what it waits with
# one request in flight. Past that, more in flight mostly buys queueing, not throughput.
BUDGET_TIMES_UNLOADED = 2.0
H100_BF16_FLOPS = 990e12  # dense BF16 peak of one H100 SXM: a bound on prefill, for the notes


def curve_requests(in_flight: int) -> int:
    """Requests the engine model completes for a point of the curve (a third of them warm-up):
    sixteen turns of the requests in flight, 100 to 800. The model is deterministic, and the
    calibrations are fitted with the same count."""
    return min(800, max(100, 16 * in_flight))


@dataclass(frozen=True)
class Call:
    """One kind of engine request made per step."""

    role: RoleName
    per_step: float
    prompt_tokens: int
    tiles: int
    completion_tokens: int
    label: str = ""  # what the plan calls it, when the role alone does not say (default: role)


@dataclass(frozen=True)
class CurvePoint:
    """The engine model with `in_flight` requests kept at it: completed steps per second and a
    step's wait at the engine (Little's law: in_flight ÷ steps/s)."""

    in_flight: int
    steps_per_s: float

    @property
    def step_wait_s(self) -> float:
        """Seconds a step's calls spend at the engine, one after another."""
        return self.in_flight / self.steps_per_s


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
    calibration: Calibration | None = None  # the engine model's fit in force
    engine_steps_per_s: float = 0.0
    engine_requests_per_s: float = 0.0
    engine_tokens_per_s: float = 0.0  # prompt + answer tokens
    engine_output_tokens_per_s: float = 0.0  # answer tokens only
    engine_in_flight: int = 0
    engine_latency_s: float = 0.0  # mean per request (Little's law)
    step_wait_s: float = 0.0  # a step's engine wait: its calls, one after another
    unloaded_step_wait_s: float = 0.0  # the same with one request in flight
    latency_budget_s: float = 0.0  # the per-step wait allowed; the in-flight pick respects it
    budget_default: bool = True  # the budget is BUDGET_TIMES_UNLOADED × the unloaded wait
    curve: list[CurvePoint] = field(default_factory=list)
    counted_tokens_per_step: float = 0.0  # the tokens of a step that the calibration counts
    point_tokens_per_s: float = 0.0  # at calibration.agents in flight, tokens it counts
    sessions: int = 0
    configured_sessions: int = 0  # the pipeline's workers × sessions_per_worker
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

    def add(
        role: RoleName,
        per_step: float,
        messages: list[dict[str, Any]],
        answer: int,
        label: str = "",
    ) -> None:
        prompt = measure(ChatBody(messages=messages), limits)
        out.append(Call(role, per_step, prompt.tokens, prompt.tiles, answer, label))

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
        add("localizer", expressions.per_step, loc, 16, "localizer (round-trip)")
    if relabel is not None:  # once per episode, its screenshots and one line per step
        actions = [('Click the "Add to cart" button', None)] * max(1, round(steps_per_episode))
        frames = [Frame(image, "before action 1")] * min(relabel.images, len(actions) + 1)
        asked = HINDSIGHT.relabel_messages(actions, frames)
        add("relabel", 1 / steps_per_episode, asked, min(relabel.max_tokens, 80))
        if relabel.check != "none":
            check = HINDSIGHT.check_messages("an instruction of one sentence", actions, image)
            checker: RoleName = "judge" if relabel.check == "judge" else "relabel"
            label = f"relabel check ({relabel.check})"
            add(checker, 1 / steps_per_episode, check, 40, label)
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
    latency_budget_s: float | None = None,
    cpu_ms_per_step: float = CPU_MS_PER_STEP,
    step_wall_ms: float = STEP_WALL_MS,
    cores_per_worker: int = 8,
    gpu_hour_usd: float = 3.0,
) -> CapacityPlan:
    """The plan. `engine`: the modelled engine (default: holotron-12b/all-tokens with the
    pipeline's max_num_seqs); `latency_budget_s`: the per-step engine wait allowed (default:
    BUDGET_TIMES_UNLOADED × the wait with one request in flight)."""
    per_episode = steps_per_episode or float(config.run.max_steps)
    calls = calls_per_step(config, per_episode)
    plan = CapacityPlan(
        episodes, per_episode, calls, cpu_ms_per_step, step_wall_ms, cores_per_worker, gpu_hour_usd
    )
    plan.configured_sessions = config.cluster.workers * config.cluster.sessions_per_worker
    cpu_s = cpu_ms_per_step / 1000
    if not calls:  # CPU only: hours on the configured workers
        plan.notes.append("no model calls: the run is CPU-bound and needs no GPU")
        local = not config.cluster.address  # a LocalCluster shares this machine's cores
        plan.cores = (os.cpu_count() or 1) if local else config.cluster.workers * cores_per_worker
        plan.sessions = plan.configured_sessions
        # the slower of two limits: the cores, and the sessions (each a step per step_wall_ms)
        rate = min(plan.cores / cpu_s, plan.sessions / (step_wall_ms / 1000))
        plan.hours = plan.steps / rate / 3600
        if rate < plan.cores / cpu_s:
            plan.notes.append(
                f"sessions limit the run, not cores: {plan.sessions} sessions make "
                f"{rate:.1f} steps/s; more sessions_per_worker would use the idle cores"
            )
        return plan
    engine = engine or SimConfig(
        calibration="holotron-12b/all-tokens", max_num_seqs=config.engine.sim.max_num_seqs
    )
    point = _model_engine(plan, engine, latency_budget_s)
    _fill_engine(plan, point, cpu_s)
    _reading_notes(plan)
    return plan


def _model_engine(
    plan: CapacityPlan, engine: SimConfig, latency_budget_s: float | None
) -> CurvePoint:
    """The engine's curve for the plan's calls, its figure at the calibration point, and the
    in-flight point the latency budget allows."""
    calls = plan.calls
    plan.max_num_seqs = engine.max_num_seqs
    plan.calibration = cal = engine.calibrated
    plan.curve = [
        CurvePoint(n, engine_rate(engine, calls, n, curve_requests(n)))
        for n in _candidates(engine.max_num_seqs)
    ]
    plan.unloaded_step_wait_s = plan.curve[0].step_wait_s
    plan.budget_default = latency_budget_s is None
    plan.latency_budget_s = latency_budget_s or BUDGET_TIMES_UNLOADED * plan.unloaded_step_wait_s
    point = pick_in_flight(plan.curve, plan.latency_budget_s)
    if point.step_wait_s > plan.latency_budget_s:
        plan.notes.append(
            f"no in-flight count meets the latency budget of {plan.latency_budget_s:.2f} s a "
            f"step: one request in flight already waits {point.step_wait_s:.2f} s"
        )
    plan.counted_tokens_per_step = sum(
        c.per_step * (c.completion_tokens + c.prompt_tokens * (cal.counts == "all")) for c in calls
    )
    at_point = [p for p in plan.curve if p.in_flight == cal.agents]
    if at_point:
        plan.point_tokens_per_s = at_point[0].steps_per_s * plan.counted_tokens_per_step
    return point


def _reading_notes(plan: CapacityPlan) -> None:
    """What the calibration's reading of the published figure implies, where it strains belief."""
    cal = plan.calibration
    assert cal is not None
    prefill = plan.engine_tokens_per_s - plan.engine_output_tokens_per_s
    peak = H100_BF16_FLOPS / (2 * cal.params_b * 1e9)
    if prefill > peak:
        plan.notes.append(
            f"this reading has the engine prefill {prefill:,.0f} prompt tokens/s; one H100 "
            f"computes at most ≈ {peak:,.0f} for {cal.model} (990 TFLOP/s, 2 FLOP a parameter "
            "a token): the figure more likely counts all tokens, or its prompts were smaller"
        )
    alone = plan.curve[0].steps_per_s * plan.counted_tokens_per_step
    if cal.counts == "all" and cal.name != "decode":
        plan.notes.append(
            f"this reading gives one agent alone {alone:,.0f} tokens/s: a step waits "
            f"{plan.unloaded_step_wait_s:.0f} s at the engine even then (a curve linear in "
            "concurrency keeps latency flat); the real engine is surely faster per request"
        )


def _fill_engine(plan: CapacityPlan, point: CurvePoint, cpu_s: float) -> None:
    """The plan's figures at the chosen in-flight point."""
    calls, best = plan.calls, point.steps_per_s
    per_step_requests = sum(c.per_step for c in calls)
    plan.engine_steps_per_s = best
    plan.engine_requests_per_s = best * per_step_requests
    plan.engine_output_tokens_per_s = best * sum(c.per_step * c.completion_tokens for c in calls)
    plan.engine_tokens_per_s = plan.engine_output_tokens_per_s + best * sum(
        c.per_step * c.prompt_tokens for c in calls
    )
    plan.engine_in_flight = point.in_flight
    plan.engine_latency_s = point.in_flight / plan.engine_requests_per_s  # Little's law
    plan.step_wait_s = point.step_wait_s
    # a session spends its cycle in the browser and waiting for its calls, one after another
    cycle_s = plan.step_wall_ms / 1000 + plan.step_wait_s
    plan.sessions = math.ceil(best * cycle_s)
    plan.cores = best * cpu_s
    plan.workers_per_gpu = math.ceil(plan.cores / plan.cores_per_worker)
    plan.browser_memory_mb = plan.sessions * SESSION_MB + plan.workers_per_gpu * BROWSER_MB
    plan.hours = plan.steps / best / 3600
    plan.gpu_cost = plan.hours * plan.gpu_hour_usd


def pick_in_flight(curve: list[CurvePoint], budget_s: float) -> CurvePoint:
    """The in-flight point: the most steps/s among the points whose per-step wait fits the
    budget; where throughput is flat (within 1% of that), the fewest in flight, since more
    would only queue. If none fits, the point with the shortest wait."""
    fits = [p for p in curve if p.step_wait_s <= budget_s]
    if not fits:
        return min(curve, key=lambda p: p.step_wait_s)
    best = max(p.steps_per_s for p in fits)
    return min((p for p in fits if p.steps_per_s >= 0.99 * best), key=lambda p: p.in_flight)


def short_side(plan: CapacityPlan) -> str:
    """Which side is short, the pipeline's sessions (CPU side) or the GPU, and by how much."""
    have, need = plan.configured_sessions, plan.sessions
    if have < need:
        return (
            f"CPU side short: {have} sessions configured (workers × sessions_per_worker), "
            f"{need} keep the engine at its planned point: {need - have} more needed "
            f"(the GPU would run at ≈ {have / need:.0%} of the plan)"
        )
    if have > need:
        return (
            f"GPU side short: {have} sessions configured, one GPU at its planned point serves "
            f"{need}; the other {have - need} wait at the engine (≈ {have / need:.1f} GPUs' "
            "worth of sessions)"
        )
    return f"balanced: {have} sessions configured, {need} needed"


def _candidates(max_num_seqs: int) -> list[int]:
    """In-flight counts to model: 1, 2, 4, then ×1.25 steps, 100 (the calibration point) and
    max_num_seqs, all up to max_num_seqs."""
    values = {1, 2, 4, max_num_seqs}
    n = 8
    while n < max_num_seqs:
        values.add(n)
        n = math.ceil(n * 1.25)
    values.add(100)
    return sorted(v for v in values if v <= max_num_seqs)
