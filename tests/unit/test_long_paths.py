"""Paths the file system cannot name (issue 42, item 7): `output.uri` or `browser.executable`
with a part over 255 bytes, or a whole path over 4,095, is one error line naming the key from
`validate` and `run` (before: `OSError: File name too long` tracebacks), and the JSON Schema
refuses what the models refuse (in characters: JSON Schema cannot count bytes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.config import PipelineConfig
from datagen.config.doc import json_schema
from tests.unit.test_terminal_safety import pipeline

LONG = "a" * 300


def _sections(tmp_path: Path, key: str, value: str) -> dict[str, Any]:
    if key == "output.uri":
        return {"output": {"uri": value}}
    return {"browser": {"executable": value}}


@pytest.mark.parametrize("command", [["validate"], ["run", "--dry-run"]])
@pytest.mark.parametrize("key", ["output.uri", "browser.executable"])
@pytest.mark.parametrize("too_long", [f"/{LONG}/x", "/" + "/".join(["d" * 200] * 21)])
def test_an_over_long_path_is_one_line_naming_the_key(
    tmp_path: Path, command: list[str], key: str, too_long: str
) -> None:
    path = pipeline(tmp_path, **_sections(tmp_path, key, str(tmp_path) + too_long))
    result = CliRunner().invoke(app, [*command, str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    flat = " ".join(result.output.split())
    assert result.exit_code == 2, flat
    said = f"{key} has a part of 300 bytes" if LONG in too_long else "at most 4095 characters"
    assert f"- {key}: " in flat and said in flat and "fix: " in flat, flat
    assert "Traceback" not in flat and "OSError" not in flat


def test_bytes_count_not_characters() -> None:
    """255 characters of `é` are 510 bytes: more than a file name may be."""
    data = {"sources": [{"type": "sites"}], "output": {"uri": "/tmp/" + "é" * 255}}
    with pytest.raises(ValueError, match="a part of 510 bytes"):
        PipelineConfig.model_validate(data)
    assert PipelineConfig.model_validate(data | {"output": {"uri": "/tmp/" + "é" * 127}})


@pytest.mark.parametrize(
    "change",
    [
        {"output": {"uri": f"/tmp/{LONG}/out"}},
        {"output": {"uri": "/" + "d" * 4096}},
        {"browser": {"executable": f"/usr/bin/{LONG}"}},
    ],
)
def test_the_schema_refuses_what_the_models_refuse(change: dict[str, Any]) -> None:
    data: dict[str, Any] = {"sources": [{"type": "sites"}], "output": {"uri": "out"}} | change
    assert list(jsonschema.Draft202012Validator(json_schema()).iter_errors(data))
    with pytest.raises(ValueError, match=r"fix: a shorter name|at most 4095 characters"):
        PipelineConfig.model_validate(data)


def test_s3_prefixes_and_ordinary_paths_pass_both() -> None:
    validator = jsonschema.Draft202012Validator(json_schema())
    for output in ({"uri": f"s3://bucket/{LONG}"}, {"uri": "/tmp/" + "d" * 255 + "/out"}):
        data = {"sources": [{"type": "sites"}], "output": output, "browser": {"executable": "x"}}
        assert not list(validator.iter_errors(json.loads(json.dumps(data))))
        assert PipelineConfig.model_validate(data)
