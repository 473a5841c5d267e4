"""The sink's own files, typed: what a run's claim, a shard's marker, a shard lease and the
manifest hold.

    claim_output()                   ─► RunInfo      _run.json
    run_shard ─► ShardResult ─► write_shard() ─► Marker    _markers/shard-<n>.json
    ShardLeases.take()               ─► ShardClaim   _claims/shard-<n>.g<gen>.json
    Markers ─► finalize()            ─► Manifest     _manifest.json (+ the dataset card)

Each is written as `json.dumps(model.model_dump(mode="json"), indent=1)`: the keys and their
order are those of the dicts earlier versions wrote, so an output of an earlier version reads
here and the other way round. Unknown keys are refused (`extra="forbid"`, as every record):
the shapes of markers and `_run.json` have not changed since the first version, the shard
stats (`ShardResult`) only gained fields with defaults, and the manifest's later sections
(`tasks`, `steps_dropped`, `engine`) have defaults too; a file with keys none of these had is
not one datagen wrote. The one exception is `ShardClaim`, which ignores unknown keys: a lease
whose holder cannot be read counts as free and is taken over, so a stricter reading of another
version's lease would let two runs work on one shard.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from datagen.records import Frozen, ShardResult


class RunInfo(Frozen):
    """`_run.json`: which run owns the output (created once, exclusively, by the first run)."""

    run_id: str = Field(description="the run id: a rerun of the same pipeline has the same")
    schema_version: str = Field(description="the row schema the run writes")
    datagen_version: str = Field(description="the datagen that started the output")
    pipeline: dict[str, Any] = Field(description="the pipeline config, as JSON")
    started_at: float = Field(description="when the output was claimed (Unix time)")


class PartFile(Frozen):
    """One Parquet part a marker commits. Strict: a marker edited by hand (`"rows": "9"`) is
    refused, not coerced."""

    model_config = ConfigDict(strict=True)

    table: str = Field(description="episodes, steps, grounding or rejects")
    key: str = Field(description="the part's key in the output, `part_key(table, shard)`")
    rows: int = Field(description="rows in the part")
    bytes: int = Field(description="the part's size")
    sha256: str = Field(description="the sha256 of the part's bytes, hex")


class Marker(Frozen):
    """A shard's completion marker, written after every part of the shard: the shard counts
    as committed once it exists. Read through `writer.parse_marker`, which checks its shape."""

    shard: int = Field(description="the shard it commits")
    files: tuple[PartFile, ...] = Field(description="one part per table, in TABLES order")
    stats: ShardResult = Field(description="what the shard's worker reported")
    written_at: float = Field(description="when the marker was written (Unix time)")


class ShardClaim(BaseModel):
    """A shard lease's body: the token of the run holding it (see `lease`). Unknown keys are
    ignored (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    token: str = Field(description="the holding run's token, as in its `_claims/run-<token>.json`")
    taken_at: float = Field(0.0, description="when the lease was created (Unix time)")


class ManifestFile(Frozen):
    """A committed part, as the manifest lists it under its table."""

    key: str
    rows: int
    bytes: int
    sha256: str


class TableFiles(Frozen):
    """One table in the manifest: its committed rows and parts."""

    rows: int = 0
    files: tuple[ManifestFile, ...] = ()


class ShardCounts(Frozen):
    """The run's shards: planned, committed, and those still missing."""

    expected: int
    committed: int
    missing: tuple[int, ...]


class TaskCounts(Frozen):
    """The committed shards' tasks, and how many of them gave at least one episode."""

    committed: int = 0
    with_episodes: int = 0


class StepsDropped(Frozen):
    """Observations not kept (off-scope, error or blank pages): by reason, total, and their
    share of all observations (kept steps + dropped)."""

    by_reason: dict[str, int] = Field(default_factory=dict)
    total: int = 0
    share: float = 0.0


class EngineEndpoint(Frozen):
    """One model server the run called."""

    model: str = Field(description="the served model's id")
    max_model_len: int | None = Field(description="its context length, when the server says")
    standin: bool = Field(description="datagen's engine stand-in: answers are not a model's")


class EngineInfo(Frozen):
    """The model servers a run called; `standin` when any of them is the stand-in."""

    standin: bool = False
    endpoints: tuple[EngineEndpoint, ...] = ()


class Manifest(Frozen):
    """`_manifest.json`: what the run committed, written by `finalize` at the end of a run."""

    run_id: str
    schema_version: str
    complete: bool = Field(description="every expected shard is committed")
    shards: ShardCounts
    tables: dict[str, TableFiles] = Field(description="table → its rows and parts, TABLES order")
    reject_reasons: dict[str, int] = Field(description="reason → rejects, most frequent first")
    solved: int = Field(description="episodes whose success check passed")
    tasks: TaskCounts = Field(default_factory=TaskCounts)
    steps_dropped: StepsDropped = Field(default_factory=StepsDropped)
    packages: dict[str, str] = Field(description="datagen's and its main packages' versions")
    engine: EngineInfo | None = Field(None, description="absent when no model was called")
    pipeline: dict[str, Any] = Field(description="the pipeline config, as JSON")
    finished_at: float = Field(description="when the manifest was written (Unix time)")

    @property
    def output(self) -> tuple[str, str | None]:
        """The output's URI and S3 endpoint, from the pipeline."""
        output = self.pipeline.get("output", {})
        return str(output.get("uri", "")), output.get("endpoint_url")

    def to_json(self) -> bytes:
        """The file's bytes: `engine` left out when no model was called, as before."""
        data = self.model_dump(mode="json", exclude={"engine"} if self.engine is None else None)
        return _dumps(data)


def to_json(model: BaseModel) -> bytes:
    """A model as the sink writes it: `json.dumps` of its JSON dump, indent 1 (the bytes
    earlier versions wrote for the same dict)."""
    return _dumps(model.model_dump(mode="json"))


def _dumps(data: dict[str, Any]) -> bytes:
    return json.dumps(data, indent=1).encode()
