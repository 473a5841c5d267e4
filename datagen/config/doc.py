"""The pipeline file's reference, generated from its models: `docs/config.md` (every section and
key, its type, default and meaning) and `schemas/pipeline.schema.json` (a JSON Schema editors
validate YAML with). Both are committed; `tests/unit/test_config_doc.py` fails when either
differs from what this module writes.

    PipelineConfig ─► markdown() ─► docs/config.md
                   ─► json_schema() ─► schemas/pipeline.schema.json

    python -m datagen.config.doc            # rewrite both files
    python -m datagen.config.doc --check    # exit 1 naming the stale file, write nothing
"""

from __future__ import annotations

import json
import sys
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from datagen.config.base import is_neutral
from datagen.config.pipeline import PipelineConfig

REPO = Path(__file__).resolve().parents[2]
DOC_PATH = REPO / "docs" / "config.md"
SCHEMA_PATH = REPO / "schemas" / "pipeline.schema.json"
FIX = "python -m datagen.config.doc"
# Keys the loader sets itself and refuses in a file: in neither the reference nor the schema.
INTERNAL = frozenset({"base_dir"})

HEAD = f"""\
# The pipeline file: every key

<!-- Generated from datagen/config/ by `{FIX}`; do not edit by hand.
     tests/unit/test_config_doc.py fails when this file differs from the models. -->

A pipeline file is YAML: the sections below, each a mapping. Unknown keys are errors that name
the key and the closest known one; values are checked before any browser starts. `${{VAR}}` and
`${{VAR:-default}}` in a value are read from the environment. Paths inside the file are
relative to the file's folder; `output.uri` is relative to the current folder. Example files:
`pipelines/` (each loaded by a test).

*Neutral* keys are left out of the run id: changing one (where the rows go, who computes them,
how fast, limits that only decide whether an episode finishes) lets a killed run resume into
its output; changing any other key makes a different run (`datagen/config/base.py`).

**Editors.** `schemas/pipeline.schema.json` is the same models as a JSON Schema. With the YAML
language server (VS Code's YAML extension, Neovim, Helix, JetBrains), a first line

```yaml
# yaml-language-server: $schema=../schemas/pipeline.schema.json
```

(the path relative to the YAML file, or a URL) gives completion, these descriptions on hover
and unknown keys underlined as you type. The schema checks types, ranges and names; checks
across keys (a judge set twice, a scope list's entries) are datagen's own: `datagen validate
FILE`. A `${{VAR}}` in a number or boolean key reads as a string to the editor.
"""


@dataclass(frozen=True)
class Row:
    """One key of the reference table."""

    key: str
    type: str
    default: str
    description: str
    neutral: bool


@dataclass(frozen=True)
class Table:
    """One section (a model at a dotted path) and its keys."""

    path: str
    title: str
    doc: str
    rows: tuple[Row, ...]


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The config models an annotation holds: itself, a union's members, a list's items."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(m for m in _models(arg) if m not in found)
    return found


def type_name(annotation: Any) -> str:
    """A short, YAML-minded name of a field's type: `int`, `"png" | "jpeg"`, `list[str] | null`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None) or annotation is None:
        return "null"
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        members = _models(annotation)
        if len(members) > 1:  # a union of sections chosen by `type:` (the tables below)
            kinds = [a for a in args if a is not type(None)]
            named = "section by `type`" if len(kinds) == len(members) else None
            if named:
                return named + (" | null" if len(kinds) < len(args) else "")
        return " | ".join(type_name(a) for a in args)
    if origin in (list, tuple, set, frozenset):
        return f"list[{', '.join(type_name(a) for a in args if a is not Ellipsis)}]"
    if origin is dict:
        return f"dict[{type_name(args[0])}, {type_name(args[1])}]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    if annotation is SecretStr:
        return "str (secret)"
    if annotation is typing.Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


_BOUNDS = (
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "≤"),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.MinLen, "min_length", "length ≥"),
    (annotated_types.MaxLen, "max_length", "length ≤"),
)
# Bounds that only say "a 64-bit integer" (Parquet's int64) are left out of the table.
_INT64 = 2**63 - 1


def bounds(field: FieldInfo) -> str:
    """The field's numeric and length bounds, e.g. `≥ 1, ≤ 16`."""
    parts = []
    for item in field.metadata:
        for kind, attr, sign in _BOUNDS:
            if isinstance(item, kind) and abs(getattr(item, attr)) < _INT64:
                parts.append(f"{sign} {_value(getattr(item, attr))}")
    return ", ".join(parts)


