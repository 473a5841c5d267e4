"""Reading a pipeline file: YAML in, `${VAR}` expanded, CLI overrides applied, validated; every
error names the YAML path of the bad key and says how to fix it.

    pipelines/X.yaml ─► load_pipeline() ─► PipelineConfig   (or one ConfigError)

Nothing here starts a browser or a cluster: a bad file fails before either exists.
"""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import ValidationError

from datagen.config.pipeline import PipelineConfig
from datagen.errors import ConfigError
from datagen.loading import MAX_BYTES, MAX_NODES, FileProblem, load_yaml, read_text


def load_pipeline(
    path: str | Path,
    output: str | None = None,
    cluster: dict[str, Any] | None = None,
    *,
    unset_env_ok: bool = False,
) -> PipelineConfig:
    """Read and validate a pipeline file; `output` overrides `output.uri`, `cluster` keys of
    `cluster` (the CLI's --address, --workers, --sessions), validated like the file's.
    `unset_env_ok`: an unset `${VAR}` with no default reads as empty (null) instead of an error,
    for commands that never contact the server (`datagen plan`)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"pipeline file not found: {path}", fix="give the path of a .yaml file")
    try:
        text = read_text(path, "pipeline file", MAX_BYTES)
        check_size(text, path)
        data = load_yaml(text, path)
    except FileProblem as exc:
        raise ConfigError(str(exc), fix=exc.fix or "correct the YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the file must be a YAML mapping (key: value), got {type(data).__name__}",
            fix="start from a file in pipelines/ (it needs sources: and output:)",
        )
    data = expand_env(data, unset_ok=unset_env_ok)
    if "base_dir" in data:
        raise ConfigError(
            "base_dir is set by datagen, not by the file", path="base_dir", fix="remove it"
        )
    if output:
        existing = data.get("output")
        data["output"] = {**(existing if isinstance(existing, dict) else {}), "uri": output}
    if cluster:
        existing = data.get("cluster")
        data["cluster"] = {**(existing if isinstance(existing, dict) else {}), **cluster}
    uri = (data.get("output") or {}).get("uri") if isinstance(data.get("output"), dict) else None
    if isinstance(uri, str) and not uri.strip():  # it would become the current folder
        raise ConfigError(
            "output.uri is empty", path="output.uri", fix="a folder (./out) or s3://bucket/prefix"
        )
    if isinstance(uri, str):
        _refuse_near_miss(uri)
    if isinstance(uri, str) and "://" not in uri:
        # Local output is relative to where the command runs; workers get the absolute path.
        data["output"]["uri"] = str(Path(uri).expanduser().absolute())
    data["base_dir"] = str(path.resolve().parent)
    return parse_pipeline(data)


# The document, every alias written out, counted in bytes of its strings (and a few per
# value): no larger than the largest file we read. The loader bounds aliases by count
# (`loading.MAX_NODES`), not bytes: one 100 KB string referenced 20,000 times passed it, and
# took 11.5 s and 3.95 GB to validate and write into the run's files. Checked on the node
# graph composed by libyaml (milliseconds; PyYAML's own parser takes ~0.5 s for such a file)
# before the strict loader reads it.
MAX_DOCUMENT_BYTES = MAX_BYTES
MAX_STRING_BYTES = 256 * 1024  # any one value: the longest prompt is a few KB
VALUE_BYTES = 8  # what a container or a value counts besides its text
Composer = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_size(text: str, path: Path) -> None:
    """Refuse a document that passes MAX_DOCUMENT_BYTES once its aliases are written out, or
    holds a value over MAX_STRING_BYTES; the error names the key where the budget ran out.
    Linear in the file (each node's expanded size is computed once). YAML that does not
    parse is left to the strict loader, which says where."""
    try:
        root = yaml.compose(text, Loader=Composer)
    except yaml.reader.ReaderError as exc:  # PyYAML's reader raises it outside the loader's try
        char = exc.character
        code = f"U+{char:04X}" if isinstance(char, int) else repr(char)
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        raise ConfigError(
            f"{path}: line {line} holds the control character {code}, which YAML does not allow",
            fix='remove it (inside double quotes, write it as an escape: "\\x1b")',
        ) from None
    except yaml.YAMLError:
        return
    if root is None:
        return
    sizes: dict[int, int] = {}
    try:
        if _size(root, sizes) <= MAX_DOCUMENT_BYTES or _count(root, {}) > MAX_NODES:
            return  # small enough; or too many values, which the loader refuses, saying so
        where, value = _overflow(root, "", MAX_DOCUMENT_BYTES, sizes)
    except RecursionError:  # nested thousands deep: the strict loader says so
        return
    if value > MAX_STRING_BYTES:
        raise ConfigError(
            f"{path}: this value is {value:,} bytes, more than {MAX_STRING_BYTES:,}",
            path=where,
            fix="shorten it (a prompt or an instruction is a few KB)",
        )
    raise ConfigError(
        f"{path}: the document is more than {MAX_DOCUMENT_BYTES:,} bytes once its aliases "
        "(*name) are written out; the budget ran out at this key",
        path=where,
        fix="write the values out, or use fewer aliases of long values",
    )


def _size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """Bytes of a node with its aliases written out (memoized; a value over the string limit,
    or a cycle, counts as over the whole budget)."""
    if id(node) in sizes:
        return sizes[id(node)]
    over = MAX_DOCUMENT_BYTES + 1
    sizes[id(node)] = over  # a recursive alias
    if isinstance(node, yaml.ScalarNode):
        size = len(str(node.value).encode())
        size = over if size > MAX_STRING_BYTES else size + VALUE_BYTES
    else:
        children = _children(node, "")
        size = VALUE_BYTES + sum(_size(child, sizes) for _, child in children)
    sizes[id(node)] = min(size, over)
    return sizes[id(node)]


def _count(node: yaml.Node, counts: dict[int, int]) -> int:
    """Values of a node with its aliases written out (memoized; a cycle counts as too many)."""
    if id(node) not in counts:
        counts[id(node)] = MAX_NODES + 1
        total = 1 + sum(_count(child, counts) for _, child in _children(node, ""))
        counts[id(node)] = min(total, MAX_NODES + 1)
    return counts[id(node)]


def _children(node: yaml.Node, where: str) -> list[tuple[str, yaml.Node]]:
    """A container's children in the file's order, each with its YAML path."""
    if isinstance(node, yaml.SequenceNode):
        return [(f"{where}[{i}]", child) for i, child in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        out = []
        for key, value in node.value:
            name = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
            here = f"{where}.{name}" if where else name
            out += [(here, key), (here, value)]
        return out
    return []


def _overflow(node: yaml.Node, where: str, left: int, sizes: dict[int, int]) -> tuple[str, int]:
    """The path at which `left` bytes run out, walking in the file's order, and the size of
    the value found there when it is a single value over MAX_STRING_BYTES (else 0)."""
    while True:
        if isinstance(node, yaml.ScalarNode):
            size = len(str(node.value).encode())
            return where, size if size > MAX_STRING_BYTES else 0
        left -= VALUE_BYTES
        for here, child in _children(node, where):
            if _size(child, sizes) > left:
                node, where = child, here
                break
            left -= _size(child, sizes)
        else:
            return where, 0


NEAR_MISS = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(/{0,3})")


def _refuse_near_miss(uri: str) -> None:
    """`s3:/bucket`, `S3://…`, `s3a://…`, `gs://…`: a URI meant, not a folder. Written as is
    it would become a local folder named `s3:` and the data would silently stay here."""
    match = NEAR_MISS.match(uri)
    if not match or (match.group(1) in ("s3", "file") and match.group(2).startswith("//")):
        return
    scheme = match.group(1)
    if scheme.lower().startswith("s3"):
        fix = "write s3://bucket/prefix (lowercase s3, two slashes)"
    else:
        fix = "output goes to s3://bucket/prefix or a local folder (./name for a folder with ':')"
    raise ConfigError(
        f"{uri!r} looks like a {scheme}: URI but is neither s3://bucket/prefix nor a folder",
        path="output.uri",
        fix=fix,
    )


ENV_KEYS = ("url", "api_key", "endpoint_url")
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(data: Any, path: str = "", unset_ok: bool = False) -> Any:
    """Replace `${VAR}` / `${VAR:-default}` in `url` and `api_key` values anywhere in the file
    (`unset_ok`: an unset variable without a default reads as empty instead of an error)."""
    if isinstance(data, dict):
        return {
            k: _expand(v, f"{path}.{k}" if path else str(k), unset_ok)
            if k in ENV_KEYS and isinstance(v, str)
            else expand_env(v, f"{path}.{k}" if path else str(k), unset_ok)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [expand_env(v, f"{path}[{i}]", unset_ok) for i, v in enumerate(data)]
    return data


def _expand(value: str, path: str, unset_ok: bool = False) -> str | None:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        if unset_ok:
            return ""
        raise ConfigError(
            f"environment variable {name} is not set",
            path=path,
            fix=f"export {name}=... or write ${{{name}:-default}}",
        )

    expanded = ENV_REF.sub(one, value)
    return expanded or None


def parse_pipeline(data: dict[str, Any]) -> PipelineConfig:
    """Validate a mapping, turning pydantic's errors into one ConfigError naming the paths."""
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        lines = [_explain(err) for err in exc.errors()]
        error = ConfigError("invalid pipeline file:\n" + "\n".join(lines))
        error.path = _walk(tuple(exc.errors()[0]["loc"]))[0]
        raise error from None


def _walk(loc: tuple[int | str, ...]) -> tuple[str, Any]:
    """Follow an error location through the models the way pydantic did.

    Returns the YAML path (pydantic puts a union's tag into `loc`; the file has no such key)
    and the model found there (None when the walk leaves the models).
    """
    model: Any = PipelineConfig
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            args = typing.get_args(_unwrap(model))
            model = args[0] if args else None
            continue
        tagged = _tagged_member(model, part)
        if tagged is not None:
            model = tagged
            continue
        path += f".{part}" if path else part
        fields = getattr(_unwrap(model), "model_fields", {})
        model = fields[part].annotation if part in fields else None
    return path, _unwrap(model)


def _tagged_member(model: Any, tag: str) -> Any:
    """The member of a discriminated union whose `type` literal is `tag`, if any."""
    tp = _unwrap(model)
    if not (isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union):
        return None
    for member in typing.get_args(tp):
        field = getattr(member, "model_fields", {}).get("type")
        if field is not None and tag in typing.get_args(field.annotation):
            return member
    return None


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _explain(err: Any) -> str:
    loc = tuple(err["loc"])
    kind = err["type"]
    where = _walk(loc)[0] or "(top level)"
    if kind == "extra_forbidden":
        fields = getattr(_walk(loc[:-1])[1], "model_fields", {})
        allowed = [k for k, f in fields.items() if not f.exclude]
        near = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean '{near[0]}'? " if near else ""
        return f"- {where}: unknown key. fix: {hint}allowed keys here: {', '.join(allowed)}"
    if kind == "missing":
        return f"- {where}: required key is missing. fix: add '{loc[-1]}:'"
    if kind == "union_tag_invalid":
        ctx = err.get("ctx", {})
        return f"- {where}: unknown type {ctx.get('tag')!r}. fix: use one of {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        return f"- {where}: no 'type:' key. fix: add 'type:' ({err.get('ctx', {}).get('discriminator')})"
    value = err.get("input")
    shown = "" if isinstance(value, dict | list) else f" (got {value!r})"
    if isinstance(value, str) and len(value) > SHOWN_CHARS:  # a 4 KB path would hide the line
        shown = f" (got {value[: SHOWN_CHARS // 2]!r}…, {len(value):,} characters)"
    message = str(err["msg"])
    if "fix:" in message:  # a validator's own message already says how
        return f"- {where}: {message}{shown}"
    return f"- {where}: {message}{shown}. fix: {_fix(err, loc, where)}"


SHOWN_CHARS = 120  # of a bad value quoted in its error line
NUMBER_KINDS = {"int_parsing", "int_type", "int_from_float", "float_parsing", "float_type"}
BOUND_KINDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _fix(err: Any, loc: tuple[int | str, ...], where: str) -> str:
    """How to put a type or range error right: the key's bounds, type and description (every
    field is described), so the line says what a good value looks like."""
    kind, ctx = str(err["type"]), err.get("ctx") or {}
    field = _field(loc)
    described = f" ({field.description})" if field is not None and field.description else ""
    if kind in BOUND_KINDS or kind == "finite_number" or kind in NUMBER_KINDS:
        whole = kind.startswith("int") or _is_int(field)
        number = "a whole number" if whole else "a finite number"
        bounds = _bounds(field) or _bounds_of(ctx)
        return f"write {number}{' ' + bounds if bounds else ''}{described}"
    if kind in ("too_short", "too_long"):
        least, most = ctx.get("min_length"), ctx.get("max_length")
        count = f"at least {least}" if kind == "too_short" else f"at most {most}"
        return f"give {count} item{'s' if (least or most) != 1 else ''}{described}"
    if kind in ("bool_parsing", "bool_type"):
        return f"write true or false{described}"
    if kind in ("string_type", "string_too_long", "string_too_short"):
        return f"write a string{_lengths(ctx)}{described}"
    if kind == "literal_error":
        return f"use one of {ctx.get('expected')}"
    if kind == "enum":
        return f"use one of {ctx.get('expected')}"
    if kind in ("list_type", "tuple_type", "set_type"):
        return f"write a list ([a, b]){described}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"write a mapping (key: value){described}"
    message = str(err["msg"])
    if "; " in message:  # "what is wrong; what to write" (the validators' own convention)
        return message.rsplit("; ", 1)[1]
    return f"change {where}{described or ' (every key: docs/config.md)'}"


def _field(loc: tuple[int | str, ...]) -> Any:
    """The pydantic field an error location ends at, or None (a list item, a union tag)."""
    if not loc or not isinstance(loc[-1], str):
        return None
    fields = getattr(_walk(loc[:-1])[1], "model_fields", {})
    return fields.get(loc[-1])


def _is_int(field: Any) -> bool:
    annotation = _unwrap(getattr(field, "annotation", None))
    return annotation is int or int in typing.get_args(annotation)


def _bounds(field: Any) -> str:
    """'between 200 and 7680', '> 0', ... from the field's own constraints."""
    found: dict[str, Any] = {}
    for meta in getattr(field, "metadata", []) or []:
        for name in ("gt", "ge", "lt", "le"):
            if getattr(meta, name, None) is not None:
                found[name] = getattr(meta, name)
    return _bounds_of(found)


def _bounds_of(limits: dict[str, Any]) -> str:
    low = f"≥ {limits['ge']}" if "ge" in limits else f"> {limits['gt']}" if "gt" in limits else ""
    high = f"≤ {limits['le']}" if "le" in limits else f"< {limits['lt']}" if "lt" in limits else ""
    return " and ".join(b for b in (low, high) if b)


def _lengths(ctx: dict[str, Any]) -> str:
    if ctx.get("max_length") is not None:
        return f" of at most {ctx['max_length']} characters"
    if ctx.get("min_length") is not None:
        return f" of at least {ctx['min_length']} characters"
    return ""
