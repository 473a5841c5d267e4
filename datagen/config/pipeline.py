"""The whole pipeline file: its sections, the checks across them, and the run id's input.

pipelines/X.yaml ─► load_pipeline() ─► PipelineConfig ─► output_hash() ─► datagen.runplan (run id)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import Field, model_validator

from datagen.config.base import NEUTRAL, Section, neutral_exclusions
from datagen.config.browser import BrowserConfig
from datagen.config.engine import EngineConfig
from datagen.config.policy import ExplorePolicyConfig, PolicyConfig, VlmPolicyConfig
from datagen.config.run import ClusterConfig, OutputConfig, RunConfig
from datagen.config.sources import SourceConfig
from datagen.config.stages import AnnotationConfig, ValidationConfig
from datagen.config.urls import has_userinfo


class PipelineConfig(Section):
    """A whole pipeline file."""

    name: str = Field(
        "pipeline",
        description="a name for the run, shown in the output's dataset card",
        json_schema_extra=NEUTRAL,
    )
    sources: list[SourceConfig] = Field(min_length=1, description="task lists to read")
    browser: BrowserConfig = Field(default_factory=BrowserConfig)
    policy: PolicyConfig = Field(default_factory=lambda: ExplorePolicyConfig(type="explore"))
    annotation: AnnotationConfig = Field(default_factory=AnnotationConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    output: OutputConfig
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    base_dir: str = Field(
        "",
        description="set by the loader: folder of the pipeline file",
        exclude=True,
        json_schema_extra=NEUTRAL,
    )

    @model_validator(mode="after")
    def _one_credential(self) -> PipelineConfig:
        if self.engine.api_key is None:
            return self
        roles = [("engine.url", self.engine.url)]
        if isinstance(self.policy, VlmPolicyConfig):
            for name in ("policy", "localizer", "judge"):
                role = getattr(self.policy, name)
                roles.append((f"policy.{name}.url", role.url if role else None))
        relabel = self.annotation.relabel
        if relabel is not None:
            roles.append(("annotation.relabel.url", relabel.url))
            judge = relabel.judge.url if relabel.judge else None
            roles.append(("annotation.relabel.judge.url", judge))
        for key, url in roles:
            if has_userinfo(url):
                raise ValueError(
                    f"{key} carries user:password@ and engine.api_key is set too: the server "
                    "would get two Authorization headers. fix: keep one of them (vLLM's "
                    "--api-key wants engine.api_key)"
                )
        return self

    @model_validator(mode="after")
    def _one_judge(self) -> PipelineConfig:
        relabel = self.annotation.relabel
        if relabel is None or relabel.judge is None:
            return self
        if relabel.check != "judge":
            raise ValueError(
                f"annotation.relabel.judge is set but relabel.check is {relabel.check!r}: it "
                "would never be asked. fix: set check: judge, or remove relabel.judge"
            )
        if isinstance(self.policy, VlmPolicyConfig) and self.policy.judge is not None:
            raise ValueError(
                "annotation.relabel.judge and policy.judge are both set: the run has one judge "
                "role. fix: remove annotation.relabel.judge (the check then uses policy.judge)"
            )
        return self

    @property
    def uses_engine(self) -> bool:
        """True when some stage calls a model server."""
        return (
            isinstance(self.policy, VlmPolicyConfig)
            or self.annotation.model_expressions is not None
            or self.annotation.relabel is not None
        )

    def resolve(self, path: str) -> Path:
        """A path from the file, relative to the pipeline file's folder."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else Path(self.base_dir or ".") / p

    def output_hash(self) -> str:
        """Hash of every setting that changes the rows: all fields but the output-neutral ones
        (`config.base.NEUTRAL`: where the rows go, who computes them, how fast, and limits
        that only decide whether an episode finishes)."""
        data = self.model_dump(mode="json", exclude=neutral_exclusions(self))
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
