"""The end of a run: the manifest (what is committed) and the dataset card.

_markers/*.json ─► finalize() ─► _manifest.json + README.md
"""

from __future__ import annotations

import json
import time
from collections import Counter
from importlib import metadata
from typing import Any

from datagen import SCHEMA_VERSION, __version__
from datagen.records import RejectReason
from datagen.sink.schema import TABLES, arrow_schema
from datagen.sink.storage import Storage
from datagen.sink.writer import MANIFEST, RUN_FILE, part_key, read_markers

PACKAGES = ("playwright", "pyarrow", "dask", "distributed", "pydantic")


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
    extra: dict[str, Any] | None = None,
    busy: set[int] | None = None,
) -> dict[str, Any]:
    """Write the manifest and dataset card from the markers; `complete` says if all shards are in.

    `busy`: shards another live run is writing now (`ShardLeases.busy()`, taken before this is
    called): their parts are kept. A marker that cannot be read is skipped (with a warning)."""
    run = json.loads(storage.get(RUN_FILE))
    markers = read_markers(storage)
    _remove_uncommitted_parts(storage, markers, busy or set())
    tables: dict[str, dict[str, Any]] = {t: {"rows": 0, "files": []} for t in TABLES}
    reasons: Counter[str] = Counter()
    for marker in markers:
        for f in marker["files"]:
            tables[f["table"]]["rows"] += f["rows"]
            tables[f["table"]]["files"].append(
                {k: f[k] for k in ("key", "rows", "bytes", "sha256")}
            )
        reasons.update(marker["stats"].get("reject_reasons", {}))
    done = {m["shard"] for m in markers}
    stats = [m["stats"] for m in markers]
    manifest = {
        "run_id": run["run_id"],
        "schema_version": SCHEMA_VERSION,
        "complete": set(expected_shards) <= done,
        "shards": {
            "expected": len(expected_shards),
            "committed": len(done),
            "missing": sorted(set(expected_shards) - done),
        },
        "tables": tables,
        "reject_reasons": dict(reasons.most_common()),
        "solved": sum(m["stats"].get("solved", 0) for m in markers),
        "tasks": {
            "committed": sum(s.get("tasks", 0) for s in stats),
            "with_episodes": sum(s.get("tasks_with_episodes", 0) for s in stats),
        },
        "steps_dropped": steps_dropped(reasons, tables["steps"]["rows"]),
        "packages": package_versions(),
        **(extra or {}),
        "pipeline": run["pipeline"],
        "finished_at": time.time(),
    }
    storage.put(MANIFEST, json.dumps(manifest, indent=1).encode())
    storage.put("README.md", dataset_card(manifest).encode())
    return manifest


STRAYS = (RejectReason.OFF_SCOPE, RejectReason.ERROR_PAGE, RejectReason.BLANK_PAGE)


def steps_dropped(reasons: Counter[str], steps: int) -> dict[str, Any]:
    """Observations not kept because the page was out of scope, an error or blank: how many
    by reason, and their share of all observations (kept steps + dropped)."""
    by_reason = {r.value: reasons[r.value] for r in STRAYS if reasons[r.value]}
    total = sum(by_reason.values())
    return {
        "by_reason": by_reason,
        "total": total,
        "share": round(total / (steps + total), 4) if steps + total else 0.0,
    }


def _remove_uncommitted_parts(
    storage: Storage, markers: list[dict[str, Any]], busy: set[int]
) -> None:
    """Parts no marker vouches for are leftovers of a killed or failed attempt. This run is
    not writing when it finalizes, and shards another live run is writing are `busy`, so the
    rest can go: then every part in the folder is committed (once the other run is done too),
    and globbing `<table>/*.parquet` is safe. A rerun writes them again."""
    kept = {f["key"] for m in markers for f in m["files"]}
    kept |= {part_key(table, shard) for table in TABLES for shard in busy}
    for table in TABLES:
        for key in storage.list(table):
            if key.endswith(".parquet") and key not in kept:
                storage.delete(key)


def _filled(manifest: dict[str, Any]) -> list[str]:
    """The tables with rows, in TABLES order."""
    return [t for t in TABLES if manifest["tables"][t]["rows"]]


def dataset_info(manifest: dict[str, Any]) -> str:
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
        info = manifest["tables"][table]
        size = sum(f["bytes"] for f in info["files"])
        lines += [
            "  splits:",
            "  - name: train",
            f"    num_bytes: {size}",
            f"    num_examples: {info['rows']}",
        ]
    return "\n".join(lines)


def _feature_yaml(feature: dict[str, Any]) -> str:
    if feature["_type"] == "Image":
        return "dtype: image"
    if feature["_type"] == "List":
        return f"sequence: {feature['feature']['dtype']}"
    return f"dtype: {feature['dtype']}"


def _outcome_note(manifest: dict[str, Any]) -> str:
    tasks, dropped = manifest.get("tasks", {}), manifest.get("steps_dropped", {})
    return (
        f"Episodes from {tasks.get('with_episodes', 0)} of {tasks.get('committed', 0)} tasks. "
        f"Observations dropped (out of scope, error or blank pages, never data): "
        f"{dropped.get('total', 0)} ({dropped.get('share', 0.0):.1%})."
    )


def _engine_note(manifest: dict[str, Any]) -> str:
    engine = manifest.get("engine")
    if not engine:
        return "No model was called (policy without a model)."
    models = ", ".join(e["model"] for e in engine["endpoints"])
    if engine["standin"]:
        return (
            f"**The model columns come from datagen's engine stand-in ({models}): a load and protocol "
            "double whose answers are arbitrary, not a model's. Do not train on them.**"
        )
    return f"Model outputs from: {models}."


DEFAULT_CONFIG = "steps"  # screenshot → action: what a computer-use model trains on first


def _configs(manifest: dict[str, Any]) -> str:
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


def dataset_card(manifest: dict[str, Any]) -> str:
    """A Hugging Face dataset card: a config per table with rows (`steps` the default), counts,
    provenance."""
    info = dataset_info(manifest)
    configs = _configs(manifest)
    counts = "\n".join(
        f"| {t} | {info['rows']} | {len(info['files'])} |" for t, info in manifest["tables"].items()
    )
    reasons = (
        "\n".join(f"| {r} | {n} |" for r, n in manifest["reject_reasons"].items())
        or "| (none) | 0 |"
    )
    name = manifest["pipeline"].get("name", "datagen")
    return f"""---
{configs}
{info}
tags:
- computer-use
- gui-grounding
- web-agents
---
# {name}

Computer-use training data generated by datagen {manifest["packages"]["datagen"]}
(run `{manifest["run_id"]}`, schema {manifest["schema_version"]}) with real Chromium.

- `episodes`: one row per episode: task, outcome (`success`, `status`), final screenshot.
- `steps`: one row per step: screenshot before the action, the action (screenshot pixels and
  [0, 1]), its DOM target.
- `grounding`: one row per visible interactive element of a step's screenshot: box
  `[x1, y1, x2, y2]` in pixels and [0, 1], referring expression, hit-test result. The image
  is the `steps` row with the same `episode_id` and `step_index`.
- `rejects`: what did not become data, with a reason code.

| table | rows | files |
|---|---|---|
{counts}

Solved episodes: {manifest["solved"]}. Complete: {manifest["complete"]}.
{_outcome_note(manifest)}
{_engine_note(manifest)}

| reject reason | count |
|---|---|
{reasons}

The pipeline that produced it is stored in `_manifest.json` (key `pipeline`).
"""
