"""The end of a run: the manifest (what is committed) and the dataset card.

_markers/*.json (Marker) ─► finalize() ─► _manifest.json (Manifest) + README.md
"""

from __future__ import annotations

import html
import json
import re
import time
from collections import Counter
from importlib import metadata
from typing import Any

from datagen.errors import OutputError
from datagen.records import RejectReason
from datagen.sink.models import (
    EngineInfo,
    Manifest,
    ManifestFile,
    Marker,
    ShardCounts,
    StepsDropped,
    TableFiles,
    TaskCounts,
)
from datagen.sink.schema import ADDED_TABLES, TABLES, arrow_schema
from datagen.sink.storage import Storage
from datagen.sink.writer import MANIFEST, RUN_FILE, part_key, read_markers, read_run
from datagen.versions import SCHEMA_VERSION, __version__

PACKAGES = ("playwright", "pyarrow", "dask", "distributed", "pydantic")
# What the card embeds from outside datagen (the pipeline's name, model ids the servers gave,
# reasons and counts from markers) is text, never markup: Markdown renderers that pass raw
# HTML ran a name like `<img src=x onerror=…>`; a newline or `|` would break the card's lines.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")
# Only what can start a link, an image, code or a table cell (emphasis is harmless): a plain
# name reads as it did.
MARKDOWN = re.compile(r"([\\`\[\]|])")


def md(value: object) -> str:
    """Text for the card: on one line, HTML escaped, Markdown's link, code and table
    punctuation backslashed."""
    text = CONTROL.sub(" ", str(value)).strip()
    return MARKDOWN.sub(r"\\\1", html.escape(text, quote=False))


def package_versions() -> dict[str, str]:
    out = {"datagen": __version__}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = ""
    return out


def finalize(
    storage: Storage,
    expected_shards: list[int],
    engine: EngineInfo | None = None,
    busy: set[int] | None = None,
) -> Manifest:
    """Write the manifest and dataset card from the markers; `complete` says if all shards are in.

    `engine`: the model servers the run called (none: no model was called). `busy`: shards
    another live run is writing now (`ShardLeases.busy()`, taken before this is called): their
    parts are kept. A marker that cannot be read is skipped (with a warning)."""
    run = read_run(storage)
    if run is None:
        raise OutputError(f"{storage.uri} holds no {RUN_FILE}: no run was started there")
    markers = read_markers(storage)
    _remove_uncommitted_parts(storage, markers, busy or set())
    # a table added since 0.1.0 is listed once a marker has a part of it (an old output's
    # manifest keeps the tables it had)
    present = {f.table for m in markers for f in m.files}
    files: dict[str, list[ManifestFile]] = {
        t: [] for t in TABLES if t not in ADDED_TABLES or t in present
    }
    reasons: Counter[str] = Counter()
    for marker in markers:
        for f in marker.files:
            files[f.table].append(
                ManifestFile(key=f.key, rows=f.rows, bytes=f.bytes, sha256=f.sha256)
            )
        reasons.update(marker.stats.reject_reasons)
    tables = {
        t: TableFiles(rows=sum(f.rows for f in fs), files=tuple(fs)) for t, fs in files.items()
    }
    done = {m.shard for m in markers}
    stats = [m.stats for m in markers]
    manifest = Manifest(
        run_id=run.run_id,
        schema_version=SCHEMA_VERSION,
        complete=set(expected_shards) <= done,
        shards=ShardCounts(
            expected=len(expected_shards),
            committed=len(done),
            missing=tuple(sorted(set(expected_shards) - done)),
        ),
        tables=tables,
        reject_reasons=dict(reasons.most_common()),
        solved=sum(s.solved for s in stats),
        tasks=TaskCounts(
            committed=sum(s.tasks for s in stats),
            with_episodes=sum(s.tasks_with_episodes for s in stats),
        ),
        steps_dropped=steps_dropped(reasons, tables["steps"].rows),
        packages=package_versions(),
        engine=engine,
        pipeline=run.pipeline,
        finished_at=time.time(),
    )
    storage.put(MANIFEST, manifest.to_json())
    storage.put("README.md", dataset_card(manifest).encode())
    return manifest


STRAYS = (RejectReason.OFF_SCOPE, RejectReason.ERROR_PAGE, RejectReason.BLANK_PAGE)


def steps_dropped(reasons: Counter[str], steps: int) -> StepsDropped:
    """Observations not kept because the page was out of scope, an error or blank: how many
    by reason, and their share of all observations (kept steps + dropped)."""
    by_reason = {r.value: reasons[r.value] for r in STRAYS if reasons[r.value]}
    total = sum(by_reason.values())
    return StepsDropped(
        by_reason=by_reason,
        total=total,
        share=round(total / (steps + total), 4) if steps + total else 0.0,
    )


def _remove_uncommitted_parts(storage: Storage, markers: list[Marker], busy: set[int]) -> None:
    """Parts no marker vouches for are leftovers of a killed or failed attempt. This run is
    not writing when it finalizes, and shards another live run is writing are `busy`, so the
    rest can go: then every part in the folder is committed (once the other run is done too),
    and globbing `<table>/*.parquet` is safe. A rerun writes them again."""
    kept = {f.key for m in markers for f in m.files}
    kept |= {part_key(table, shard) for table in TABLES for shard in busy}
    for table in TABLES:
        for key in storage.list(table):
            if key.endswith(".parquet") and key not in kept:
                storage.delete(key)


