"""A worker's model roles (policy, localizer, judge, writer, relabel) on their endpoints.

    {role: RoleConfig} (policy/roles.py) ─► Engines.start() ─► one EngineClient per URL
    Engines.ask(role, messages, schema, model) ─► (parsed answer, ChatResult)

One EngineClient per distinct URL, its pool sized to this worker's share of the cluster-wide
ceiling (so the sum over workers never exceeds it). Its gate holds each role to its share of
the current limit, and hands free slots to the policy first, then the localizer, the judge,
the expression writer and the relabeler (once per episode, after its browser is closed). With `engine.control: adaptive` a task per client steers that limit
from the server's /metrics (`datagen.engine.control`). An answer that fails validation is asked
again once at temperature 0, then becomes a ModelOutputError (a reject reason, not a crash).
A role calls its client only through `ChatClient.chat`, so unit tests `attach` a fake one.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from datagen.config import ROLES, EngineConfig, RoleConfig, RoleName
from datagen.engine.client import ChatClient, ChatResult, EngineClient
from datagen.engine.control import InFlightController
from datagen.engine.health import EngineWatchdog
from datagen.engine.profiles import ModelOutputError, Strict, parse_output

# the gate serves roles in the order they are named (RoleName): the policy first
PRIORITY: dict[RoleName, int] = {name: rank for rank, name in enumerate(ROLES)}


@dataclass
class Role:
    """A role as served: its settings, the client it calls, the served model's name."""

    name: RoleName
    config: RoleConfig
    client: ChatClient
    model: str = ""
    standin: bool = False


class Engines:
    """Clients and gates of one worker; start() on the loop that will use them."""

    def __init__(
        self, engine: EngineConfig, roles: Mapping[RoleName, RoleConfig], workers: int = 1
    ) -> None:
        self.engine = engine
        self.role_configs = roles
        self.fraction = 1 / max(1, workers)  # this worker's part of the cluster's budget
        self.worker_budget = max(1, math.ceil(engine.max_in_flight * self.fraction))
        self.clients: dict[str, EngineClient] = {}
        self.roles: dict[RoleName, Role] = {}
        self._control: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Connect every role's client, wait until each server is ready, start steering."""
        key = self.engine.api_key.get_secret_value() if self.engine.api_key else None
        connected: dict[RoleName, EngineClient] = {}
        for name, config in self.role_configs.items():
            url = config.url or self.engine.url
            if not url:
                raise ValueError(f"role {name} has no URL and engine.url is not set")
            if url not in self.clients:
                self.clients[url] = EngineClient(
                    url,
                    api_key=key,
                    max_in_flight=self.worker_budget,
                    timeout_s=config.timeout_s,
                    retries=self.engine.retries,
                )
            client = connected[name] = self.clients[url]
            client.gate.add_class(name, priority=PRIORITY[name], share=config.share)
        for name, client in connected.items():
            info = await client.wait_ready(self.engine.ready_timeout_s)
            self.attach(name, client, info.id, standin=info.is_standin)
        if self.engine.control == "adaptive":
            for client in self.clients.values():
                controller = InFlightController(self.engine.max_in_flight)
                loop = client.control(controller, self.fraction, self.engine.control_interval_s)
                self._control.append(asyncio.create_task(loop, name=f"control {client.url}"))

    async def close(self) -> None:
        for task in self._control:
            task.cancel()
        await asyncio.gather(*self._control, return_exceptions=True)
        for client in self.clients.values():
            await client.close()

    def counters(self) -> dict[str, float]:
        """Totals of this worker's clients so far (the meter turns them into rates)."""
        out = {"engine_requests": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0}
        out["engine_latency_ms"] = 0.0
        for client in self.clients.values():
            out["engine_requests"] += client.stats.requests
            out["prompt_tokens"] += client.stats.prompt_tokens
            out["completion_tokens"] += client.stats.completion_tokens
            out["engine_latency_ms"] += client.stats.engine_ms
        return out

    def health(self) -> dict[str, float]:
        """The engine-health watchdog's conditions (1: raised on any of this worker's
        endpoints), every one from the start (datagen.engine.health)."""
        out = dict.fromkeys(EngineWatchdog().figures(), 0.0)
        for client in self.clients.values():
            for name, value in client.health.figures().items():
                out[name] = max(out[name], value)
        return out

    def in_flight(self) -> dict[str, float]:
        """Requests at the engine, the limit, and requests waiting for a slot, now."""
        gates = [client.gate for client in self.clients.values()]
        return {
            "engine_in_flight": float(sum(g.active for g in gates)),
            "engine_limit": float(sum(g.limit for g in gates)),
            "engine_queued": float(sum(g.waiting for g in gates)),
        }

    def attach(
        self, name: RoleName, client: ChatClient, served: str, *, standin: bool = False
    ) -> None:
        """Serve role `name` (one of the configured roles) from `client`, whose server serves
        the model `served` (the role's own `model` setting wins). start() attaches each role
        once its server is ready; unit tests attach a fake client instead."""
        config = self.role_configs[name]
        self.roles[name] = Role(name, config, client, config.model or served, standin)

    def has(self, role: RoleName) -> bool:
        """Whether the run calls `role`."""
        return role in self.roles

    async def ask(
        self,
        role: RoleName,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        model: type[Strict],
    ) -> tuple[Any, ChatResult]:
        """One call with a JSON Schema enforced server-side and checked here; re-asked once."""
        r = self.roles[role]
        payload: dict[str, Any] = {
            "model": r.model,
            "messages": messages,
            "temperature": r.config.temperature,
            "max_tokens": r.config.max_tokens,
            "structured_outputs": {"json": schema},
        }
        result = await r.client.chat(payload, timeout_s=r.config.timeout_s, role=r.name)
        try:
            return parse_output(result.content, model), result
        except ModelOutputError:
            retry = await r.client.chat(
                {**payload, "temperature": 0.0}, timeout_s=r.config.timeout_s, role=r.name
            )
            try:
                return parse_output(retry.content, model), _merged(result, retry)
            except ModelOutputError as exc:
                problem = f"{exc} (raw: {retry.content[:300]!r})"
                raise ModelOutputError(problem, raw=retry.content) from None


def _merged(first: ChatResult, second: ChatResult) -> ChatResult:
    """The second answer, with the usage and time of both calls."""
    return ChatResult(
        content=second.content,
        reasoning=second.reasoning,
        finish_reason=second.finish_reason,
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        completion_tokens=first.completion_tokens + second.completion_tokens,
        latency_ms=first.latency_ms + second.latency_ms,
        attempts=first.attempts + second.attempts,
        request_id=second.request_id,
        model=second.model,
        queued_ms=first.queued_ms + second.queued_ms,
    )
