"""The run id leaves out exactly the fields marked output-neutral (`datagen.config.NEUTRAL`).

Every leaf field of the pipeline model is found by walking the model classes (every member of
every union, every optional sub-section, the stand-in's settings), changed to another valid
value, and the run id's input (`output_hash()`) compared: it must stay the same when the field
is marked neutral and change when it is not. A new field therefore needs a decision: an
unmarked field that does not reach the hash fails here, so does a marked one that does, and a
field of a type this test cannot change fails until it gets a line in CHANGES.
"""

from __future__ import annotations

import copy
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from datagen.config import (
    ClusterConfig,
    EngineConfig,
    Mind2WebSourceConfig,
    PipelineConfig,
    RelabelConfig,
    RoleConfig,
    TasksConfig,
    is_neutral,
    parse_pipeline,
)
from datagen.errors import ConfigError

BASE: dict[str, Any] = {"sources": [{"type": "sites"}], "output": {"uri": "/tmp/out-a"}}
# Required keys of a section, so that the section can be chosen at all.
REQUIRED: dict[str, Any] = {"path": "tasks.jsonl", "uri": "/tmp/out-a"}
# Where a generic change would not validate: the values to try instead.
CHANGES: dict[tuple[type[BaseModel], str], list[Any]] = {
    (RoleConfig, "url"): ["http://other.example:8000"],
    (RelabelConfig, "url"): ["http://other.example:8000"],
    (EngineConfig, "url"): ["http://other.example:8000/v1"],
    (ClusterConfig, "address"): ["tcp://other.example:8786"],
    (ClusterConfig, "dashboard"): ["127.0.0.1:8788"],
    (Mind2WebSourceConfig, "start_urls"): [{"example": "https://example.com/"}],
    (TasksConfig, "kinds"): [["url"]],
}


@dataclass(frozen=True)
class Leaf:
    """One field to change: the keys to its section (each with what the section starts as,
    which picks a union member), its model class and name, and its field info."""

    steps: tuple[tuple[str | int, Any], ...]
    owner: type[BaseModel]
    name: str
    field: FieldInfo

    @property
    def label(self) -> str:
        parts = []
        for key, start in self.steps:
            tag = f"[{start['type']}]" if isinstance(start, dict) and "type" in start else ""
            parts.append(f"[{key}]{tag}" if isinstance(key, int) else f".{key}{tag}")
        return ("".join(parts) + f".{self.name}").lstrip(".")


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    tp = _unwrap(tp)
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return [m for arg in typing.get_args(tp) for m in _members(arg)]
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _start(model: type[BaseModel]) -> dict[str, Any]:
    """The least input that makes this section: its `type:` tag and its required keys."""
    start: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        if name == "type":
            start["type"] = typing.get_args(field.annotation)[0]
        elif field.is_required():
            start[name] = REQUIRED[name]
    return start


def _is_tag(name: str, field: FieldInfo) -> bool:
    """A union member's `type:` literal: changing it changes the member, walked separately."""
    return name == "type" and typing.get_origin(field.annotation) is Literal


def leaves(model: type[BaseModel], steps: tuple[tuple[str | int, Any], ...] = ()) -> list[Leaf]:
    """Every field of `model` and its sections, recursively, every union member included."""
    found: list[Leaf] = []
    for name, field in model.model_fields.items():
        if _is_tag(name, field):
            continue
        members = _members(field.annotation)
        if typing.get_origin(members[0]) is list and _is_model(
            _members(typing.get_args(members[0])[0])[0]
        ):
            for item in _members(typing.get_args(members[0])[0]):
                found += leaves(item, (*steps, (name, []), (0, _start(item))))
            continue
        sections = [m for m in members if _is_model(m)]
        for section in sections:
            found += leaves(section, (*steps, (name, _start(section))))
        if not sections or type(None) in members:  # a value, or an optional section's presence
            found.append(Leaf(steps, model, name, field))
    return found


