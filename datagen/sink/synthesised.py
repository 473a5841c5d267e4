"""A run's synthesised tasks as the whole run decides them: specificity across shards (issue 43).

    committed `tasks` rows (each proven by its shard: pipeline/synthesis.py)
    + committed `episodes`' final_state_json and acted_json (schema 1.8)
        ─► run_wide() ─► the same rows, a kept one that an episode of another shard disproves
            dropped as `not_specific`, the episodes it was false on added; and, kept rows
            only, `false_after_acting`: those that acted on the demonstration's last element
            and ended with the check false (no evidence on specificity, but an rl group's
            0.0 rollouts as much as the others: export/synth.failed_on)

A shard proves its tasks against its own episodes only (`synthesis.specific`, once the shard's
episodes ended), but a site's tasks are spread over the shards (source.shard_tasks): an episode
from the same start may end in another shard, on a page where a task's check holds though it
never did the task's demonstration. The rule is the shard's, applied over every committed
episode, offline (no replay): a kept task is dropped when its check holds on the final page of
another episode from its start that did not act on the demonstration's last element (one that
did may well have made the effect). What the run itself disproves, it does not claim: the task
list, the `sft` and `rl` exports, the report and the run summary read the tasks through
`synthesised()`. The Parquet `tasks` parts keep each row as its shard decided it (a committed
part is never rewritten; a shard committed later may disprove a task of an earlier one).

Episodes written before 1.8 have no final state: they decide nothing (as before).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from datagen.records import PageState, SuccessCheck
from datagen.sink.read import iter_committed
from datagen.sink.storage import Storage

Row = dict[str, Any]
FINALS = ["episode_id", "start_url", "final_state_json", "acted_json"]


@dataclass(frozen=True)
class Final:
    """What one episode left for the tasks of others: its final page, what it acted on."""

    episode_id: str
    start_url: str
    state: PageState
    acted: frozenset[tuple[str, str]]
    shard: int = -1  # the shard it ran in


def finals(storage: Storage, starts: Iterable[str]) -> list[Final]:
    """The committed episodes from any of `starts` that recorded their final page."""
    wanted = pa.array(sorted(set(starts)), pa.string())
    if not len(wanted):
        return []
    out = []
    for shard, part in iter_committed(storage, "episodes", FINALS):
        mine = part.filter(pc.is_in(part.column("start_url"), value_set=wanted))
        for r in mine.to_pylist():
            if r["final_state_json"] is None:
                continue
            acted = json.loads(r["acted_json"] or "[]")
            out.append(
                Final(
                    r["episode_id"],
                    r["start_url"],
                    PageState.model_validate_json(r["final_state_json"]),
                    frozenset((role, name) for role, name in acted),
                    shard,
                )
            )
    return out


def run_wide(rows: list[Row], ended: list[Final]) -> list[Row]:
    """`rows` (committed `tasks` rows) with specificity decided over every episode of `ended`
    (module docstring); rows not kept, and those it does not disprove, as they were but for
    the episodes they were false on."""
    by_start: dict[str, list[Final]] = {}
    for f in ended:
        by_start.setdefault(f.start_url, []).append(f)
    return [_decided(r, by_start.get(r["start_url"], [])) if r["kept"] else r for r in rows]


def _decided(row: Row, others: list[Final]) -> Row:
    check = SuccessCheck.model_validate_json(row["check_json"])
    last = tuple(row.get("demo_element") or ())
    false_on = list(row.get("false_on_episodes") or [])
    acted_false: list[str] = []  # acted as the demonstration did, and the check is false
    for f in others:
        if f.episode_id == row["episode_id"]:
            continue
        if len(last) == 2 and last in f.acted:  # it may well have made the effect: no
            if check.holds_on(f.state) is False:  # evidence against, but a 0.0 rollout
                acted_false.append(f.episode_id)
            continue
        if check.holds_on(f.state):
            return {
                **row,
                "kept": False,
                "dropped_at": "not_specific",
                "disproved_by": f.episode_id,
            }
        if f.episode_id not in false_on and f.episode_id not in (row.get("fail_episodes") or []):
            false_on.append(f.episode_id)
    return {**row, "false_on_episodes": false_on, "false_after_acting": acted_false}


def synthesised(storage: Storage) -> list[Row]:
    """Every committed `tasks` row (with its `shard`), specificity decided run-wide."""
    return synthesised_run(storage)[0]


def synthesised_run(storage: Storage) -> tuple[list[Row], list[Final]]:
    """`synthesised()`, and the final pages it was decided on (every committed episode from a
    kept task's start that recorded one, with its shard: where an rl group's rollouts are)."""
    rows = [
        {**r, "shard": shard}
        for shard, part in iter_committed(storage, "tasks")
        for r in part.to_pylist()
    ]
    starts = {r["start_url"] for r in rows if r["kept"]}
    ended = finals(storage, starts)
    return run_wide(rows, ended), ended


def chosen(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kept rows, one per (start URL, effect), one per (start URL, instruction) and one per
    demonstration (an episode's same steps): the shortest demonstration, then the first
    episode id, then one whose check reads what its words quote, then the first effect (the
    same list from the same run). Two checks of one instruction ("Press "Save changes"" read
    by either of two messages) are one task to a trainer, not two; nor are two effects of one
    demonstration (a todo added: its checkbox "Call the dentist" and its Delete button
    appeared; `Add "Call the dentist" to the list`, checked by the item itself, is kept over
    `Add "Call the dentist"`, checked by its Delete button)."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    said: set[tuple[str, str]] = set()
    shown: set[tuple[str, str, tuple[int, ...]]] = set()
    order = sorted(
        rows, key=lambda r: (len(r["demo_steps"]), r["episode_id"], not _reads(r), r["effect"])
    )
    for row in order:
        asked = (row["start_url"], row["instruction"])
        demo = (row["start_url"], row["episode_id"], tuple(row["demo_steps"]))
        if not row["kept"] or asked in said or demo in shown:
            continue
        if (row["start_url"], row["effect"]) not in best:
            best[(row["start_url"], row["effect"])] = row
            said.add(asked)
            shown.add(demo)
    return sorted(best.values(), key=lambda r: (r["site"], r["effect_kind"], r["synth_id"]))


def _reads(row: Row) -> bool:
    """Does the row's check read a text its instruction quotes (an element's name, a line)?"""
    check = json.loads(row["check_json"])
    read = check.get("text_present") or (check.get("element") or {}).get("name")
    return bool(read) and f'"{read}"' in row["instruction"]
