"""Task-list readers: each turns one file format into `TaskSpec`s.

    native JSONL | WebVoyager JSONL | URL list | bundled sites  ─►  list[TaskSpec]

Errors name the file and line; nothing here touches the network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from datagen.errors import SourceError
from datagen.loading import FileProblem, read_text
from datagen.records import TaskSpec

BUNDLED_SITES = Path(__file__).resolve().parents[2] / "sources" / "sites"
SITE_SCHEME = "site://"


def _text(path: Path, what: str) -> str:
    """The task list's text; a missing, unreadable, binary or non-UTF-8 file is a SourceError
    naming the file (and the byte offset), never a traceback."""
    try:
        return read_text(path, what)
    except FileProblem as exc:
        raise SourceError(str(exc), fix=exc.fix) from None


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(_text(path, "task list").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(
                f"{path}:{number}: not valid JSON: {exc.msg} (column {exc.colno}); "
                "fix: one JSON object per line (JSONL)"
            ) from None
        if not isinstance(record, dict):
            raise SourceError(
                f"{path}:{number}: each line must be a JSON object, got {type(record).__name__}"
            )
        yield number, record


def read_native(
    path: Path, limit: int | None = None, source: str = "native", site: str = ""
) -> list[TaskSpec]:
    """datagen's JSONL: {id, start_url, instruction, check?, max_steps?, actions?}."""
    tasks: list[TaskSpec] = []
    for number, record in _json_lines(path):
        try:
            tasks.append(TaskSpec.model_validate({"source": source, "site": site, **record}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise SourceError(f"{path}:{number}: {problems}") from None
        if limit and len(tasks) >= limit:
            break
    return tasks


def read_webvoyager(path: Path, limit: int | None = None) -> list[TaskSpec]:
    """WebVoyager_data.jsonl: {web_name, id, ques, web}; no success check (judged later)."""
    tasks: list[TaskSpec] = []
    for number, record in _json_lines(path):
        missing = [k for k in ("id", "ques", "web") if k not in record]
        if missing:
            raise SourceError(f"{path}:{number}: WebVoyager record lacks {', '.join(missing)}")
        tasks.append(
            TaskSpec(
                id=str(record["id"]),
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
        tasks.append(
            TaskSpec(
                id=f"{path.stem}-{number}", start_url=url, instruction=instruction, source="urls"
            )
        )
        if limit and len(tasks) >= limit:
            break
    return tasks


def list_sites(root: Path) -> list[str]:
    """Names of the site folders under `root` that have a tasks.jsonl."""
    return sorted(p.parent.name for p in root.glob("*/tasks.jsonl"))


def read_sites(root: Path, names: list[str] | None = None) -> list[TaskSpec]:
    """The bundled sites' tasks; their start URLs are `site://<name>/...`."""
    available = list_sites(root)
    if not available:
        raise SourceError(f"{root}: no bundled sites found (expected <site>/tasks.jsonl)")
    unknown = sorted(set(names or []) - set(available))
    if unknown:
        raise SourceError(
            f"unknown site(s) {', '.join(unknown)}; available: {', '.join(available)}"
        )
    tasks: list[TaskSpec] = []
    for name in names or available:
        tasks += read_native(root / name / "tasks.jsonl", source="sites", site=name)
    return tasks
