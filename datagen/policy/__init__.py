"""Policies: given an observation, choose the next action.

    Observation ─► Policy.decide() ─► Decision(action, target element)

A policy object lives for one episode (it may keep state, e.g. what it has visited);
`make_policy` builds one from the pipeline's `policy:` section.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from datagen.config import ExplorePolicy, PolicyConfig, ScriptedPolicy
from datagen.policy.explore import Explorer
from datagen.policy.scripted import Scripted
from datagen.records import Decision, Observation, TaskSpec


class Policy(Protocol):
    """One episode's decision maker."""

    name: str

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision: ...


FACTORIES: dict[type, Callable[..., Policy]] = {
    ExplorePolicy: lambda cfg, task, seed: Explorer(cfg, seed),
    ScriptedPolicy: lambda cfg, task, seed: Scripted(task),
}


def make_policy(config: PolicyConfig, task: TaskSpec, seed: int) -> Policy:
    """A fresh policy for one episode of `task`."""
    return FACTORIES[type(config)](config, task, seed)