def _filled(manifest: Manifest) -> list[str]:
    """The tables with rows, in TABLES order."""
    return [t for t in TABLES if t in manifest.tables and manifest.tables[t].rows]


def dataset_info(manifest: Manifest) -> str:
    """The card's `dataset_info` YAML: features and row count of each table that has a config
    (`_configs`), from the schema."""
    filled = _filled(manifest)
    lines = ["dataset_info:" if filled else "dataset_info: []"]
    for table in filled:
        model = TABLES[table]
        features = json.loads(arrow_schema(model).metadata[b"huggingface"])["info"]["features"]
        lines += [f"- config_name: {table}", "  features:"]
        for name, feature in features.items():
            lines += [f"  - name: {name}", f"    {_feature_yaml(feature)}"]
        info = manifest.tables[table]
        size = sum(f.bytes for f in info.files)
        lines += [
            "  splits:",
            "  - name: train",
            f"    num_bytes: {size}",
            f"    num_examples: {info.rows}",
        ]
    return "\n".join(lines)


def _feature_yaml(feature: dict[str, Any]) -> str:
    if feature["_type"] == "Image":
        return "dtype: image"
    if feature["_type"] == "List":
        return f"sequence: {feature['feature']['dtype']}"
    return f"dtype: {feature['dtype']}"


def _outcome_note(manifest: Manifest) -> str:
    tasks, dropped = manifest.tasks, manifest.steps_dropped
    return (
        f"Episodes from {tasks.with_episodes} of {tasks.committed} tasks. "
        f"Observations dropped (out of scope, error or blank pages, never data): "
        f"{dropped.total} ({dropped.share:.1%})."
    )


def _engine_note(manifest: Manifest) -> str:
    engine = manifest.engine
    if not engine:
        return "No model was called (policy without a model)."
    models = ", ".join(md(e.model) for e in engine.endpoints)
    if engine.standin:
        return (
            f"**The model columns come from datagen's engine stand-in ({models}): a load and protocol "
            "double whose answers are arbitrary, not a model's. Do not train on them.**"
        )
    return f"Model outputs from: {models}."


DEFAULT_CONFIG = "steps"  # screenshot → action: what a computer-use model trains on first


def _configs(manifest: Manifest) -> str:
    """The card's `configs`: one per table that has rows, `steps` the default (else the first
    with rows), so `load_dataset(<folder>)` needs no name. A table without rows has no config:
    `datasets` cannot load an empty split ("corresponds to no data"), and the Hub's viewer
    would show an error for it; the card's counts still list it."""
    filled = _filled(manifest)
    default = DEFAULT_CONFIG if DEFAULT_CONFIG in filled else next(iter(filled), None)
    lines = ["configs:" if filled else "configs: []"]
    for table in filled:
        lines += [f"- config_name: {table}", f'  data_files: "{table}/*.parquet"']
        if table == default:
            lines.append("  default: true")
    return "\n".join(lines)


def dataset_card(manifest: Manifest) -> str:
    """A Hugging Face dataset card: a config per table with rows (`steps` the default), counts,
    provenance."""
    info = dataset_info(manifest)
    configs = _configs(manifest)
    counts = "\n".join(
        f"| {md(t)} | {info.rows} | {len(info.files)} |" for t, info in manifest.tables.items()
    )
    reasons = (
        "\n".join(f"| {md(r)} | {n} |" for r, n in manifest.reject_reasons.items())
        or "| (none) | 0 |"
    )
    name = md(manifest.pipeline.get("name") or "datagen")
    return f"""---
{configs}
{info}
tags:
- computer-use
- gui-grounding
- web-agents
---
# {name}

Computer-use training data generated by datagen {md(manifest.packages["datagen"])}
(run `{md(manifest.run_id)}`, schema {md(manifest.schema_version)}) with real Chromium.

- `episodes`: one row per episode: task, outcome (`success`, `status`), final screenshot.
- `steps`: one row per step: screenshot before the action, the action (screenshot pixels and
  [0, 1]), its DOM target.
- `grounding`: one row per visible interactive element of a step's screenshot: box
  `[x1, y1, x2, y2]` in pixels and [0, 1], referring expression, hit-test result. The image
  is the `steps` row with the same `episode_id` and `step_index`.
- `rejects`: what did not become data, with a reason code.
{_tasks_note(manifest)}
| table | rows | files |
|---|---|---|
{counts}

Solved episodes: {manifest.solved}. Complete: {manifest.complete}.
{_outcome_note(manifest)}
{_engine_note(manifest)}

| reject reason | count |
|---|---|
{reasons}

The pipeline that produced it is stored in `_manifest.json` (key `pipeline`).
"""


def _tasks_note(manifest: Manifest) -> str:
    """The bullet of the `tasks` table where the output has one (annotation.tasks)."""
    if "tasks" not in manifest.tables:
        return ""
    return (
        "- `tasks`: one row per task candidate synthesised from a verified episode (`kept`, "
        "or the proof step that dropped it), with its check; `datagen export OUT -f tasks` "
        "gives the task list.\n"
    )
