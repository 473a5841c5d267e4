"""What a shard needs from its surroundings (runtime/ fills it in on a worker; tests directly)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from datagen.browser.host import BrowserHost
from datagen.config import PipelineConfig
from datagen.engine.roles import Engines
from datagen.observe.meter import Meter
from datagen.pipeline.pool import EpisodePool
from datagen.sink.storage import Storage


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
