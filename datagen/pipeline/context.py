"""What a shard needs from its surroundings (runtime/ fills it in on a worker; tests directly)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from datagen.browser.host import BrowserHost
from datagen.config import PipelineConfig
from datagen.engine.roles import Engines
from datagen.observe.meter import Meter
from datagen.pipeline.pool import EpisodePool
from datagen.sink.storage import Storage


class Hosts(Protocol):
    """The run's per-host rules (`run.hosts`, pipeline/hosts.py): one book for the whole
    cluster on a run (runtime/hosts.py), one in the process for a shard run alone."""

    async def acquire(self, key: str, lease: str) -> str | None:
        """Wait for a session on host `key`; None once held, else the host's block cause."""
        ...

    async def release(self, key: str, lease: str) -> None:
        """End the session `lease` (or stop waiting for it)."""
        ...

    async def pace(self, key: str, max_wait_s: float = 0) -> float:
        """Reserve the host's next request; seconds to wait before sending it (-1: none
        within `max_wait_s`, when > 0: nothing reserved, the request is not sent)."""
        ...

    async def paused(self, key: str) -> float:
        """Seconds left of the host's pause (a 429/503's Retry-After); 0 when none."""
        ...

    async def report(
        self, key: str, event: str, detail: str = "", retry_after_s: float = 0
    ) -> None:
        """What the host answered: "ok", "slow" (429/503), "failure" (DNS, connection, 5xx)."""
        ...

    async def robots(self, key: str, text: str | None = None) -> str | None:
        """The host's cached robots.txt (None: not fetched); with `text`, cache it."""
        ...

    async def blocked(self, key: str) -> str | None:
        """The cause of the host's block if one is in force now, else None. Asked right before
        a request to the host (the start load, robots.txt): a block that began after the task
        got its session ends it there, as `host_blocked` (counted in the figures)."""
        ...

    async def robots_turn(self, key: str) -> str | None:
        """The host's cached robots.txt, or None when the caller is to fetch it (it then
        caches it with `robots`, or reports a failure); waits while another task fetches."""
        ...


@dataclass
class SynthMemo:
    """Task synthesis's memory over one shard (pipeline/synthesis.py), by start URL: the
    effects proven so far (another episode's same effect is not proven again) and what moved
    by itself on the start page (observed once per start, a gap apart)."""

    proven: dict[str, set[str]] = field(default_factory=dict)
    moved: dict[str, set[str]] = field(default_factory=dict)
    gauged: dict[str, asyncio.Event] = field(default_factory=dict)  # moved is known (set)


@dataclass
class ShardContext:
    """What a shard needs from its surroundings."""

    config: PipelineConfig
    run_id: str
    host: BrowserHost
    storage: Storage
    resolve_url: Callable[[str], str] = lambda url: url
    on_episode: Callable[[dict[str, Any]], None] = lambda event: None
    engines: Engines | None = None
    meter: Meter = field(default_factory=Meter)
    # The worker's episode slots, shared with the other shards in flight there; None: the
    # shard gets `sessions_per_worker` slots of its own (a shard run alone, in tests).
    pool: EpisodePool | None = None
    # The run's hosts (sessions, pace, blocklist); None: no host limits (a shard in tests).
    hosts: Hosts | None = None
    # Task synthesis's memory: one per shard (run_shard gives each shard its own)
    synth: SynthMemo = field(default_factory=SynthMemo)
