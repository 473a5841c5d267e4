"""Policies: given an observation, choose the next action.

    Observation ─► Policy.decide() ─► Decision(action, target element)

A policy object lives for one episode (it may keep state, e.g. what it has visited);
`make_policy` builds one from the pipeline's `policy:` section.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from datagen.config import ExplorePolicy, PolicyConfig, ScriptedPolicy, VlmPolicy
from datagen.engine.roles import Engines
from datagen.policy.explore import Explorer
from datagen.policy.scripted import Scripted
from datagen.policy.vlm import PolicyFailure
from datagen.policy.vlm import VlmPolicy as ModelPolicy
from datagen.records import Decision, Observation, TaskSpec

__all__ = ["Policy", "PolicyFailure", "make_policy"]


class Policy(Protocol):
    """One episode's decision maker."""

    name: str

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision: ...


def _model_policy(config: VlmPolicy, engines: Engines | None) -> Policy:
    if engines is None:
        raise RuntimeError("the vlm policy needs engines (the worker did not set them up)")
    return ModelPolicy(config, engines)


FACTORIES: dict[type, Callable[..., Policy]] = {
    ExplorePolicy: lambda cfg, task, seed, engines: Explorer(cfg, seed),
    ScriptedPolicy: lambda cfg, task, seed, engines: Scripted(task),
    VlmPolicy: lambda cfg, task, seed, engines: _model_policy(cfg, engines),
}


def make_policy(
    config: PolicyConfig, task: TaskSpec, seed: int, engines: Engines | None = None
) -> Policy:
    """A fresh policy for one episode of `task`."""
    return FACTORIES[type(config)](config, task, seed, engines)
