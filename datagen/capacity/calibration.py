"""Where the stand-in's calibrations come from: the published figures fitted on one reference
workload, so that `datagen plan` and `datagen engine sim --calibration NAME` model the same
engine (both read `SimConfig`, filled from `datagen.config.sim.CALIBRATIONS`).

    REFERENCE (a WebVoyager-like step) ─► calls_per_step ─► reference_calls()
    SHAPES[model] (timing ratios, memory) ─► the engine model at `agents` in flight ─► its rate
    published tokens/s ÷ that rate ─► derive(name): every time setting scaled by one factor

The engine model's clock is linear in its time settings, so scaling them all by k divides its
throughput by k exactly: one run of the model at the calibration point gives the factor.
`tests/unit/test_calibration.py` re-derives every calibration and fails when the literals in
`config/sim.py` drift from it (a prompt profile that changed, a new engine rule).
"""

from __future__ import annotations

from typing import Any

from datagen.capacity.model import Call, calls_per_step, curve_requests, engine_rate
from datagen.config import PipelineConfig, SimConfig, parse_pipeline
from datagen.config.sim import CALIBRATIONS, Calibration

# The workload of the published figure, as this project can reproduce it: WebVoyager tasks with
# a vlm policy on the holo2_norm1000 profile, three 1280×800 screenshots of history (1,792
# tokens each by Nemotron's tiling), a localizer for clicks and a judge once per episode of 30
# steps (pipelines/webvoyager-holotron.yaml).
REFERENCE: dict[str, Any] = {
    "name": "calibration",
    "sources": [{"type": "sites"}],
    "output": {"uri": "/nonexistent/calibration"},
    "browser": {"viewport": {"width": 1280, "height": 800}, "image_format": "jpeg"},
    "policy": {
        "type": "vlm",
        "profile": "holo2_norm1000",
        "history_images": 3,
        "policy": {"max_tokens": 512},
        "localizer": {"max_tokens": 64},
        "judge": {"max_tokens": 256},
    },
    "run": {"max_steps": 30},
}
REFERENCE_STEPS = 30.0
# Timing ratios before scaling (ms): a step is mostly reading the weights (t_fixed); the
# per-sequence and per-prompt-token terms add ≈ 7% to a step at 100 in flight, so that 100
# agents stay on the linear part, as published. Both models share them: what tells them apart
# is memory (config/sim.py: Holotron's small KV and fixed Mamba state, Holo2's 144 KiB a token).
TIME_SHAPE: dict[str, float] = {
    "t_fixed_ms": 10.0,
    "per_seq_ms": 0.005,
    "per_prefill_token_ms": 0.00005,
    "per_tile_ms": 0.0,
}
TIME_KEYS = tuple(TIME_SHAPE)


def reference_config() -> PipelineConfig:
    """The reference pipeline (REFERENCE) as a config."""
    return parse_pipeline(REFERENCE)


def reference_calls() -> list[Call]:
    """The engine calls of one reference step, sized by the prompt profiles."""
    return calls_per_step(reference_config(), REFERENCE_STEPS)


def counted_tokens(calls: list[Call], counts: str) -> float:
    """Tokens of one step that a calibration's figure counts (`all` or `output`)."""
    answer = sum(c.per_step * c.completion_tokens for c in calls)
    if counts == "output":
        return answer
    return answer + sum(c.per_step * c.prompt_tokens for c in calls)


def tokens_per_s(config: SimConfig, calls: list[Call], in_flight: int, counts: str) -> float:
    """The engine model's throughput with `in_flight` requests kept at it, in counted tokens."""
    return engine_rate(config, calls, in_flight, curve_requests(in_flight)) * counted_tokens(
        calls, counts
    )


def derive(name: str, calls: list[Call] | None = None) -> dict[str, float]:
    """The time settings of calibration `name`: TIME_SHAPE scaled so that the engine model gives
    the published tokens/s at the calibration's concurrency on the reference workload."""
    target = CALIBRATIONS[name]
    calls = calls if calls is not None else reference_calls()
    memory = {k: v for k, v in target.settings.items() if k not in TIME_KEYS}
    shaped = SimConfig.model_validate({**memory, **TIME_SHAPE})
    rate = tokens_per_s(shaped, calls, target.agents, target.counts)
    factor = rate / target.tokens_per_s
    return {k: v * factor for k, v in TIME_SHAPE.items()}


def fitted_settings(calls: list[Call] | None = None) -> dict[str, dict[str, float]]:
    """derive() of every fitted calibration, rounded as config/sim.py writes them."""
    calls = calls if calls is not None else reference_calls()
    return {
        c.name: {k: float(f"{v:.4g}") for k, v in derive(c.name, calls).items()}
        for c in linear_calibrations()
    }


def linear_calibrations() -> list[Calibration]:
    """The calibrations fitted here (all but `decode`, which is the spec's placeholders)."""
    return [c for c in CALIBRATIONS.values() if c.name != "decode"]


def resolve(model: str, calibration: str | None) -> str:
    """The calibration name for `datagen plan --model M --calibration C`: C may be a full name,
    or the tokens counted (`all-tokens`, `output-tokens`); default all-tokens."""
    if calibration is None:
        calibration = "all-tokens"
    name = calibration if calibration in CALIBRATIONS else f"{model}/{calibration}"
    if name not in CALIBRATIONS:
        known = ", ".join(["all-tokens", "output-tokens", *CALIBRATIONS])
        raise ValueError(f"unknown calibration {calibration!r} for {model}; one of: {known}")
    fitted = CALIBRATIONS[name].model
    if fitted.lower() != model:
        raise ValueError(f"calibration {name} is {fitted}'s: give --model {fitted.lower()}")
    return name
