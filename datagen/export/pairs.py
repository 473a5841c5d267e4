"""`pairs`: chosen / rejected trajectories of the same task, for DPO-style preference training.

    ShardData ─► pair_rows(shard, options) ─► data/part-<shard>.parquet (one row per pair)

Within a group (one task's repeats in a run), the solved episodes (check passed) and the failed
ones (check ran and said no) are each ordered by `sample_index` and paired in that order: the
first solved with the first failed, and so on, so each episode is in at most one pair and
`min(solved, failed)` pairs come of a group. Episodes without a check are in neither side (no
one knows whether they did the task). All repeats of a task start from the same start URL and
state; they differ in their seed. The rejected side's `rejected_failure_category` says how it
failed.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict

import pyarrow as pa

from datagen.export.failures import failure_category, solved
from datagen.export.options import ExportOptions
from datagen.export.parquet import IMAGE
from datagen.export.source import Row, ShardData
from datagen.export.trajectory import STEP, trajectory

SIDE = [
    ("episode_id", pa.string()),
    ("sample_index", pa.int64()),
    ("seed", pa.int64()),
    ("n_steps", pa.int64()),
    ("status", pa.string()),
    ("steps", pa.list_(STEP)),
    ("images", pa.list_(IMAGE)),
    ("final_screenshot", IMAGE),
]
SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("run_id", pa.string()),
        ("group_id", pa.string()),
        ("task_id", pa.string()),
        ("instruction", pa.string()),
        ("start_url", pa.string()),
        *[(f"chosen_{name}", dtype) for name, dtype in SIDE],
        *[(f"rejected_{name}", dtype) for name, dtype in SIDE],
        ("rejected_failure_category", pa.string()),
        ("coords", pa.string()),
        ("syntax", pa.string()),
    ]
)


def pair_rows(shard: ShardData, options: ExportOptions) -> list[Row]:
    """The shard's pairs, group by group."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for e in shard.episodes:
        groups[e["group_id"]].append(e)
    out: list[Row] = []
    for group in sorted(groups):
        episodes = sorted(groups[group], key=lambda e: e["sample_index"])
        wins = [e for e in episodes if solved(e)]
        losses = [e for e in episodes if e.get("success") is False]
        for chosen, rejected in zip(wins, losses, strict=False):
            out.append(_pair(shard, chosen, rejected, options))
    return out


def _pair(shard: ShardData, chosen: Row, rejected: Row, options: ExportOptions) -> Row:
    ids = f"{chosen['episode_id']}:{rejected['episode_id']}"
    row: Row = {
        "pair_id": hashlib.sha256(ids.encode()).hexdigest()[:16],
        **{k: chosen[k] for k in ("run_id", "group_id", "task_id", "instruction", "start_url")},
        "rejected_failure_category": failure_category(rejected),
        "coords": options.coords,
        "syntax": options.syntax,
    }
    for side, episode in (("chosen", chosen), ("rejected", rejected)):
        steps = shard.steps_by_episode.get(episode["episode_id"], [])
        records, images = trajectory(episode, steps, options)
        for key in ("episode_id", "sample_index", "seed", "n_steps", "status", "final_screenshot"):
            row[f"{side}_{key}"] = episode[key]
        row[f"{side}_steps"], row[f"{side}_images"] = records, images
    return row
