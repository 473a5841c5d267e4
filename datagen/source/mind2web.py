"""Mind2Web and Online-Mind2Web task files ─► `TaskSpec`s (`sources: [{type: mind2web}]`).

    train_*.json / test_*.json (a JSON array)  |  the same as JSONL  ─►  list[TaskSpec]
    Online_Mind2Web.json (task_id, confirmed_task | task_description, website URL)

A Mind2Web record (reference/formats.md §2.2): `annotation_id`, `website` (a name such as
`exploretock`), `confirmed_task`, `action_reprs` (`"[button]  Search -> CLICK"`) and `actions`,
each with `operation {op: CLICK | TYPE | SELECT, value}` and candidates whose `attributes` is
a JSON *string* holding `bounding_box_rect "x,y,width,height"`. Online-Mind2Web's records name
their start page in `website` (a URL). A record's start URL is its own URL when it has one,
else `start_urls[website]` from the source config; neither is an error naming the line.

The recorded actions become the scripted policy's steps: CLICK → click at the target box's
centre, TYPE → click, then type the value, SELECT → click, type the option's text, Enter.
The boxes are where the element was **in the recording** (document CSS px of the page as it
was crawled), not on the live page, which has moved on since: a replay clicks where the
element was. Targets below the viewport are scrolled to first (a scroll step), since actions
are viewport pixels. Actions stop at the first one with no known box (the later ones depend on
it). The original `action_reprs` are kept on the task (`TaskSpec.reference`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from datagen.errors import SourceError
from datagen.records import Action, Click, Key, Scroll, TaskSpec, TypeText
from datagen.source.readers import _text, checked_id, json_lines
from datagen.url import hostname

JSONL_FIX = "a JSON array of records, or one record per line (JSONL)"

FIX = (
    "give each record a URL (Online-Mind2Web's `website`) or map its website name to a start "
    "URL in the source's `start_urls: {website: https://…}`"
)


def read_mind2web(
    path: Path,
    start_urls: dict[str, str],
    limit: int | None = None,
    viewport: tuple[int, int] = (1280, 800),
    scale: float = 1.0,
) -> list[TaskSpec]:
    """The file's tasks. `viewport` (CSS px) and `scale` (device_scale_factor) turn recorded
    document boxes into the vocabulary's screenshot pixels."""
    tasks: list[TaskSpec] = []
    seen: dict[str, int] = {}
    for line, record in _records(path):
        where = f"{path}:{line}"
        raw_id = record.get("annotation_id", record.get("task_id"))
        instruction = record.get("confirmed_task", record.get("task_description"))
        if raw_id is None or not isinstance(instruction, str):
            raise SourceError(
                f"{where}: a Mind2Web record needs annotation_id (or task_id) and "
                "confirmed_task (or task_description)"
            )
        _check_shapes(record, f"{where}: record {str(raw_id)[:80]!r}")
        website = str(record.get("website") or "")
        start = _start_url(record, website, start_urls)
        if start is None:
            raise SourceError(
                f"{where}: record {raw_id!r} has no start URL: its website {website!r} is no "
                "URL and start_urls does not name it",
                fix=FIX,
            )
        reprs = record.get("action_reprs") or []
        tasks.append(
            TaskSpec(
                id=checked_id(str(raw_id), where, seen, line),
                start_url=start,
                instruction=instruction,
                source="mind2web",
                site=hostname(website) or website if "://" in website else website,
                actions=tuple(recorded_actions(record.get("actions") or [], viewport, scale)),
                reference=tuple(str(r) for r in reprs) if isinstance(reprs, list) else (),
            )
        )
        if limit and len(tasks) >= limit:
            break
    return tasks


def _check_shapes(record: dict[str, Any], named: str) -> None:
    """The fields read below have the types of the format (`"actions": 7` is no list): a
    SourceError naming the record and the field otherwise, never a traceback later."""

    def refuse(field: str, wanted: str, got: Any) -> SourceError:
        return SourceError(
            f"{named}: {field} must be {wanted}, got {type(got).__name__}",
            fix="correct the record as Mind2Web writes it (actions: a list of objects, each "
            "with pos_candidates: a list), or remove it",
        )

    if not isinstance(record.get("annotation_id", record.get("task_id")), str | int):
        raise refuse("annotation_id", "a string", record.get("annotation_id"))
    for field in ("website", "start_url", "url"):
        if record.get(field) is not None and not isinstance(record[field], str):
            raise refuse(field, "a string", record[field])
    reprs = record.get("action_reprs")
    if reprs is not None and not isinstance(reprs, list):
        raise refuse("action_reprs", "a list of strings", reprs)
    actions = record.get("actions")
    if actions is None:
        return
    if not isinstance(actions, list):
        raise refuse("actions", "a list of actions", actions)
    for index, action in enumerate(actions):
        if not isinstance(action, dict):
            raise refuse(f"actions[{index}]", "an object", action)
        candidates = action.get("pos_candidates")
        if candidates is not None and not isinstance(candidates, list):
            raise refuse(f"actions[{index}].pos_candidates", "a list of candidates", candidates)