def _place(data: dict[str, Any], steps: tuple[tuple[str | int, Any], ...]) -> Any:
    """The container the steps lead to in `data`, made along the way (a section whose `type`
    differs from the step's is replaced by the step's start)."""
    node: Any = data
    for key, start in steps:
        current = node[key] if isinstance(key, int) or key in node else None
        wrong = isinstance(start, dict) and (
            not isinstance(current, dict) or current.get("type") != start.get("type")
        )
        if current is None or wrong:
            current = copy.deepcopy(start)
            node[key] = current
        node = current
    return node


def _value(config: BaseModel, leaf: Leaf) -> Any:
    node: Any = config
    for key, _ in leaf.steps:
        node = node[key] if isinstance(key, int) else getattr(node, key)
    value = getattr(node, leaf.name)
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def _candidates(leaf: Leaf, value: Any) -> list[Any]:
    """Other values to try for the field: the explicit table first, then by its type."""
    tried = list(CHANGES.get((leaf.owner, leaf.name), []))
    for tp in _members(leaf.field.annotation):
        origin = typing.get_origin(tp)
        if _is_model(tp):
            tried.append({} if value is None else None)
        elif tp is type(None):
            tried.append(None)
        elif tp is bool:
            tried.append(not value)
        elif origin is Literal:
            tried += [v for v in typing.get_args(tp) if v != value]
        elif tp is int:
            number = value if isinstance(value, int) else 0
            tried += [number + 1, number - 1, 1]
        elif tp is float:
            real = value if isinstance(value, float | int) else 0.0
            tried += [real + 1.0, real / 2, real + 0.01, 0.5]
        elif tp is str or tp is SecretStr:
            tried += [f"{value}x" if isinstance(value, str) else "x"]
        elif origin is list:
            tried.append([*(value if isinstance(value, list) else []), "example.com"])
        elif origin is tuple:
            tried.append(tuple(range(1, len(typing.get_args(tp)) + 1)))
    return tried


ALL = leaves(PipelineConfig)


def test_the_walk_reaches_every_part_of_the_file() -> None:
    labels = {leaf.label for leaf in ALL}
    for expected in (
        "name",
        "sources[0][jsonl].path",
        "policy[vlm].localizer.url",
        "policy[vlm].judge",
        "policy[explore].type_probability",
        "annotation.model_expressions.writer.share",
        "annotation.relabel.check",
        "annotation.relabel.judge.url",
        "engine.max_in_flight",
        "engine.sim.speed_factor",
        "browser.viewport.width",
        "cluster.workers",
        "output.uri",
        "run.seed",
    ):
        assert expected in labels, expected
    assert len(ALL) > 100


@pytest.mark.parametrize("leaf", ALL, ids=[leaf.label for leaf in ALL])
def test_a_field_changes_the_run_id_unless_it_is_marked_neutral(leaf: Leaf) -> None:
    data = copy.deepcopy(BASE)
    _place(data, leaf.steps)
    base = parse_pipeline(data)
    before = _value(base, leaf)
    for candidate in _candidates(leaf, before):
        changed = copy.deepcopy(data)
        _place(changed, leaf.steps)[leaf.name] = candidate
        try:
            config = parse_pipeline(changed)
        except ConfigError:
            continue
        if _value(config, leaf) != before:
            break
    else:
        pytest.fail(f"{leaf.label}: no valid other value found; add one to CHANGES")
    moved = config.output_hash() != base.output_hash()
    if is_neutral(leaf.field):
        assert not moved, f"{leaf.label} is marked neutral but changes the run id"
    else:
        assert moved, (
            f"{leaf.label} leaves the run id unchanged: mark it neutral "
            "(Field(..., json_schema_extra=NEUTRAL)) if it never changes a row, else hash it"
        )


def test_the_issue_example_a_retuned_engine_keeps_the_run_id() -> None:
    """engine.max_in_flight was missing from the hand-kept list: retuning it refused a rerun."""
    retuned = {**BASE, "engine": {"max_in_flight": 64, "control": "static"}}
    assert parse_pipeline(retuned).output_hash() == parse_pipeline(BASE).output_hash()
