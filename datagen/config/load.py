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

from pydantic import ValidationError

from datagen.config.pipeline import PipelineConfig
from datagen.errors import ConfigError
from datagen.loading import MAX_BYTES, FileProblem, load_yaml, read_text


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
        data = load_yaml(read_text(path, "pipeline file", MAX_BYTES), path)
    except FileProblem as exc:
        raise ConfigError(str(exc), fix=exc.fix or "correct the YAML") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the file must be a YAML mapping (key: value), got {type(data).__name__}"
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
    if isinstance(uri, str):
        _refuse_near_miss(uri)
    if isinstance(uri, str) and "://" not in uri:
        # Local output is relative to where the command runs; workers get the absolute path.
        data["output"]["uri"] = str(Path(uri).expanduser().absolute())
    data["base_dir"] = str(path.resolve().parent)
    return parse_pipeline(data)


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
    return f"- {where}: {err['msg']}{shown}"
