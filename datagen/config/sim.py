"""`engine.sim:`: settings of the stand-in (`datagen engine sim`): capacity, timing model,
limits, faults. All adjustable while it runs (POST /sim/config), so a benchmark can change the
engine's capacity mid-run. Defined here, with the rest of the file; `datagen/engine/sim/`
reads them.

    engine.sim: ─► SimConfig ─► datagen.engine.sim.SimServer
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from datagen.config.base import NEUTRAL

STANDIN_OWNER = "datagen-sim"


class SimConfig(BaseModel):
    """The stand-in's knobs. Timing defaults: an H100 serving a 12.6B hybrid (spec §6.2),
    chosen so that 100 decoding sequences give ≈ 8,900 output tokens/s.

    Output-neutral: its speed (timing and memory model, sequences and tokens per step) and its
    key. Its answers, prompt limits and faults change what the rows hold."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    served_model_name: str = Field(
        "datagen-sim", description="model id served (never a real model's)"
    )
    max_model_len: int = Field(32768, ge=256)
    max_num_seqs: int = Field(
        128, ge=1, description="requests running at once; the rest wait", json_schema_extra=NEUTRAL
    )
    max_num_batched_tokens: int = Field(
        8192, ge=64, description="token budget per engine step", json_schema_extra=NEUTRAL
    )
    limit_images: int = Field(999, ge=0, description="--limit-mm-per-prompt image count")
    max_num_tiles: int = Field(12, ge=1, le=40)
    api_key: str | None = Field(
        None,
        description="require `Authorization: Bearer <key>` on /v1/*",
        json_schema_extra=NEUTRAL,
    )
    # timing model: t_step = t_fixed + a·n_decode + b·prefill_tokens + c·tiles, divided by speed
    t_fixed_ms: float = Field(8.2, ge=0, json_schema_extra=NEUTRAL)
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
    pool_gib: float = Field(38.0, gt=0, json_schema_extra=NEUTRAL)
    kv_bytes_per_token: int = Field(24 * 1024, ge=0, json_schema_extra=NEUTRAL)
    state_bytes_per_seq: int = Field(142 * 1024 * 1024, ge=0, json_schema_extra=NEUTRAL)
    # answers
    seed: int = 0
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
    slow_seconds: float = Field(2.0, ge=0, json_schema_extra=NEUTRAL)
    malformed_rate: float = Field(
        0.0, ge=0, le=1, description="share of answers that break their schema"
    )
    dead: bool = Field(False, description="engine dead: /health 503, requests 500")
