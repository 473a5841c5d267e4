"""Task-list readers: each turns one file format into `TaskSpec`s.

    native JSONL | WebVoyager JSONL | URL list | bundled sites  ─►  list[TaskSpec]

Errors name the file and line; nothing here touches the network.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from datagen.errors import SourceError
from datagen.loading import FileProblem, read_text
from datagen.records import TaskSpec

MAX_ID = 256  # characters; ids become file names of exports, log fields and dashboard rows
# C0/C1 controls, DEL, line and paragraph separators, bidirectional overrides and isolates
ID_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
ID_FIX = "give each task a short id of printable characters (e.g. shop-12)"


def checked_id(task_id: str, where: str, seen: dict[str, int] | None = None, line: int = 0) -> str:
    """A task id as every reader requires it: not empty or blank, no control characters,
    at most MAX_ID characters, and (with `seen`: id → line) not already used in the file.
    SourceError naming the file and line otherwise."""
    shown = repr(task_id[:60]) + ("…" if len(task_id) > 60 else "")
    if not task_id.strip():
        raise SourceError(f"{where}: the task id {shown} is empty", fix=ID_FIX)
    if ID_CONTROL.search(task_id):
        raise SourceError(f"{where}: the task id {shown} holds a control character", fix=ID_FIX)
    if len(task_id) > MAX_ID:
        problem = f"{where}: the task id {shown} is {len(task_id):,} characters (at most {MAX_ID})"
        raise SourceError(problem, fix=ID_FIX)
    if seen is not None:
        if task_id in seen:
            raise SourceError(
                f"{where}: duplicate task id {shown} (first at line {seen[task_id]})",
                fix="task ids must be unique across a pipeline",
            )
        seen[task_id] = line
    return task_id


# Package data (pyproject.toml), so that a worker installed from a wheel serves them too.
BUNDLED_SITES = Path(__file__).resolve().parents[1] / "sites"
SITE_SCHEME = "site://"


def _text(path: Path, what: str) -> str:
    """The task list's text; a missing, unreadable, binary or non-UTF-8 file is a SourceError
    naming the file (and the byte offset), never a traceback."""
    try:
        return read_text(path, what)
    except FileProblem as exc:
        raise SourceError(str(exc), fix=exc.fix) from None


def json_lines(
    path: Path, text: str | None = None, fix: str = "one JSON object per line (JSONL)"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of a JSON-lines task list (`text`: its text, read here when None);
    a line that is not a JSON object is a SourceError naming the file, the line and `fix`."""
    text = _text(path, "task list") if text is None else text
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(
                f"{path}:{number}: not valid JSON: {exc.msg} (column {exc.colno}); fix: {fix}"
            ) from None
        except RecursionError:  # `[[[[…` deeper than the JSON reader follows
            raise SourceError(
                f"{path}:{number}: the line nests deeper than a JSON reader follows; fix: {fix}"
            ) from None
        if not isinstance(record, dict):
            raise SourceError(
                f"{path}:{number}: each line must be a JSON object, got {type(record).__name__}"
            )
        yield number, record


def read_native(
    path: Path, limit: int | None = None, source: str = "native", site: str = ""
) -> list[TaskSpec]:
    """datagen's JSONL: {id, start_url, instruction, check?, fail?, max_steps?, actions?}."""
    tasks: list[TaskSpec] = []
    seen: dict[str, int] = {}
    for number, record in json_lines(path):
        try:
            task = TaskSpec.model_validate({"source": source, "site": site, **record})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            near = [hint for e in exc.errors() if (hint := _near(e))]
            fix = "; ".join(near) if near else ""
            raise SourceError(f"{path}:{number}: {problems}", fix) from None
        checked_id(task.id, f"{path}:{number}", seen, number)
        tasks.append(task)
        if limit and len(tasks) >= limit:
            break
    return tasks


