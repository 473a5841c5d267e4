"""A fake engine for unit tests: the roles' chat calls answered from a script, without a server.

    Engines.attach(role, FakeEngine) ─► Engines.ask ─► FakeEngine.chat ─► the next scripted Reply

`Engines.ask` (its re-ask, its merged usage) and everything above it run for real; only the
HTTP client is replaced, through the one-method `ChatClient` seam of `datagen.engine.client`.
The `fake_engine` fixture in tests/conftest.py hands each test a fresh one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from datagen.config import EngineConfig, RoleConfig, RoleName
from datagen.engine.client import ChatResult
from datagen.engine.roles import Engines


@dataclass(frozen=True)
class Reply:
    """One scripted answer and the usage the fake reports for it."""

    content: str
    attempts: int = 1  # what the client would report after its own transport retries
    prompt_tokens: int = 100
    completion_tokens: int = 10
    latency_ms: float = 5.0


@dataclass(frozen=True)
class Call:
    """One chat call the fake received."""

    role: RoleName | None
    payload: dict[str, Any]
    timeout_s: float | None


class FakeEngine:
    """A ChatClient answering each role from its own queue, in order; records every call.

    A role asked with nothing left in its queue fails the test (an unexpected call)."""

    def __init__(self) -> None:
        self.queues: dict[RoleName | None, list[Reply | Exception]] = {}
        self.calls: list[Call] = []

    def script(self, role: RoleName, *answers: str | dict[str, Any] | Reply | Exception) -> None:
        """Queue answers for `role`: text as is, a dict as its JSON, an exception is raised."""
        queue = self.queues.setdefault(role, [])
        for answer in answers:
            if isinstance(answer, dict):
                answer = json.dumps(answer)
            queue.append(Reply(answer) if isinstance(answer, str) else answer)

    async def chat(
        self,
        payload: dict[str, Any],
        *,
        timeout_s: float | None = None,
        role: RoleName | None = None,
    ) -> ChatResult:
        """The next scripted answer of `role`."""
        self.calls.append(Call(role, payload, timeout_s))
        queue = self.queues.get(role)
        assert queue, f"unexpected call for role {role!r}: nothing scripted"
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return ChatResult(
            content=answer.content,
            reasoning=None,
            finish_reason="stop",
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            latency_ms=answer.latency_ms,
            attempts=answer.attempts,
            request_id=f"fake-{len(self.calls)}",
            model=str(payload.get("model", "")),
        )

    @property
    def roles_called(self) -> list[RoleName | None]:
        """The roles of the calls so far, in order."""
        return [call.role for call in self.calls]

    def engines(
        self,
        roles: Mapping[RoleName, RoleConfig],
        *,
        served: str = "fake-model",
        standin: bool = False,
    ) -> Engines:
        """Engines whose roles (all of `roles`) call this fake, as if its server served
        `served`; `standin` as if that server were datagen's stand-in."""
        engines = Engines(EngineConfig(), roles)
        for name in roles:
            engines.attach(name, self, served, standin=standin)
        return engines