def _value(value: Any) -> str:
    """A default as it would be written in YAML (flow style, JSON scalars)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def default_text(field: FieldInfo) -> str:
    """`required`, a value, or for a section the keys it sets apart from their own defaults."""
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True, validated_data={})
    if not isinstance(value, BaseModel):
        return f"`{_value(value)}`"
    changed = {
        name: getattr(value, name)
        for name, inner in type(value).model_fields.items()
        if name not in INTERNAL
        and (
            inner.is_required()
            or getattr(value, name)
            != inner.get_default(call_default_factory=True, validated_data={})
        )
    }
    return f"the keys below, with `{_value(changed)}`" if changed else "the keys below"


def _kinds(members: list[type[BaseModel]]) -> str:
    """`one of: explore, scripted, vlm (by type)` for a union of sections."""
    names: list[str] = []
    for member in members:
        tag = member.model_fields.get("type")
        names.extend(str(a) for a in typing.get_args(tag.annotation if tag else None))
    return f"one of: {', '.join(names)} (chosen by `type:`, tables below)"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _doc(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or "").split())


def tables(
    model: type[BaseModel] = PipelineConfig, path: str = "", title: str = ""
) -> Iterator[Table]:
    """Every section at every dotted path, depth first in the order of the file's keys. A union
    of sections (`sources[]`, `policy`) gives one table per member, titled by its `type:`."""
    rows = []
    nested: list[tuple[str, type[BaseModel], str]] = []
    for name, field in model.model_fields.items():
        if name in INTERNAL:
            continue
        key = f"{path}.{name}" if path else name
        annotation = field.annotation
        members = _models(annotation)
        kind = type_name(annotation)
        limits = bounds(field)
        description = field.description or ""
        if members and not description:
            description = _doc(members[0]) if len(members) == 1 else _kinds(members)
        if name == "type" and typing.get_origin(annotation) is typing.Literal and not description:
            description = "chooses this kind"
        rows.append(
            Row(
                key=key,
                type=f"{kind} ({limits})" if limits else kind,
                default=default_text(field),
                description=description,
                neutral=is_neutral(field),
            )
        )
        many = typing.get_origin(annotation) is list
        inner = f"{key}[]" if many else key
        for member in members:
            tag = member.model_fields.get("type")
            literal = typing.get_args(tag.annotation) if tag is not None else ()
            label = f"{inner} (type: {literal[0]})" if len(members) > 1 and literal else inner
            nested.append((inner, member, label))
    yield Table(path=path, title=title or "top level", doc=_doc(model), rows=tuple(rows))
    for inner, member, label in nested:
        yield from tables(member, inner, label)


def markdown() -> str:
    """The whole of docs/config.md."""
    out = [HEAD]
    everything = list(tables())
    out.append("## Sections\n")
    for table in everything:
        anchor = _anchor(table.title)
        out.append(f"- [`{table.title}`](#{anchor})" if table.path else "- [top level](#top-level)")
    out.append("")
    for table in everything:
        out.append(f"## {'`' + table.title + '`' if table.path else 'top level'}\n")
        if table.doc:
            out.append(f"{table.doc}\n")
        out.append("| key | type | default | meaning |")
        out.append("|---|---|---|---|")
        for row in table.rows:
            meaning = _cell(row.description) + (" *(neutral)*" if row.neutral else "")
            out.append(
                f"| `{row.key}` | {_cell(row.type)} | {_cell(row.default)} | {meaning.strip()} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _anchor(title: str) -> str:
    """GitHub's heading anchor for a heading `` `title` ``."""
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def json_schema() -> dict[str, Any]:
    """The pipeline file as a JSON Schema (draft 2020-12, pydantic's validation mode)."""
    schema = PipelineConfig.model_json_schema(mode="validation")
    for name in INTERNAL:
        schema["properties"].pop(name, None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": f"Generated from datagen/config/ by `{FIX}`; do not edit by hand.",
        **schema,
        "title": "datagen pipeline file",
    }


def schema_text() -> str:
    """schemas/pipeline.schema.json as written."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def outputs() -> dict[Path, str]:
    """Each generated file and its text."""
    return {DOC_PATH: markdown(), SCHEMA_PATH: schema_text()}


def main(argv: list[str]) -> int:
    """Write both files, or with --check say which one is stale (exit 1)."""
    check = "--check" in argv
    if not (REPO / "pyproject.toml").is_file():  # an installed wheel has no docs/ to write
        print(f"{REPO} is not a clone of datagen. fix: run `{FIX}` in a clone of the repository")
        return 2
    stale = []
    for path, text in outputs().items():
        current = path.read_text() if path.is_file() else None
        if current == text:
            continue
        stale.append(path.relative_to(REPO))
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if check and stale:
        print(f"out of date: {', '.join(map(str, stale))}. fix: run `{FIX}`")
        return 1
    done = stale or [path.relative_to(REPO) for path in outputs()]
    print(("written: " if stale else "up to date: ") + ", ".join(map(str, done)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
