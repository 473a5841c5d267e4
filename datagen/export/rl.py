"""`rl`: rollouts grouped per task, with a scalar reward, for GRPO-style trainers that
normalise rewards within a group.

    ShardData ─► rl_samples(shard, options) ─► data/part-<shard>.parquet (one row per episode)

A group is one task's `run.repeats` episodes in a run (`group_id`; `sample_index` is the
repeat, `seed` the episode's seed). `reward` is the task's check as a float: 1.0 solved, 0.0
not, null when the task has no check (`failure_category` no_check: leave it out of the group's
mean). `group_size` counts the group's episodes in this export; `group_rejected` those of its
repeats that never became an episode (listed in `failures/` with their reject reason): a trainer
that needs full groups drops groups with `group_rejected > 0`. The instruction is the task's:
the reward is about the task. Per-step records are in `steps` (with `needed` where replay
verification ran), screenshots in `images`, and `system` is the system turn (the action tool or
functions and the screen size) a policy acting in this rollout would be prompted with.

A run's synthesised tasks add a group each (`synth.py`): the demonstration and the episodes
its check was false on, with the check (`check`, `fail`) that rewards a rollout.

A rollout with any step chosen by datagen's model stand-in is left out (`left_out.standin_episode`
in the tally) unless `--allow-standin`.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from datagen.export.coords import Frame
from datagen.export.failures import failure_category
from datagen.export.labels import standin
from datagen.export.options import ExportOptions
from datagen.export.parquet import IMAGE
from datagen.export.source import Row, ShardData
from datagen.export.synth import rl_synth
from datagen.export.system import system_text
from datagen.export.tally import Samples
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
        ("system", pa.string()),
        ("reward", pa.float64()),
        ("success", pa.bool_()),
        ("status", pa.string()),
        ("failure_category", pa.string()),
        ("verification", pa.string()),
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
        ("model_image_width", pa.int64()),
        ("model_image_height", pa.int64()),
        ("synth_task_id", pa.string()),
        ("check", pa.string()),
        ("fail", pa.string()),
    ]
)


def reward(episode: Row) -> float | None:
    """The rollout's reward: its success as a float, None when the task has no check or its
    success did not reproduce on replay (the check passed, but nobody knows for what)."""
    success = episode.get("success")
    if success is None or episode.get("verification") == "not_reproduced":
        return None
    return float(success)


def rl_samples(shard: ShardData, options: ExportOptions) -> Samples:
    """One row per episode of the shard, ordered by group then sample index."""
    tally: Counter[str] = Counter()
    episodes = []
    for e in shard.episodes:
        steps = shard.steps_by_episode.get(e["episode_id"], [])
        if not options.allow_standin and any(map(standin, steps)):
            tally["left_out.standin_episode"] += 1
            continue
        episodes.append(e)
    sizes = Counter(e["group_id"] for e in episodes)
    rejected = Counter(r["group_id"] for r in shard.lost())
    out: list[Row] = []
    for e in sorted(episodes, key=lambda e: (e["group_id"], e["sample_index"])):
        steps = shard.steps_by_episode.get(e["episode_id"], [])
        records, images = trajectory(e, steps, options)
        frame = Frame.of(*image_size(steps, e), options)
        out.append(
            {
                **{k: e[k] for k in ("run_id", "group_id", "sample_index", "seed", "task_id")},
                "episode_id": e["episode_id"],
                "instruction": e["instruction"],
                "system": system_text(options.syntax, frame),
                "reward": reward(e),
                "success": e["success"],
                "status": e["status"],
                "failure_category": failure_category(e),
                "verification": e.get("verification"),
                "group_size": sizes[e["group_id"]],
                "group_rejected": rejected[e["group_id"]],
                "n_steps": e["n_steps"],
                "steps": records,
                "images": images,
                "final_screenshot": e["final_screenshot"],
                **frame.columns(options.syntax),
            }
        )
    out += rl_synth(shard, options, tally, lambda f: system_text(options.syntax, f))
    return Samples(out, tally)


def rl_rows(shard: ShardData, options: ExportOptions) -> list[Row]:
    """The shard's rollouts alone."""
    return rl_samples(shard, options).rows
