"""`engine.sim:`: settings of the stand-in (`datagen engine sim`): capacity, timing model,
limits, faults. All adjustable while it runs (POST /sim/config), so a benchmark can change the
engine's capacity mid-run, except `calibration`, which fills the timing and memory model when
the settings are made. Defined here, with the rest of the file; `datagen/engine/sim/` reads
them, and `datagen plan` models the engine with the same settings.

    engine.sim: ─► SimConfig ─► datagen.engine.sim.SimServer   (and datagen.capacity's model)
                      ▲ calibration: CALIBRATIONS[name].settings (derived by
                      └ datagen.capacity.calibration, which a test keeps in step with these)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from datagen.config.base import NEUTRAL

STANDIN_OWNER = "datagen-sim"

CalibrationName = Literal[
    "decode",
    "holotron-12b/all-tokens",
    "holotron-12b/output-tokens",
    "holo2-8b/all-tokens",
    "holo2-8b/output-tokens",
]


@dataclass(frozen=True)
class Calibration:
    """A named fit of the engine model to a published figure: `tokens_per_s` counting `counts`
    tokens (`all`: prompt + answer; `output`: answer only) with `agents` requests in flight on
    the reference workload (`datagen.capacity.calibration`), and the settings that give it."""

    name: str
    model: str
    tokens_per_s: float
    counts: Literal["all", "output"]
    agents: int
    about: str
    settings: dict[str, Any] = field(default_factory=dict)
    params_b: float = 12.6  # billions of parameters: what a step's compute scales with

    @property
    def tokens(self) -> str:
        """The tokens its figures count, in words."""
        return "prompt + answer tokens" if self.counts == "all" else "answer tokens only"

    def line(self) -> str:
        """One line saying which calibration is in force and what its figure counts."""
        return (
            f"calibration {self.name}: {self.model} {self.tokens_per_s:,.0f} tokens/s "
            f"({self.tokens}) at {self.agents} in flight; {self.about}"
        )


# Holotron-12B's memory (spec §1.4): KV of 6 attention layers, FP32 Mamba state, a 38 GiB pool.
_HOLOTRON_MEMORY: dict[str, Any] = {
    "admit_when_fits": True,
    "max_num_seqs": 128,
    "pool_gib": 38.0,
    "kv_bytes_per_token": 24 * 1024,
    "state_bytes_per_seq": 142 * 1024 * 1024,
}
# Holo2-8B (Qwen3-VL-8B, a transformer): 36 layers × K,V × 8 KV heads × 128 × 2 B = 144 KiB of
# KV per token, no state; an H100's 72 GB at 0.9 less 16.4 GiB of weights and ~4 GiB of
# activations leaves ~46 GiB: about 54 sequences of the reference workload (docs/engine.md).
_HOLO2_MEMORY: dict[str, Any] = {
    "admit_when_fits": True,
    "max_num_seqs": 256,
    "pool_gib": 46.0,
    "kv_bytes_per_token": 144 * 1024,
    "state_bytes_per_seq": 0,
}
_LINEAR = "scaling linearly with concurrency up to 100 (published)"
_PLATEAU = "plateauing from ≈ 55 in flight: the KV cache holds no more sequences"
# Timing settings: datagen.capacity.calibration.derive(name), rounded to 4 significant digits.
CALIBRATIONS: dict[str, Calibration] = {
    c.name: c
    for c in (
        Calibration(
            "decode", "Holotron-12B", 8900, "output", 100,
            "100 sequences decoding with no prompt (spec §6.2 placeholders); image-heavy "
            "prompts are prefill-bound: flat beyond ~16 in flight",
            {"t_fixed_ms": 8.2, "per_seq_ms": 0.03, "per_prefill_token_ms": 0.06,
             "per_tile_ms": 0.0, "max_num_batched_tokens": 8192, **_HOLOTRON_MEMORY,
             "admit_when_fits": False},
        ),
        Calibration(
            "holotron-12b/all-tokens", "Holotron-12B", 8900, "all", 100, _LINEAR,
            {"t_fixed_ms": 635.4, "per_seq_ms": 0.3177, "per_prefill_token_ms": 0.003177,
             "per_tile_ms": 0.0, "max_num_batched_tokens": 8192, **_HOLOTRON_MEMORY},
        ),
        Calibration(
            "holotron-12b/output-tokens", "Holotron-12B", 8900, "output", 100, _LINEAR,
            {"t_fixed_ms": 10.5, "per_seq_ms": 0.005249, "per_prefill_token_ms": 5.249e-05,
             "per_tile_ms": 0.0, "max_num_batched_tokens": 8192, **_HOLOTRON_MEMORY},
        ),
        Calibration(
            "holo2-8b/all-tokens", "Holo2-8B", 5100, "all", 100, _PLATEAU,
            {"t_fixed_ms": 618.3, "per_seq_ms": 0.3092, "per_prefill_token_ms": 0.003092,
             "per_tile_ms": 0.0, "max_num_batched_tokens": 8192, **_HOLO2_MEMORY}, 8.8,
        ),
        Calibration(
            "holo2-8b/output-tokens", "Holo2-8B", 5100, "output", 100, _PLATEAU,
            {"t_fixed_ms": 10.22, "per_seq_ms": 0.005108, "per_prefill_token_ms": 5.108e-05,
             "per_tile_ms": 0.0, "max_num_batched_tokens": 8192, **_HOLO2_MEMORY}, 8.8,
        ),
    )
}  # fmt: skip


class SimConfig(BaseModel):
    """The stand-in's knobs. Timing defaults: the `decode` calibration, an H100 serving a 12.6B
    hybrid (spec §6.2) chosen so that 100 decoding sequences give ≈ 8,900 output tokens/s.
    `calibration` names another fit (CALIBRATIONS): its settings fill the timing and memory
    fields not given alongside it.

    Output-neutral: its speed (timing and memory model, sequences and tokens per step) and its
    key. Its answers, prompt limits and faults change what the rows hold."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    calibration: CalibrationName = Field(
        "decode",
        description="the fit of the timing and memory model in force (docs/engine.md): decode, "
        "holotron-12b/all-tokens, holotron-12b/output-tokens, holo2-8b/all-tokens, "
        "holo2-8b/output-tokens; fixed once the settings are made",
        frozen=True,
        json_schema_extra=NEUTRAL,
    )
    served_model_name: str = Field(
        "datagen-sim", description="model id served (never a real model's)"
    )
    max_model_len: int = Field(
        32768, ge=256, description="context length: a longer prompt gets vLLM's 400 answer"
    )
    max_num_seqs: int = Field(
        128, ge=1, description="requests running at once; the rest wait", json_schema_extra=NEUTRAL
    )
    max_num_batched_tokens: int = Field(
        8192, ge=64, description="token budget per engine step", json_schema_extra=NEUTRAL
    )
    limit_images: int = Field(999, ge=0, description="--limit-mm-per-prompt image count")
    max_num_tiles: int = Field(
        12,
        ge=1,
        le=40,
        description="tiles per image at most (a request's mm_processor_kwargs.max_num_tiles wins)",
    )
    api_key: str | None = Field(
        None,
        description="require `Authorization: Bearer <key>` on /v1/*",
        json_schema_extra=NEUTRAL,
    )
    # timing model: t_step = t_fixed + a·n_decode + b·prefill_tokens + c·tiles, divided by speed
    t_fixed_ms: float = Field(
        8.2, ge=0, description="fixed cost of one engine step", json_schema_extra=NEUTRAL
    )
    per_seq_ms: float = Field(
        0.03, ge=0, description="a: per decoding sequence", json_schema_extra=NEUTRAL
    )
    per_prefill_token_ms: float = Field(
        0.06,
        ge=0,
        description="b: per prefill token (images make most of them)",
        json_schema_extra=NEUTRAL,
    )
    per_tile_ms: float = Field(
        0.0,
        ge=0,
        description="c: per image tile encoded (0: folded into b)",
        json_schema_extra=NEUTRAL,
    )
    speed_factor: float = Field(
        1.0,
        gt=0,
        description="run this many times faster than real time",
        json_schema_extra=NEUTRAL,
    )
    # memory model (spec §1.4): KV per token and Mamba state per sequence, against a pool
    pool_gib: float = Field(
        38.0, gt=0, description="GPU memory for KV cache and state", json_schema_extra=NEUTRAL
    )
    admit_when_fits: bool = Field(
        False,
        description="admit a waiting request only while the pool holds its state and first "
        "chunk, as vLLM's scheduler does (the fitted calibrations); false: admit, preempt later",
        json_schema_extra=NEUTRAL,
    )
    kv_bytes_per_token: int = Field(
        24 * 1024, ge=0, description="KV cache per token held", json_schema_extra=NEUTRAL
    )
    state_bytes_per_seq: int = Field(
        142 * 1024 * 1024,
        ge=0,
        description="SSM state per running sequence",
        json_schema_extra=NEUTRAL,
    )
    prefix_caching: bool = Field(
        True,
        description="count a prompt whose first message repeats an earlier one's as prefix-cache "
        "hits (vllm:prefix_cache_hits_total); false: hits stay 0, as vLLM with "
        "--no-enable-prefix-caching",
        json_schema_extra=NEUTRAL,
    )
    # answers
    seed: int = Field(0, description="seed of the answers and faults")
    click_bias: float = Field(0.6, ge=0, le=1, description="chance an action union picks a click")
    fixed_point: tuple[int, int] | None = Field(
        None, description="answer this x, y for every point"
    )
    text_reply: str = Field("OK", description="content when the request has no schema")
    replies: list[str] = Field(
        default_factory=list,
        description="contents answered in turn (then again from the first) to requests with a "
        "schema, in place of generated ones: a scripted model, for tests",
    )
    # faults
    error_rate: float = Field(0.0, ge=0, le=1, description="share of requests answered 500")
    drop_rate: float = Field(
        0.0, ge=0, le=1, description="share of requests whose connection is dropped"
    )
    slow_rate: float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of requests delayed by slow_seconds",
        json_schema_extra=NEUTRAL,
    )
    slow_seconds: float = Field(
        2.0, ge=0, description="delay of a slow request", json_schema_extra=NEUTRAL
    )
    malformed_rate: float = Field(
        0.0, ge=0, le=1, description="share of answers that break their schema"
    )
    dead: bool = Field(False, description="engine dead: /health 503, requests 500")

    @model_validator(mode="before")
    @classmethod
    def _calibrate(cls, data: Any) -> Any:
        """Fill the timing and memory fields from the named calibration, keeping those given."""
        if isinstance(data, dict) and data.get("calibration") in CALIBRATIONS:
            return CALIBRATIONS[data["calibration"]].settings | data
        return data

    @property
    def calibrated(self) -> Calibration:
        """The calibration in force."""
        return CALIBRATIONS[self.calibration]
