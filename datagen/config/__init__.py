"""The pipeline file: pydantic models (extra keys forbidden, frozen) and a loader whose errors
name the YAML path of the bad key and say how to fix it. The ground floor: every stage reads
its settings from here, and nothing here imports a stage.

    pipelines/X.yaml ─► load_pipeline() ─► PipelineConfig ─► every stage

One module per part of the file: `sources`, `browser`, `policy` (and the model roles), `engine`
and `sim` (the stand-in), `stages` (annotation, validation), `run` (output, cluster, run),
`pipeline` (the whole file and its run id), `roles` (the model roles' names), `load`; `base` holds the section base and the
output-neutral mark, `urls` and `allow` the address parsers; `doc` writes the reference
(docs/config.md) and the JSON Schema (schemas/pipeline.schema.json) from these models.
"""

from datagen.config.admission import AdmissionConfig
from datagen.config.allow import AllowEntry, allow_entry_problem, parse_allow_entry
from datagen.config.base import NEUTRAL, Section, is_neutral
from datagen.config.browser import BrowserConfig, Viewport
from datagen.config.engine import EngineConfig
from datagen.config.load import expand_env, load_pipeline, parse_pipeline
from datagen.config.pipeline import PipelineConfig
from datagen.config.policy import (
    ExplorePolicyConfig,
    PolicyConfig,
    RoleConfig,
    ScriptedPolicyConfig,
    VlmPolicyConfig,
)
from datagen.config.roles import ROLES, Caller, RoleName
from datagen.config.run import ClusterConfig, OutputConfig, RunConfig
from datagen.config.sim import STANDIN_OWNER, SimConfig
from datagen.config.sources import (
    JsonlSourceConfig,
    Mind2WebSourceConfig,
    SitesSourceConfig,
    SourceConfig,
    UrlsSourceConfig,
    WebVoyagerSourceConfig,
)
from datagen.config.stages import (
    AnnotationConfig,
    ModelExpressionsConfig,
    RelabelConfig,
    TasksConfig,
    ValidationConfig,
    VerifyConfig,
)
from datagen.config.urls import ServerUrl, engine_url, has_userinfo, redact_url, split_host_port

__all__ = [
    "NEUTRAL",
    "ROLES",
    "STANDIN_OWNER",
    "AdmissionConfig",
    "AllowEntry",
    "AnnotationConfig",
    "BrowserConfig",
    "Caller",
    "ClusterConfig",
    "EngineConfig",
    "ExplorePolicyConfig",
    "JsonlSourceConfig",
    "Mind2WebSourceConfig",
    "ModelExpressionsConfig",
    "OutputConfig",
    "PipelineConfig",
    "PolicyConfig",
    "RelabelConfig",
    "RoleConfig",
    "RoleName",
    "RunConfig",
    "ScriptedPolicyConfig",
    "Section",
    "ServerUrl",
    "SimConfig",
    "SitesSourceConfig",
    "SourceConfig",
    "TasksConfig",
    "UrlsSourceConfig",
    "ValidationConfig",
    "VerifyConfig",
    "Viewport",
    "VlmPolicyConfig",
    "WebVoyagerSourceConfig",
    "allow_entry_problem",
    "engine_url",
    "expand_env",
    "has_userinfo",
    "is_neutral",
    "load_pipeline",
    "parse_allow_entry",
    "parse_pipeline",
    "redact_url",
    "split_host_port",
]
