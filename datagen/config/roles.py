"""The names of the model roles, once: a Literal, so that a misspelt role is a mypy error in
every module that names one (the config's checks, the engine's gate and clients, the policy,
the annotators, the capacity model).

    RoleName ─► policy.roles.roles_for ─► {role: RoleConfig} ─► engine.roles.Engines
                                                     ─► EngineClient.chat(role) ─► gate share

`policy` chooses the action; `localizer` turns a described target into a point; `judge` says
whether the task is done (the policy's, or the relabel check's); `writer` writes referring
expressions (annotation.model_expressions); `relabel` writes an episode's hindsight instruction
(annotation.relabel). In this order a freed slot of the in-flight budget goes to them.
"""

from __future__ import annotations

from typing import Literal, get_args

RoleName = Literal["policy", "localizer", "judge", "writer", "relabel"]
ROLES: tuple[RoleName, ...] = get_args(RoleName)
# Who makes an engine call: a role, or None for a call outside them (`engine check`, a bench).
Caller = RoleName | None
