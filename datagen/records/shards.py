"""What a worker reports for a finished shard, and what a resumed run takes from earlier ones.

pipeline (one shard) ─► ShardResult ─► runtime driver (progress, summary)
markers of the shards a run skips ─► Resumed ─► runtime driver (run summary)
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from datagen.records.base import Frozen


class ShardResult(Frozen):
    """What a worker reports for a finished shard (the rows themselves went to the sink)."""

    shard: int
    tasks: int
    episodes: int
    steps: int
    grounding: int
    rejects: int
    solved: int
    reject_reasons: dict[str, int]
    seconds: float = Field(
        description="from the shard's start on its worker to its commit, waiting for the "
        "worker's episode slots (shared with the other shards in flight there) included"
    )
    peak_sessions: int = Field(
        0,
        description="most episodes in flight at once on the worker (this shard's and the other "
        "shards' there) while this shard ran: the worker's pool was full when it equals "
        "sessions_per_worker",
    )
    browser_memory_mb: float = Field(
        0.0, description="the worker's browser memory (USS) when the shard ended"
    )
    browser_episodes: int = Field(0, description="episodes this browser has run since it started")
    tasks_with_episodes: int = Field(0, description="tasks of the shard with at least one episode")
    session_s: float = Field(
        0.0, description="browser session time of its episodes: their own and their replays'"
    )
    verify_s: float = Field(
        0.0, description="of it, replay verification's (annotation.verify): the replays' time"
    )
    replays: int = Field(0, description="replays made to verify its solved episodes")
    replay_network: dict[str, int] = Field(
        default_factory=dict,
        description="what those replays sent to the network, by 'METHOD host' (hosts in "
        "annotation.verify.live only; the rest was answered from the episodes' recorded "
        "traffic or refused)",
    )
    replay_refused: dict[str, int] = Field(
        default_factory=dict,
        description="what those replays tried to send and were refused, by 'METHOD host'",
    )
    verified: int = Field(
        0,
        description="solved episodes verified (replayed, or one action proven by the episode "
        "itself)",
    )
    synth_s: float = Field(
        0.0,
        description="task synthesis's (annotation.tasks) replays' time, apart from session_s",
    )
    tasks_synthesised: int = Field(0, description="synthesised tasks its proof kept")
    tasks_dropped: dict[str, int] = Field(
        default_factory=dict,
        description="synthesised tasks its proof dropped, by the step that dropped them "
        "(TaskRow.dropped_at)",
    )

    @model_serializer(mode="wrap")
    def _omit_unverified(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out while zero: a marker of a shard that verified (or synthesised) nothing reads
        # and writes back byte for byte as earlier versions wrote it.
        data: dict[str, Any] = handler(self)
        for key in (
            "session_s",
            "verify_s",
            "replays",
            "replay_network",
            "replay_refused",
            "verified",
            "synth_s",
            "tasks_synthesised",
            "tasks_dropped",
        ):
            if not data.get(key):
                data.pop(key, None)
        return data


class Resumed(Frozen):
    """What earlier runs into an output committed, from the markers of the shards a run skips.
    Each task × repeat ends once: as an episode row or as a reject."""

    shards: int = 0
    ended: int = Field(0, description="tasks × repeats of those shards: all of them ended")
    episodes: int = Field(0, description="of them, those that became episode rows")

    @property
    def rejected(self) -> int:
        """Those that ended as a reject."""
        return self.ended - self.episodes
