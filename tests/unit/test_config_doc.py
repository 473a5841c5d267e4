"""The pipeline file's reference is generated and kept true: `docs/config.md` and
`schemas/pipeline.schema.json` are what `python -m datagen.config.doc` writes from the models,
every key of the models has a row with a meaning, and every example pipeline validates against
the schema an editor would use."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from datagen.config import PipelineConfig
from datagen.config.doc import DOC_PATH, FIX, SCHEMA_PATH, json_schema, markdown, schema_text

REPO = Path(__file__).resolve().parents[2]


def _keys(node: dict[str, Any], defs: dict[str, Any], path: str = "") -> Iterator[str]:
    """Every dotted key of the file, walked over the JSON Schema (not over the models the
    generator reads): `sources[].path`, `policy.localizer.timeout_s`, …"""
    if "$ref" in node:
        yield from _keys(defs[node["$ref"].rsplit("/", 1)[1]], defs, path)
        return
    for branch in ("anyOf", "oneOf", "allOf"):
        for member in node.get(branch, []):
            yield from _keys(member, defs, path)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        yield from _keys(node["items"], defs, f"{path}[]")
    for name, sub in node.get("properties", {}).items():
        key = f"{path}.{name}" if path else name
        yield key
        yield from _keys(sub, defs, key)


def _schema_keys() -> set[str]:
    schema = PipelineConfig.model_json_schema()
    keys = set(_keys(schema, schema["$defs"]))
    return {k for k in keys if k != "base_dir"}  # set by the loader, refused in a file


def _rows(text: str) -> dict[str, str]:
    """key → meaning, from the reference's tables."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells[-1]
    return rows


def _missing(text: str) -> list[str]:
    documented = _rows(text)
    return sorted(k for k in _schema_keys() if k not in documented)


def test_docs_config_is_what_the_generator_writes() -> None:
    assert DOC_PATH.read_text() == markdown(), (
        f"docs/config.md differs from the config models. fix: run `{FIX}` and commit it"
    )


def test_pipeline_schema_is_what_the_generator_writes() -> None:
    assert SCHEMA_PATH.read_text() == schema_text(), (
        f"schemas/pipeline.schema.json differs from the config models. fix: run `{FIX}`"
    )


def test_every_key_has_a_row_with_a_meaning() -> None:
    text = DOC_PATH.read_text()
    keys = _schema_keys()
    # The walk is not vacuous: it reaches keys of nested sections, list items and unions.
    assert {"cluster.admission.cpu_target", "sources[].start_urls", "policy.judge.url"} <= keys
    assert len(keys) > 150
    missing = _missing(text)
    assert not missing, f"docs/config.md has no row for {missing}. fix: run `{FIX}`"
    blank = sorted(k for k, meaning in _rows(text).items() if not meaning)
    assert not blank, f"keys with no meaning: {blank}. fix: a description= on each Field"


def test_a_dropped_row_is_caught() -> None:
    """The check above would catch a key the reference lacks (here: one row taken out)."""
    text = DOC_PATH.read_text()
    lines = [line for line in text.splitlines() if not line.startswith("| `run.hosts.exempt` |")]
    assert _missing("\n".join(lines)) == ["run.hosts.exempt"]


def test_every_example_pipeline_validates_against_the_schema() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    files = sorted((REPO / "pipelines").glob("*.yaml"))
    assert files
    for path in files:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert not errors, f"{path.name}: {errors}"


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"cluster": {"workerz": 2}}, "workerz"),  # an unknown key, as an editor underlines it
        ({"browser": {"image_format": "gif"}}, "gif"),  # a value out of its literal
        ({"run": {"max_steps": 0}}, "0"),  # below its bound
        ({"policy": {"type": "vlm", "history_images": 99}}, "99"),  # in the chosen union member
        ({"base_dir": "/tmp"}, "base_dir"),  # set by the loader, never by a file
    ],
)
def test_schema_refuses_what_the_loader_refuses(change: dict[str, Any], where: str) -> None:
    data: dict[str, Any] = {"sources": [{"type": "sites"}], "output": {"uri": "out"}} | change
    errors = list(jsonschema.Draft202012Validator(json_schema()).iter_errors(data))
    assert errors and any(where in e.message or where in str(e.instance) for e in errors)


def test_check_mode_says_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "datagen.config.doc", "--check"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "up to date" in done.stdout
