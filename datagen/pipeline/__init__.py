"""One shard's whole flow, top to bottom. No Dask in here: runtime/ calls `run_shard` on a
worker's browser loop, tests call it directly.

    TaskSpec ─► session.goto ─► [observe ─► check ─► policy ─► validate ─► act] × steps
             ─► StepRow, GroundingRow, EpisodeRow | RejectRow ─► sink.write_shard

- shard.py: a shard's episodes, its stats, its parts written once;
- pool.py: the worker's episode slots, shared by the shards in flight on it;
- episode.py: one episode (the `Episode` object) and its step loop;
- course.py: the episode's scope and what page may become data;
- failures.py: a failed episode read as its reject;
- rows.py: the rows built from what the episode saw and did (and grounding annotation);
- context.py: what a shard needs from its surroundings;
- local.py: `LocalRunner`, shards run in this process without Dask (tests, benches, scripts).
"""

from datagen.pipeline.context import ShardContext
from datagen.pipeline.episode import Episode, run_episode
from datagen.pipeline.local import LocalRunner, ShardRun
from datagen.pipeline.pool import EpisodePool, shards_in_flight
from datagen.pipeline.rows import EpisodeOutcome, image_width_limit
from datagen.pipeline.shard import run_shard

__all__ = [
    "Episode",
    "EpisodeOutcome",
    "EpisodePool",
    "LocalRunner",
    "ShardContext",
    "ShardRun",
    "image_width_limit",
    "run_episode",
    "run_shard",
    "shards_in_flight",
]
