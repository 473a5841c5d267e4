"""`engine:`: the model server shared by all workers (vLLM, or the stand-in started by datagen
when `url` is null), and how hard the workers may press it.

    engine: ─► EngineConfig ─► datagen.engine (EngineClient, Engines), datagen.runtime.endpoint
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from datagen.config.base import NEUTRAL, Section
from datagen.config.sim import SimConfig
from datagen.config.urls import ServerUrl


class EngineConfig(Section):
    """The vLLM server shared by all workers (or the stand-in, started by datagen when url is null)."""

    url: ServerUrl = Field(
        None,
        description="http://host:8000 of a vLLM server (a trailing /v1 is fine); accepts "
        "${VAR}; user:password@ in it is sent as basic auth and never written or printed; "
        "null: start the stand-in",
        json_schema_extra=NEUTRAL,
    )
    api_key: SecretStr | None = Field(
        None,
        description="bearer key; accepts ${VAR}; never written to outputs or logs",
        json_schema_extra=NEUTRAL,
    )
    max_in_flight: int = Field(
        512,
        ge=1,
        le=100_000,
        description="ceiling on requests in flight over the whole cluster (the fixed cap when "
        "control is static)",
        json_schema_extra=NEUTRAL,
    )
    control: Literal["adaptive", "static"] = Field(
        "adaptive",
        description="adaptive: steer the in-flight budget from the server's /metrics (queue, "
        "KV cache, preemptions); static: always max_in_flight",
        json_schema_extra=NEUTRAL,
    )
    control_interval_s: float = Field(
        1.0,
        gt=0,
        le=60,
        description="how often each worker reads /metrics (adaptive)",
        json_schema_extra=NEUTRAL,
    )
    retries: int = Field(
        3,
        ge=0,
        le=10,
        description="retries of connection errors, timeouts, 5xx and answers that are not a completion",
        json_schema_extra=NEUTRAL,
    )
    ready_timeout_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="wait this long for /health before giving up",
        json_schema_extra=NEUTRAL,
    )
    sim: SimConfig = Field(
        default_factory=lambda: SimConfig(speed_factor=20.0),
        description="the stand-in's settings when url is null (a load double, never a model)",
    )