def _start_url(record: dict[str, Any], website: str, start_urls: dict[str, str]) -> str | None:
    for key in ("start_url", "url"):
        if isinstance(record.get(key), str) and "://" in record[key]:
            return str(record[key])
    if "://" in website:
        return website
    if website.startswith("www.") or (website.count(".") and " " not in website):
        return start_urls.get(website) or f"https://{website}/"  # a bare host name
    return start_urls.get(website)


def recorded_actions(actions: list[Any], viewport: tuple[int, int], scale: float) -> list[Action]:
    """The vocabulary's actions for the recorded ones, in order, scrolling to targets below
    the viewport; stops at the first action whose target box is unknown."""
    out: list[Action] = []
    scroll_y = 0.0
    _, height = viewport
    for action in actions:
        op, value = _operation(action)
        box = _box(action)
        if op not in ("CLICK", "TYPE", "SELECT") or box is None:
            break
        x, y, w, h = box
        cx, cy = x + w / 2, y + h / 2
        if not scroll_y <= cy < scroll_y + height:
            target = max(0.0, cy - height / 2)
            out.append(Scroll(dy=round((target - scroll_y) * scale, 1)))
            scroll_y = target
        out.append(Click(x=round(cx * scale, 1), y=round((cy - scroll_y) * scale, 1)))
        if op in ("TYPE", "SELECT") and value:
            out.append(TypeText(text=value))
        if op == "SELECT":
            out.append(Key(combo="Enter"))
    return out


def _operation(action: Any) -> tuple[str, str]:
    operation = action.get("operation") if isinstance(action, dict) else None
    if isinstance(operation, str):  # Multimodal-Mind2Web keeps it as a JSON string
        try:
            operation = json.loads(operation)
        except json.JSONDecodeError:
            operation = None
    if not isinstance(operation, dict):
        return "", ""
    return str(operation.get("op", "")).upper(), str(operation.get("value") or "")


def _box(action: Any) -> tuple[float, float, float, float] | None:
    """The target's `bounding_box_rect` (document CSS px), from its first positive candidate."""
    candidates = action.get("pos_candidates") if isinstance(action, dict) else None
    for candidate in candidates or []:
        if isinstance(candidate, str):
            try:
                candidate = json.loads(candidate)
            except json.JSONDecodeError:
                continue
        attributes = candidate.get("attributes") if isinstance(candidate, dict) else None
        if isinstance(attributes, str):
            try:
                attributes = json.loads(attributes)
            except json.JSONDecodeError:
                continue
        rect = attributes.get("bounding_box_rect") if isinstance(attributes, dict) else None
        try:
            x, y, w, h = (float(v) for v in str(rect).split(","))
        except ValueError:
            continue
        if w > 0 and h > 0:
            return x, y, w, h
    return None


class Lines:
    """Line numbers of positions met in order, each character counted once (a file of 20,000
    records counted from its start for each took minutes). `scanned`: characters counted."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line, self.scanned = text, 0, 1, 0

    def at(self, pos: int) -> int:
        """The line of `pos` (≥ every position asked before)."""
        self.line += self.text.count("\n", self.pos, pos)
        self.scanned += max(0, pos - self.pos)
        self.pos = max(self.pos, pos)
        return self.line


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) of a JSON array or of JSONL. The array is read one record at a time; a
    record that is no object, nests deeper than the JSON reader follows, an array that never
    closes or text after its closing `]` is a SourceError naming the line."""
    text = _text(path, "Mind2Web task file")
    body = text.lstrip()
    if not body.startswith("["):
        yield from json_lines(path, text, JSONL_FIX)
        return
    decoder = json.JSONDecoder()
    pos = len(text) - len(body) + 1
    lines = Lines(text)
    expect = "a record or `]`"  # what may come next: JSON's own grammar of an array
    while True:
        pos = _skip_space(text, pos)
        if pos >= len(text):
            raise SourceError(
                f"{path}:{lines.at(pos)}: the JSON array never closes (no `]`)", fix=JSONL_FIX
            )
        if text[pos] == "]" and expect != "a record":
            rest = text[pos + 1 :].strip()
            if rest:
                where = lines.at(pos + 1 + text[pos + 1 :].index(rest[0]))
                raise SourceError(
                    f"{path}:{where}: text after the array's closing `]`: {rest[:40]!r}",
                    fix="remove it (a JSON file holds one array)",
                )
            return
        if text[pos] == "," and expect == "`,` or `]`":
            pos, expect = pos + 1, "a record"
            continue
        if expect == "`,` or `]`" or text[pos] in ",]":
            raise SourceError(
                f"{path}:{lines.at(pos)}: {expect} expected, found {text[pos]!r}",
                fix="one comma between records, none before the first or after the last",
            )
        line = lines.at(pos)
        try:
            record, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise SourceError(
                f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        except RecursionError:
            raise SourceError(
                f"{path}:{line}: the record starting here nests deeper than a JSON reader "
                "follows (brackets inside brackets)",
                fix="remove the record, or flatten it",
            ) from None
        if not isinstance(record, dict):
            raise SourceError(
                f"{path}:{line}: each record must be a JSON object, got {type(record).__name__}"
            )
        yield line, record
        expect = "`,` or `]`"


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
