"""Scripted policy: replays the task's own `actions`, then says done."""

from __future__ import annotations

from datagen.records import Decision, Done, Observation, TaskSpec


class Scripted:
    """Replays `task.actions` in order (for tests, replays and demonstrations)."""

    name = "scripted"

    def __init__(self, task: TaskSpec) -> None:
        self._queue = list(task.actions)

    async def decide(self, obs: Observation, task: TaskSpec) -> Decision:
        action = self._queue.pop(0) if self._queue else Done()
        return Decision(action=action, note="scripted")
