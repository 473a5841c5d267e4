"""Reading a datagen output for an export: committed shards only, one shard at a time.

    output (local or s3://) ─► read_markers ─► pending shards ─► read_shard ─► ShardData

Only what a completion marker commits is read (a run that is still writing shows its committed
shards and nothing else), each part checked against the marker's sha256. A task's repeats all
run in one shard, so a shard holds whole groups: the formats need nothing from other shards
but a synthesised task's `rl` group, whose 0.0 rollouts may be in any (ShardData.rollouts).

Outputs of schema < 1.2 lack the group and description columns; they are filled here the way
the pipeline fills them now, so every format reads one shape:
`group_id` = the first 16 hex of sha256("run_id:task_id"), `sample_index` = the episode's
place among its task's episodes in the shard (episodes are written in repeat order; a rejected
repeat shifts the later ones), `action_description` = `actions.describe`.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from datagen.errors import ExportError, OutputError
from datagen.export.actions import describe
from datagen.sink.checked import PartError, read_part
from datagen.sink.models import Marker, RunInfo
from datagen.sink.storage import Storage
from datagen.sink.writer import read_markers, read_run

Row = dict[str, Any]
# Rejects that mean no episode row at all (a relabel or step reject keeps its episode).
LOST_EPISODE = ("task", "episode")


@dataclass
class ShardData:
    """One committed shard's rows, with the columns every format reads filled in."""

    marker: Marker
    episodes: list[Row]
    steps: list[Row]
    grounding: list[Row]
    rejects: list[Row]
    steps_by_episode: dict[str, list[Row]] = field(default_factory=dict)
    # the synthesised tasks whose samples this shard gives (export/synth.py: one per (start
    # URL, effect) over the whole output, on its source episode's shard)
    tasks: list[Row] = field(default_factory=list)
    # episode id → (episode, steps) of other shards that its tasks' rl groups take as 0.0
    # rollouts (export/synth.py elsewhere(); `rl` only)
    rollouts: dict[str, tuple[Row, list[Row]]] = field(default_factory=dict)

    @property
    def shard(self) -> int:
        """The shard's number."""
        return self.marker.shard

    def reachable(self) -> dict[str, tuple[Row, list[Row]]]:
        """Episode id → (episode, steps): the shard's own episodes and the `rollouts` of other
        shards its rl groups take (its own first, where an id is in both)."""
        steps = self.steps_by_episode
        own = {e["episode_id"]: (e, steps.get(e["episode_id"], [])) for e in self.episodes}
        return self.rollouts | own

    def lost(self) -> list[Row]:
        """Rejects that cost a whole episode (its task or episode stage)."""
        return [r for r in self.rejects if r["stage"] in LOST_EPISODE]


def source_run(storage: Storage) -> RunInfo:
    """The output's `_run.json`; ExportError when the folder is not a datagen output."""
    try:
        run = read_run(storage)
    except OutputError as exc:
        raise ExportError(str(exc)) from None
    if run is None:
        raise ExportError(
            f"{storage.uri} holds no datagen output (no _run.json); fix: pass the folder or "
            "s3:// prefix that `datagen run` wrote (its output.uri)"
        )
    return run


def committed(storage: Storage) -> list[Marker]:
    """The committed shards' markers, in shard order (unreadable ones are skipped, warned)."""
    return read_markers(storage)


def part_digests(marker: Marker) -> dict[str, str]:
    """Table → sha256 of the shard's part: what the export state compares."""
    return {f.table: f.sha256 for f in marker.files}


def read_shard(
    storage: Storage, marker: Marker, run_id: str, only: tuple[str, ...] | None = None
) -> ShardData:
    """A committed shard's four parts, checked against the marker, with defaults filled;
    `only`: just those tables (the others empty), e.g. the split's episodes and steps."""
    tables: dict[str, list[Row]] = {t: [] for t in ("episodes", "steps", "grounding", "rejects")}
    for f in marker.files:
        if f.table not in tables or (only is not None and f.table not in only):
            continue  # `tasks`: read across shards (export/synth.py)
        try:  # the sink's checked reader: a regular file, size, sha256, schema, bounded
            tables[f.table] = read_part(storage, marker.shard, f).to_pylist()
        except PartError as exc:
            raise ExportError(str(exc)) from None
    shard = ShardData(
        marker, tables["episodes"], tables["steps"], tables["grounding"], tables["rejects"]
    )
    _fill(shard, run_id)
    return shard


def group_id(run_id: str, task_id: str) -> str:
    """A task's group in a run (the pipeline's own formula, for outputs that lack it)."""
    return hashlib.sha256(f"{run_id}:{task_id}".encode()).hexdigest()[:16]


def _fill(shard: ShardData, run_id: str) -> None:
    seen: dict[str, int] = defaultdict(int)
    for episode in shard.episodes:
        task = episode["task_id"]
        if episode.get("group_id") is None:
            episode["group_id"] = group_id(episode.get("run_id") or run_id, task)
        if episode.get("sample_index") is None:
            episode["sample_index"] = seen[task]
        seen[task] += 1
        if episode.get("instruction_source") is None:
            episode["instruction_source"] = "task"
    for reject in shard.rejects:
        reject["group_id"] = group_id(reject.get("run_id") or run_id, reject["task_id"])
    by_episode: dict[str, list[Row]] = defaultdict(list)
    for step in shard.steps:
        by_episode[step["episode_id"]].append(step)
        if step.get("action_description") is None:
            step["action_description"] = describe(step)
            step["description_source"] = "action"  # derived here, not by the pipeline
        else:
            step["description_source"] = "pipeline"
    for steps in by_episode.values():
        steps.sort(key=lambda s: s["step_index"])
    shard.steps_by_episode = dict(by_episode)
