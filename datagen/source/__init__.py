"""Sources: task lists in, `TaskSpec`s out, and the stable assignment of tasks to shards.

PipelineConfig.sources ─► load_tasks() ─► list[TaskSpec] ─► shard_tasks() ─► shards
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from pathlib import Path

from datagen.config import (
    JsonlSource,
    PipelineConfig,
    SitesSource,
    UrlsSource,
    WebVoyagerSource,
)
from datagen.errors import SourceError
from datagen.records import TaskSpec
from datagen.source.readers import (
    BUNDLED_SITES,
    SITE_SCHEME,
    read_native,
    read_sites,
    read_urls,
    read_webvoyager,
)

__all__ = ["BUNDLED_SITES", "SITE_SCHEME", "load_tasks", "shard_of", "shard_tasks", "sites_root"]


def _readers(config: PipelineConfig) -> dict[type, Callable[..., list[TaskSpec]]]:
    return {
        SitesSource: lambda s: read_sites(
            config.resolve(s.dir) if s.dir else BUNDLED_SITES, s.sites
        ),
        JsonlSource: lambda s: read_native(config.resolve(s.path), s.limit),
        WebVoyagerSource: lambda s: read_webvoyager(config.resolve(s.path), s.limit),
        UrlsSource: lambda s: read_urls(config.resolve(s.path), s.instruction, s.limit),
    }


def load_tasks(config: PipelineConfig) -> list[TaskSpec]:
    """Every task of every source, in file order; duplicate ids and empty lists are errors."""
    readers = _readers(config)
    tasks: list[TaskSpec] = []
    seen: dict[str, int] = {}
    for index, source in enumerate(config.sources):
        for task in readers[type(source)](source):
            if task.id in seen:
                raise SourceError(
                    f"duplicate task id {task.id!r} (sources[{seen[task.id]}] and sources[{index}]); "
                    "task ids must be unique across a pipeline"
                )
            seen[task.id] = index
            tasks.append(task)
    if config.run.limit:
        tasks = tasks[: config.run.limit]
    if not tasks:
        raise SourceError("the pipeline's sources hold no tasks")
    return tasks


def shard_of(task_id: str, n_shards: int) -> int:
    """Stable shard of a task: the same id lands in the same shard on every machine and run."""
    digest = hashlib.sha256(task_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") % n_shards


def shard_tasks(tasks: list[TaskSpec], tasks_per_shard: int) -> list[list[TaskSpec]]:
    """Split tasks into ceil(n / tasks_per_shard) shards by stable hash of the task id."""
    n_shards = max(1, math.ceil(len(tasks) / tasks_per_shard))
    shards: list[list[TaskSpec]] = [[] for _ in range(n_shards)]
    for task in tasks:
        shards[shard_of(task.id, n_shards)].append(task)
    return shards


def sites_root(config: PipelineConfig) -> Path:
    """The folder `site://` URLs resolve against: the first `sites` source's, else the bundled one."""
    for source in config.sources:
        if isinstance(source, SitesSource) and source.dir:
            return config.resolve(source.dir)
    return BUNDLED_SITES
