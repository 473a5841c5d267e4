"""The export state: which committed shards an export folder holds already.

    <export>/_export.json ◄─► ExportState   (read before an export, written after each shard)

A shard is exported once per version of its parts: the state keeps each exported shard's part
sha256s (from its marker) and the files written for it. A rerun exports only shards that are
new or whose marker now commits other parts (a shard a `--verify` rerun redid), overwriting
that shard's files (deterministic names: `data/<split>-part-<shard>`); nothing else is read.
The state is written after each shard, so an export that was stopped resumes where it was. It
also holds the split's decisions so far (`split.SplitState`: which side each group, site and
screenshot hash went to), which later shards follow, and the card's licence.

The state also pins what the folder holds: one source run and one set of options. An export
into the same folder with other options, or from another run, is refused: its samples would
mix conventions in one dataset. A folder written by an earlier layout (`version` 1: one
`data/part-*` per shard, no split) is refused too: its files and these would not mix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import Field, ValidationError

from datagen.errors import ExportError
from datagen.export.split import SplitState
from datagen.records import Frozen
from datagen.sink.storage import Storage, control_json, read_small

STATE_KEY = "_export.json"
# About 60 bytes of split decisions per screenshot hash, group and site: 256 MiB holds millions
# of samples and refuses a file made to exhaust the exporter's memory (read_small looks first).
STATE_MAX_BYTES = 256 * 1024 * 1024
VERSION = 2  # 2: train / validation parts, grounding per screenshot, no JSONL
COUNTERS = ("tables", "bytes", "source_rows", "failures", "rejected_by_reason", "figures", "tally")


class ShardRecord(Frozen):
    """One exported shard."""

    parts: dict[str, str] = Field(description="table → the sha256 of the part exported")
    files: tuple[str, ...] = Field(description="keys written for it in the export folder")
    rows: int = Field(description="samples (rows of `data/`, both splits) it gave")
    tables: dict[str, int] = Field(
        description="config/split (data/train, elements/validation, failures/train) → rows"
    )
    bytes: dict[str, int] = Field(description="config/split → Parquet bytes written")
    source_rows: dict[str, int] = Field(description="table → rows read from the output")
    episodes_kept: int = Field(description="episodes that gave samples")
    failures: dict[str, int] = Field(description="failure category → count")
    rejected_by_reason: dict[str, int] = Field(description="reject reason → rejected episodes")
    figures: dict[str, int] = Field(
        description="the card's counts (figures.py): task-labelled, verified, versions, models"
    )
    tally: dict[str, int] = Field(
        default_factory=dict, description="the format's own counts of labels and left-out samples"
    )
    exported_at: float


class ExportState(Frozen):
    """`_export.json`: the source, the options, and the shards exported so far."""

    version: int = Field(VERSION, description="the folder's layout (module docstring)")
    source: str = Field(description="the output exported (its URI)")
    run_id: str
    schema_version: str = Field(description="of the source run")
    options: dict[str, object] = Field(description="format and the options it reads")
    license: str = Field("other", description="the card's licence (--license; the last given)")
    split: SplitState = Field(description="the sides chosen so far (split.py)")
    shards: dict[int, ShardRecord] = Field(default_factory=dict)

    def with_shard(self, shard: int, record: ShardRecord, split: SplitState) -> ExportState:
        """The state with `shard` (re)recorded and the split as it stands after it."""
        return self.model_copy(update={"shards": {**self.shards, shard: record}, "split": split})

    def totals(self) -> ShardRecord:
        """Every shard's counts summed (`files` all files, `exported_at` the latest)."""
        return _sum(self.shards.values())


def _sum(records: Iterable[ShardRecord]) -> ShardRecord:
    total: dict[str, dict[str, int]] = {name: {} for name in COUNTERS}
    rows = kept = 0
    files: list[str] = []
    latest = 0.0
    for r in records:
        rows, kept, latest = rows + r.rows, kept + r.episodes_kept, max(latest, r.exported_at)
        files += r.files
        for name in total:
            for key, n in getattr(r, name).items():
                total[name][key] = total[name].get(key, 0) + n
    return ShardRecord(
        parts={}, files=tuple(files), rows=rows, episodes_kept=kept, exported_at=latest, **total
    )


def load_state(storage: Storage) -> ExportState | None:
    """The folder's state, None for a folder without one. ExportError for one not written here."""
    if not storage.exists(STATE_KEY):
        return None
    try:
        raw = read_small(storage, STATE_KEY, STATE_MAX_BYTES)
    except ValueError as exc:
        raise ExportError(
            f"{storage.uri}/{STATE_KEY} {exc}: not a datagen export's state; "
            "fix: export into another folder with --to, or delete that one"
        ) from None
    try:
        version = control_json(raw).get("version", 1)
    except (ValueError, AttributeError):
        version = VERSION  # not JSON, or not an object: the validation below says so
    if version != VERSION:
        raise ExportError(
            f"{storage.uri} holds an export of layout {version} (an earlier datagen: one "
            "data/part-* per shard, no validation split); this one writes layout "
            f"{VERSION}; fix: export into another folder with --to, or delete that one"
        )
    try:
        return ExportState.model_validate_json(raw)
    except ValidationError as exc:
        raise ExportError(
            f"{storage.uri}/{STATE_KEY} is not a datagen export's state ({exc.errors()[0]['msg']}); "
            "fix: export into another folder with --to, or delete that one"
        ) from None


def check_same(state: ExportState, run_id: str, options: dict[str, object]) -> None:
    """Refuse to add to a folder that holds another run's or other options' export."""
    if state.run_id != run_id:
        raise ExportError(
            f"the export folder holds run {state.run_id} (from {state.source}), not {run_id}; "
            "fix: export into another folder with --to"
        )
    if state.options != options:
        differ = [k for k in {**state.options, **options} if state.options.get(k) != options.get(k)]
        theirs = " ".join(_flag(k, state.options.get(k)) for k in differ)
        yours = " ".join(_flag(k, options.get(k)) for k in differ)
        raise ExportError(
            f"the export folder holds an export made with {theirs} (this one: {yours}); its "
            "samples and these would mix conventions; fix: use the same options, or another "
            "folder with --to"
        )


def _flag(key: str, value: object) -> str:
    """An export option as `datagen export` spells it: `--coords norm1000`, `--allow-standin`,
    `--no-allow-standin`."""
    name = key.replace("_", "-")
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no-{name}"
    return f"--{name} {value}"


def save_state(storage: Storage, state: ExportState) -> None:
    """Write the state whole (Storage.put: a reader sees the old or the new one)."""
    data = state.model_dump(mode="json")
    storage.put(STATE_KEY, json.dumps(data, indent=1).encode())


def pending(state: ExportState | None, digests: dict[int, dict[str, str]]) -> list[int]:
    """Committed shards (shard → its parts' sha256s) the state does not hold as they are now."""
    held = state.shards if state else {}
    return [s for s, parts in sorted(digests.items()) if s not in held or held[s].parts != parts]
