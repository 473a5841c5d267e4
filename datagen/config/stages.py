"""`annotation:` and `validation:`: what rows a step yields besides the step itself (grounding
rows, model-written referring expressions) and which of them are kept.

    annotation: ─► AnnotationConfig ─► datagen.annotate;  validation: ─► ValidationConfig ─► datagen.validate
"""

from __future__ import annotations

from pydantic import Field

from datagen.config.base import Section
from datagen.config.policy import RoleConfig


class ModelExpressionsConfig(Section):
    """Referring expressions written by the model for DOM elements, kept only if they round-trip."""

    per_step: int = Field(2, ge=1, le=100, description="elements per screenshot to describe")
    writer: RoleConfig = Field(
        default_factory=lambda: RoleConfig(temperature=0.0, max_tokens=64, share=0.3)
    )


class AnnotationConfig(Section):
    """Rows written for each step's elements."""

    grounding: bool = Field(True, description="write grounding rows for each step's elements")
    max_elements_per_step: int = Field(
        60, ge=1, le=10_000, description="cap on grounding rows per screenshot"
    )
    model_expressions: ModelExpressionsConfig | None = Field(
        None,
        description="ask the model for referring expressions and check them with the localizer",
    )


class ValidationConfig(Section):
    """Checks a grounding row must pass to be kept."""

    min_box_px: float = Field(
        4.0, ge=0, le=10_000, description="grounding boxes smaller than this are rejected"
    )
    require_hit_test: bool = Field(
        True, description="reject grounding rows whose element is occluded"
    )
