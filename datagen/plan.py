"""The plan of a run: tasks, shards and the run id, made before anything starts.

    PipelineConfig ─► make_plan() ─► Plan(tasks, shards, run_id)

`datagen validate` and `datagen run --dry-run` print it; `datagen run` executes it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from datagen import SCHEMA_VERSION
from datagen.config import PipelineConfig
from datagen.errors import ConfigError, SourceError
from datagen.records import TaskSpec
from datagen.source import load_tasks, shard_tasks


@dataclass(frozen=True)
class Plan:
    """What a run will do. `run_id` hashes everything that affects the rows."""

    config: PipelineConfig
    tasks: list[TaskSpec]
    shards: list[list[TaskSpec]]
    run_id: str

    @property
    def episodes(self) -> int:
        return len(self.tasks) * self.config.run.repeats

    @property
    def shard_ids(self) -> list[int]:
        """Indices of the shards (every shard holds at least one task)."""
        return list(range(len(self.shards)))


def make_plan(config: PipelineConfig) -> Plan:
    """Read the task lists and shard them. Source problems become ConfigErrors."""
    try:
        tasks = load_tasks(config)
    except SourceError as exc:
        raise ConfigError(
            str(exc), path="sources", fix="correct the task list (or the pipeline's sources)"
        ) from None
    shards = shard_tasks(tasks, config.run.tasks_per_shard)
    digest = hashlib.sha256(f"{SCHEMA_VERSION}:{config.output_hash()}".encode())
    for task in tasks:
        digest.update(json.dumps(task.model_dump(mode="json"), sort_keys=True).encode())
    return Plan(config=config, tasks=tasks, shards=shards, run_id=digest.hexdigest()[:16])
