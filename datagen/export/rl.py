"""`rl`: rollouts grouped per task, with a scalar reward, for GRPO-style trainers that
normalise rewards within a group.

    ShardData ─► rl_rows(shard, options) ─► data/part-<shard>.parquet (one row per episode)

A group is one task's `run.repeats` episodes in a run (`group_id`; `sample_index` is the
repeat, `seed` the episode's seed). `reward` is the task's check as a float: 1.0 solved, 0.0
not, null when the task has no check (`failure_category` no_check: leave it out of the group's
mean). `group_size` counts the group's episodes in this export; `group_rejected` those of its
repeats that never became an episode (listed in `failures/` with their reject reason): a trainer
that needs full groups drops groups with `group_rejected > 0`. The instruction is the task's:
the reward is about the task. Per-step records are in `steps`, screenshots in `images`.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from datagen.export.failures import failure_category
from datagen.export.options import ExportOptions
from datagen.export.parquet import IMAGE
from datagen.export.source import Row, ShardData
from datagen.export.trajectory import STEP, image_size, trajectory

SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("group_id", pa.string()),
        ("sample_index", pa.int64()),
        ("seed", pa.int64()),
        ("task_id", pa.string()),
        ("episode_id", pa.string()),
        ("instruction", pa.string()),
        ("reward", pa.float64()),
        ("success", pa.bool_()),
        ("status", pa.string()),
        ("failure_category", pa.string()),
        ("group_size", pa.int64()),
        ("group_rejected", pa.int64()),
        ("n_steps", pa.int64()),
        ("steps", pa.list_(STEP)),
        ("images", pa.list_(IMAGE)),
        ("final_screenshot", IMAGE),
        ("coords", pa.string()),
        ("syntax", pa.string()),
        ("image_width", pa.int64()),
        ("image_height", pa.int64()),
    ]
)


def reward(episode: Row) -> float | None:
    """The rollout's reward: its success as a float, None when the task has no check."""
    success = episode.get("success")
    return None if success is None else float(success)


def rl_rows(shard: ShardData, options: ExportOptions) -> list[Row]:
    """One row per episode of the shard, ordered by group then sample index."""
    sizes = Counter(e["group_id"] for e in shard.episodes)
    rejected = Counter(r["group_id"] for r in shard.lost())
    out: list[Row] = []
    for e in sorted(shard.episodes, key=lambda e: (e["group_id"], e["sample_index"])):
        steps = shard.steps_by_episode.get(e["episode_id"], [])
        records, images = trajectory(e, steps, options)
        width, height = image_size(steps, e)
        out.append(
            {
                **{k: e[k] for k in ("run_id", "group_id", "sample_index", "seed", "task_id")},
                "episode_id": e["episode_id"],
                "instruction": e["instruction"],
                "reward": reward(e),
                "success": e["success"],
                "status": e["status"],
                "failure_category": failure_category(e),
                "group_size": sizes[e["group_id"]],
                "group_rejected": rejected[e["group_id"]],
                "n_steps": e["n_steps"],
                "steps": records,
                "images": images,
                "final_screenshot": e["final_screenshot"],
                "coords": options.coords,
                "syntax": options.syntax,
                "image_width": width,
                "image_height": height,
            }
        )
    return out
