"""Which model roles a run calls, and with which prompt profile: read from the config's policy
and annotation sections here, so that `engine/` only serves the roles it is handed.

    PipelineConfig ─► roles_for() ─► {role: RoleConfig} ─► engine.roles.Engines
                   ─► profile_for() ─► PromptProfile (the vlm policy's; annotation's prompts)
"""

from __future__ import annotations

from datagen.config import PipelineConfig, RoleConfig, RoleName, VlmPolicyConfig
from datagen.engine.profiles import PROFILES, PromptProfile

DEFAULT_PROFILE = "holo2_norm1000"


def roles_for(config: PipelineConfig) -> dict[RoleName, RoleConfig]:
    """The roles a pipeline calls: the vlm policy's, the expression writer's, the relabeler's
    (and a judge for its check)."""
    roles: dict[RoleName, RoleConfig] = {}
    if isinstance(config.policy, VlmPolicyConfig):
        roles["policy"] = config.policy.policy
        if config.policy.localizer is not None:
            roles["localizer"] = config.policy.localizer
        if config.policy.judge is not None:
            roles["judge"] = config.policy.judge
    expressions = config.annotation.model_expressions
    if expressions is not None:
        roles["writer"] = expressions.writer
    relabel = config.annotation.relabel
    if relabel is not None:
        roles["relabel"] = relabel
        if relabel.check == "judge" and "judge" not in roles:
            roles["judge"] = relabel.judge_role()  # the policy's judge, when it has one, wins
    return roles


def profile_for(config: PipelineConfig) -> PromptProfile:
    """The prompt profile of the run (the vlm policy's, else the default)."""
    name = config.policy.profile if isinstance(config.policy, VlmPolicyConfig) else DEFAULT_PROFILE
    return PROFILES[name]