def _near(error: Any) -> str:
    """`did you mean 'instruction'?` for a misspelt key of a task (or of its check, fail or
    element check); "" for any other problem."""
    loc = tuple(error["loc"])
    if error["type"] != "extra_forbidden" or not loc:
        return ""
    model: Any = TaskSpec
    for key in loc[:-1]:  # check / fail ─► SuccessCheck, element ─► ElementCheck
        field = getattr(model, "model_fields", {}).get(key)
        model = getattr(field, "annotation", None)
        model = next((a for a in getattr(model, "__args__", ()) if a is not type(None)), model)
    allowed = list(getattr(model, "model_fields", {}))
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    where = ".".join(map(str, loc))
    return (
        f"{where}: did you mean '{close[0]}'?"
        if close
        else f"{where}: keys here: {', '.join(allowed)}"
    )


def read_webvoyager(path: Path, limit: int | None = None) -> list[TaskSpec]:
    """WebVoyager_data.jsonl: {web_name, id, ques, web}; no success check (judged later)."""
    tasks: list[TaskSpec] = []
    seen: dict[str, int] = {}
    for number, record in json_lines(path):
        missing = [k for k in ("id", "ques", "web") if k not in record]
        if missing:
            raise SourceError(f"{path}:{number}: WebVoyager record lacks {', '.join(missing)}")
        tasks.append(
            TaskSpec(
                id=checked_id(str(record["id"]), f"{path}:{number}", seen, number),
                start_url=str(record["web"]),
                instruction=str(record["ques"]),
                source="webvoyager",
                site=str(record.get("web_name", "")),
            )
        )
        if limit and len(tasks) >= limit:
            break
    return tasks


def read_urls(path: Path, instruction: str, limit: int | None = None) -> list[TaskSpec]:
    """One URL a line; blank lines, `#` lines and ` # ...` tails skipped (a `#` inside a URL is
    its fragment); the id is `<file stem>-<line>`."""
    tasks: list[TaskSpec] = []
    for number, line in enumerate(_text(path, "URL list").splitlines(), start=1):
        url = re.split(r"\s#", line, maxsplit=1)[0].strip()
        if url.startswith("#"):
            continue
        if not url:
            continue
        if "://" not in url:
            raise SourceError(f"{path}:{number}: {url!r} is not a URL (expected scheme://host/...)")
        task_id = checked_id(f"{path.stem}-{number}", f"{path}:{number}")
        tasks.append(TaskSpec(id=task_id, start_url=url, instruction=instruction, source="urls"))
        if limit and len(tasks) >= limit:
            break
    return tasks


def list_sites(root: Path) -> list[str]:
    """Names of the site folders under `root` that have a tasks.jsonl."""
    return sorted(p.parent.name for p in root.glob("*/tasks.jsonl"))


def require_sites(root: Path, names: list[str] | None = None) -> list[str]:
    """The sites under `root` (`names`, when given), checked: a missing or empty folder, or a
    named site it lacks, is a SourceError with the fix. Without this, a worker whose datagen
    lacks the bundled sites serves 404s and every task ends as `navigation_failed`."""
    bundled = root == BUNDLED_SITES
    if bundled:
        fix = (
            "this datagen installation lacks its bundled sites (package data in datagen/sites/): "
            "reinstall datagen from a wheel or sdist built from the repository "
            "(`pip install datagen-<version>-py3-none-any.whl`), not from a copy of its .py files"
        )
    else:
        fix = (
            "point the sites source's `dir` at a folder of <site>/tasks.jsonl (+ its pages) "
            "that exists at that path on the driver and on every worker"
        )
    what = "the bundled sites folder" if bundled else "the sites folder"
    if not root.is_dir():
        raise SourceError(f"{root}: {what} does not exist", fix=fix)
    available = list_sites(root)
    if not available:
        raise SourceError(f"{root}: {what} holds no sites (expected <site>/tasks.jsonl)", fix=fix)
    unknown = sorted(set(names or []) - set(available))
    if unknown:
        raise SourceError(
            f"unknown site(s) {', '.join(unknown)}; available: {', '.join(available)}",
            fix="name sites of that folder (a worker's must hold the same sites as the driver's: "
            "the same datagen version, the same `dir`)",
        )
    return list(names or available)


def read_sites(root: Path, names: list[str] | None = None) -> list[TaskSpec]:
    """The bundled sites' tasks; their start URLs are `site://<name>/...`."""
    available = require_sites(root, names)
    tasks: list[TaskSpec] = []
    for name in available:
        tasks += read_native(root / name / "tasks.jsonl", source="sites", site=name)
    return tasks
