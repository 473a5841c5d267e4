"""`policy:`: who chooses the actions (a seeded walk, a script, or a vision-language model),
and the settings of each model role (endpoint, sampling, share of the in-flight budget).

    policy: {type: vlm, …} ─► PolicyConfig ─► datagen.policy.make_policy() ─► Policy
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from datagen.config.base import NEUTRAL, Section
from datagen.config.urls import ServerUrl


class ExplorePolicyConfig(Section):
    """No model: a seeded, coverage-guided walk over the page's interactive elements."""

    type: Literal["explore"]
    type_probability: float = Field(
        0.9, ge=0, le=1, description="chance to type into an input right after focusing it"
    )
    submit_probability: float = Field(
        0.3,
        ge=0,
        le=1,
        description="chance that Enter, rather than a visible Add/Save/submit button beside the "
        "field, is the first way tried to complete a typed value (the others follow, one a step, "
        "until the app takes the value)",
    )


class ScriptedPolicyConfig(Section):
    """Replays the `actions` listed in each task (for tests and replays)."""

    type: Literal["scripted"]


class RoleConfig(Section):
    """One model role (policy, localizer, judge, annotator): endpoint, sampling and budget share."""

    url: ServerUrl = Field(
        None, description="this role's own server; default: engine.url", json_schema_extra=NEUTRAL
    )
    model: str | None = Field(
        None, description="served model name; default: the server's first model"
    )
    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature (always sent)")
    max_tokens: int = Field(512, ge=1, le=1_048_576, description="output budget (always sent)")
    share: float = Field(
        1.0,
        gt=0,
        le=1,
        description="share of the worker's in-flight budget this role may use",
        json_schema_extra=NEUTRAL,
    )
    timeout_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="limit for one request, retries not included",
        json_schema_extra=NEUTRAL,
    )


class VlmPolicyConfig(Section):
    """A vision-language model drives the browser (Surfer-H-style roles on a vLLM server)."""

    type: Literal["vlm"]
    profile: Literal["holo2_norm1000", "holo15_abs"] = Field(
        "holo2_norm1000",
        description="prompt profile: Holo-style [0,1000] coordinates, or absolute pixels",
    )
    history_images: int = Field(
        3,
        ge=1,
        le=16,
        description="screenshots sent per step; older ones become a text placeholder",
    )
    image_max_width: int = Field(
        1280, ge=64, le=16384, description="screenshots wider than this are resized on the worker"
    )
    policy: RoleConfig = Field(
        default_factory=lambda: RoleConfig(temperature=0.7, max_tokens=512, share=1.0)
    )
    localizer: RoleConfig | None = Field(
        default_factory=lambda: RoleConfig(
            temperature=0.0, max_tokens=64, share=0.5, timeout_s=30.0
        ),
        description="re-grounds each click's element description; null: use the policy's x, y",
    )
    judge: RoleConfig | None = Field(
        None, description="checks the answer when the policy says done"
    )


PolicyConfig = Annotated[
    ExplorePolicyConfig | ScriptedPolicyConfig | VlmPolicyConfig, Field(discriminator="type")
]
