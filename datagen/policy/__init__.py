"""Policies: given an observation, choose the next action.

    Observation ─► Policy.decide() ─► Decision(action, target element)

A policy object lives for one episode (it may keep state, e.g. what it has visited);
`make_policy` builds one from the pipeline's `policy:` section and the episode's scope;
`roles_for` and `profile_for` say which model roles the run calls and with which prompt
profile (`roles.py`; `engine/` never reads the policy section). A policy that is also
`Recovering` is told when an action of its own led off the scope (the pipeline then brought
the page back; the observation it would have seen is not data).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from datagen.config import (
    ExplorePolicyConfig,
    PolicyConfig,
    ScriptedPolicyConfig,
    VlmPolicyConfig,
)
from datagen.engine.roles import Engines
from datagen.policy.explore import Explorer
from datagen.policy.roles import profile_for, roles_for
from datagen.policy.scripted import Scripted
from datagen.policy.vlm import PolicyFailure, VlmPolicy
from datagen.records import Decision, Observation, TaskSpec
from datagen.scope import Scope

__all__ = [
    "Policy",
    "PolicyFailure",
    "Recovering",
    "make_policy",
    "profile_for",
    "roles_for",
]


class Policy(Protocol):
    """One episode's decision maker."""

    name: str

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision: ...


@runtime_checkable
class Recovering(Protocol):
    """A policy that wants to know when its last action led off the scope (off_scope,
    error_page or blank_page: the reason's value) and where."""

    def strayed(self, reason: str, url: str) -> None: ...


def _model_policy(config: VlmPolicyConfig, engines: Engines | None) -> Policy:
    if engines is None:
        raise RuntimeError("the vlm policy needs engines (the worker did not set them up)")
    return VlmPolicy(config, engines)


FACTORIES: dict[type, Callable[..., Policy]] = {
    ExplorePolicyConfig: lambda cfg, task, seed, engines, scope: Explorer(cfg, seed, scope),
    ScriptedPolicyConfig: lambda cfg, task, seed, engines, scope: Scripted(task),
    VlmPolicyConfig: lambda cfg, task, seed, engines, scope: _model_policy(cfg, engines),
}


def make_policy(
    config: PolicyConfig,
    task: TaskSpec,
    seed: int,
    engines: Engines | None = None,
    scope: Scope | None = None,
) -> Policy:
    """A fresh policy for one episode of `task`; `scope` defaults to the start URL's site."""
    scope = scope or Scope.for_task("site", task.start_url)
    return FACTORIES[type(config)](config, task, seed, engines, scope)
