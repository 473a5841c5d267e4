"""`datagen export OUT --format tasks`: a run's synthesised tasks as a task list `datagen run`
reads back (`sources: [{type: jsonl}]`), with a card.

    committed `tasks` parts (pipeline/synthesis.py) ─► the kept ones, one per (start URL,
        effect), the shortest demonstration first ─► tasks.jsonl (TaskSpec lines: start URL,
        instruction, check, max_steps, the demonstration as `actions`, provenance)
        + README.md: counts by effect kind and site, candidates dropped at each proof step

Not the Parquet export loop (export/run.py): deduplication spans shards, so the list is
written whole from every committed shard, each time.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from datagen.errors import ExportError
from datagen.records import TaskSpec
from datagen.records.taskrow import PROOF_STEPS
from datagen.sink.storage import open_storage
from datagen.sink.synthesised import chosen, synthesised

# steps a run of a task may take beyond its demonstration: room to recover, not to wander
SLACK_STEPS = 3


@dataclass
class TaskExport:
    """What was written: the task list's key, its tasks, and the candidates read."""

    key: str
    tasks: int
    candidates: int

    def summary(self) -> str:
        line = f"{self.tasks} tasks (of {self.candidates} candidates) written to {self.key}"
        if not self.candidates:  # a run without task synthesis: say why the list is empty
            line += (
                "; the output holds no synthesised tasks: run the pipeline with "
                "`annotation.tasks: {}` (and `annotation.verify`) to make them"
            )
        return line


def synth_task_id(row: dict[str, Any]) -> str:
    """The task list's id of a `tasks` row (also `synth_task_id` in the sft and rl exports)."""
    return f"synth-{row['site'] or 'site'}-{row['synth_id']}"


def task_line(row: dict[str, Any]) -> TaskSpec:
    """The task list's entry for one kept `tasks` row (a TaskSpec, as the jsonl reader reads)."""
    actions = json.loads(row["actions_json"])
    return TaskSpec.model_validate(
        {
            "id": synth_task_id(row),
            "start_url": row["start_url"],
            "instruction": row["instruction"],
            "check": json.loads(row["check_json"]),
            "fail": json.loads(row["fail_json"]) if row.get("fail_json") else None,
            "max_steps": len(actions) + SLACK_STEPS,
            "site": row["site"],
            "actions": actions,
            "provenance": {
                "run_id": row["run_id"],
                "episode_id": row["episode_id"],
                "task_id": row["task_id"],
                "steps": ",".join(map(str, row["demo_steps"])),
                "effect_kind": row["effect_kind"],
                "effect": row["effect"],
                "proof": f"{row['proof_replays']} replays; false on {row['false_on_start']} "
                f"start observations and {len(row['false_on_episodes'])} other episodes",
                **({"writes": "; ".join(row["writes"])} if row.get("writes") else {}),
                **(
                    {
                        "words": f"reworded by {row['reword_model']}",
                        "ours": row["synth_instruction"],
                    }
                    if row.get("synth_instruction")
                    else {}
                ),
                **(
                    {"fail_from": ",".join(row["fail_episodes"] or [])}
                    if row.get("fail_json")
                    else {}
                ),
            },
        }
    )


def _plain(task: TaskSpec) -> dict[str, Any]:
    """A task's JSON line: its fields, without the empty ones (`fail`, `reference`, nulls in
    the check)."""
    data = task.model_dump(mode="json")
    for key in ("check", "fail"):
        if data.get(key):
            data[key] = {k: v for k, v in data[key].items() if v is not None}
            if data[key].get("element"):
                data[key]["element"] = {
                    k: v for k, v in data[key]["element"].items() if v is not None
                }
    return {k: v for k, v in data.items() if v not in (None, "", [], ())}


def reads_none(given: dict[str, Any]) -> None:
    """ExportError naming the sample options given (not None) to `--format tasks`, a task list
    that reads none of them."""
    unread = [k for k, v in given.items() if v is not None]
    if unread:
        flags = ", ".join("--" + k.replace("_", "-") for k in unread)
        raise ExportError(f"--format tasks does not read {flags}; fix: leave it out")


def card(rows: list[dict[str, Any]], kept: list[dict[str, Any]]) -> str:
    """The task list's card: tasks by effect kind and site, candidates each proof step dropped."""
    kinds = Counter(r["effect_kind"] for r in kept)
    sites = Counter(r["site"] for r in kept)
    dropped = Counter(r["dropped_at"] for r in rows if not r["kept"])
    writes = Counter(w.split(" ", 1)[1] for r in kept for w in r.get("writes") or [])
    failing = sum(1 for r in kept if r.get("fail_json"))
    alone = sum(1 for r in kept if not r.get("false_on_episodes"))
    lines = [
        "# Synthesised tasks",
        "",
        f"{len(kept)} tasks, one per (start URL, effect), from {len(rows)} candidates. Each "
        "check is decided by a program (never a model); each was false at the start, true "
        "after its demonstration on two sealed replays (and, for a message in a live region, "
        "still true once it had time to go: not `transient`), and false on the final state "
        "of the run's other episodes from the same start that did not act as it did, in "
        f"every shard. {alone} of them met no such episode (every other episode from their "
        "start acted as the demonstration did, or none ran): only their start states speak "
        "for their specificity (`provenance.proof`).",
        "",
        "| effect kind | tasks |",
        "|---|---|",
        *[f"| {k} | {n} |" for k, n in sorted(kinds.items())],
        "",
        "| site | tasks |",
        "|---|---|",
        *[f"| {k or '(none)'} | {n} |" for k, n in sorted(sites.items())],
        "",
        "| dropped at | candidates |",
        "|---|---|",
        *[f"| {k} | {dropped.get(k, 0)} |" for k in PROOF_STEPS],
        f"| no_words | {dropped.get('no_words', 0)} |",
        f"| over_limit (annotation.tasks.per_episode) | {dropped.get('over_limit', 0)} |",
        f"| duplicates of a kept (start URL, effect), instruction or demonstration | "
        f"{sum(1 for r in rows if r['kept']) - len(kept)} |",
        "",
        f"{failing} tasks have a `fail` check: a failure message the run's other episodes "
        "from the same start met acting as the demonstration's last step did, without the "
        "effect (never shown at the start or on the demonstration's way).",
        "",
        f"Writes the demonstrations sent (from the recording; in each task's `provenance."
        f"writes`): {sum(writes.values())}.",
        *(["", "| write | tasks' demonstrations |", "|---|---|"] if writes else []),
        *[
            f"| {html.escape(w).replace('|', '&#124;')} | {n} |"
            for w, n in sorted(writes.items())[:20]
        ],
    ]
    return "\n".join(lines) + "\n"


def export_tasks(source: str, to: str | None = None, endpoint_url: str | None = None) -> TaskExport:
    """Write `tasks.jsonl` and `README.md` under `to` (default `<source>/exports/tasks`)."""
    storage = open_storage(source, endpoint_url)
    rows = synthesised(storage)  # specificity decided over the whole run
    kept = chosen(rows)
    target = to or source.rstrip("/") + "/exports/tasks"
    out = open_storage(target, endpoint_url)
    text = "".join(json.dumps(_plain(task_line(r))) + "\n" for r in kept)
    out.put("tasks.jsonl", text.encode())
    out.put("README.md", card(rows, kept).encode())
    return TaskExport(f"{target.rstrip('/')}/tasks.jsonl", len(kept), len(rows))
