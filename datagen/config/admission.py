"""`cluster.admission:`: how many of a worker's `sessions_per_worker` may be in flight now, so
that its browsers get the CPU they need (all output-neutral: how many at once, never what a
row holds).

    cluster.admission: ─► AdmissionConfig ─► datagen.browser.admission (AdmissionController)
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from datagen.config.base import NEUTRAL, Section


class AdmissionConfig(Section):
    """The CPU-aware session limit of one worker, between `min_sessions` and
    `sessions_per_worker` (memory is `browser.memory_limit_mb`'s)."""

    control: Literal["adaptive", "static"] = Field(
        "adaptive",
        description="adaptive: lower the worker's session limit while its browsers starve "
        "(observation work or the browser loop's lag above their targets, or the CPU saturated "
        "with them rising) and raise it again when they recover; static: always "
        "sessions_per_worker (memory still holds new episodes back)",
        json_schema_extra=NEUTRAL,
    )
    min_sessions: int = Field(
        2,
        ge=1,
        le=512,
        description="the adaptive limit never goes below this (nor above sessions_per_worker); "
        "a new episode is always admitted when none is running",
        json_schema_extra=NEUTRAL,
    )
    observe_target_ms: float = Field(
        600.0,
        ge=1,
        le=60_000,
        description="median of recent observations' own work (scan, screenshot, re-measure; "
        "not the wait for a quiet page) above this: the browsers starve, admit fewer",
        json_schema_extra=NEUTRAL,
    )
    loop_lag_target_ms: float = Field(
        100.0,
        ge=1,
        le=60_000,
        description="median lateness of a short sleep on the worker's browser event loop above "
        "this: the loop that drives every session is overloaded, admit fewer",
        json_schema_extra=NEUTRAL,
    )
    cpu_target: float = Field(
        0.95,
        gt=0,
        le=1,
        description="the machine's CPU busy above this fraction: no more sessions are added, "
        "and fewer once observation work or loop lag pass half their targets",
        json_schema_extra=NEUTRAL,
    )
    interval_s: float = Field(
        1.0,
        ge=0.1,
        le=60,
        description="how often the limit is reconsidered",
        json_schema_extra=NEUTRAL,
    )
