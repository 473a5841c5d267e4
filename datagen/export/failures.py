"""What did not succeed, and why: `failure_category` for every non-solved episode, and the
episodes that never became rows (rejected tasks and episodes), so no export drops a failure
silently.

    ShardData ─► failure_category(episode)  (on sft/rl/pairs rows)
              ─► failure_rows(shard)        (every export's `failures/` table)

Categories, from the episode row (first match):

- `not_reproduced`: its check passed, but a replay of its steps on a fresh context did not pass
  it again (time, randomness, a page dealing a new problem each load): not solved;
- `left_scope`: its actions kept leaving the episode's scope (status left_scope);
- `no_check`: the task has no success check (success is null), so nothing says it failed;
- `max_steps`: the step budget ran out (status max_steps);
- `done_without_success`: the policy said done and the check said no (status done);
- `failed_task`: the task's `fail` check passed: the page said it ended unsuccessfully;
- `rejected`: no episode row at all: the task or episode became a reject (`reject_reason`
  says which, e.g. navigation_failed, timeout_episode, no_steps).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa

from datagen.export.source import Row, ShardData

CATEGORIES = (
    "not_reproduced",
    "left_scope",
    "no_check",
    "max_steps",
    "done_without_success",
    "failed_task",
    "rejected",
)


def solved(episode: Row) -> bool:
    """The task's check passed on the final page, and a replay did not find otherwise (an
    episode whose success a replay of its steps did not reproduce is not solved)."""
    return episode.get("success") is True and episode.get("verification") != "not_reproduced"


def failure_category(episode: Row) -> str | None:
    """Why an episode is not solved (the module docstring's categories); None when solved."""
    if solved(episode):
        return None
    status = episode.get("status")
    if episode.get("verification") == "not_reproduced":
        return "not_reproduced"
    if status == "left_scope":
        return "left_scope"
    if episode.get("success") is None:
        return "no_check"
    if status == "done":
        return "done_without_success"
    return "max_steps" if status == "max_steps" else str(status)


FAILURE_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("task_id", pa.string()),
        pa.field("episode_id", pa.string()),
        pa.field("group_id", pa.string()),
        pa.field("sample_index", pa.int64()),
        pa.field("failure_category", pa.string()),
        pa.field("status", pa.string()),
        pa.field("success", pa.bool_()),
        pa.field("n_steps", pa.int64()),
        pa.field("instruction", pa.string()),
        pa.field("reject_stage", pa.string()),
        pa.field("reject_reason", pa.string()),
        pa.field("reject_detail", pa.string()),
    ]
)


def failure_rows(shard: ShardData) -> list[Row]:
    """One row per non-solved episode and per rejected task or episode of the shard."""
    out: list[Row] = []
    for e in shard.episodes:
        category = failure_category(e)
        if category is None:
            continue
        out.append(
            {
                **{k: e[k] for k in ("run_id", "task_id", "episode_id", "group_id")},
                "sample_index": e["sample_index"],
                "failure_category": category,
                "status": e["status"],
                "success": e["success"],
                "n_steps": e["n_steps"],
                "instruction": e["instruction"],
            }
        )
    for r in shard.lost():
        out.append(
            {
                **{k: r[k] for k in ("run_id", "task_id", "episode_id", "group_id")},
                "failure_category": "rejected",
                "n_steps": 0,
                "reject_stage": r["stage"],
                "reject_reason": r["reason"],
                "reject_detail": r["detail"],
            }
        )
    return out


def count(rows: list[Row]) -> dict[str, Any]:
    """Failure rows by category, and rejected ones by reason (for the state and the card)."""
    return {
        "by_category": dict(Counter(r["failure_category"] for r in rows)),
        "rejected_by_reason": dict(
            Counter(r["reject_reason"] for r in rows if r["failure_category"] == "rejected")
        ),
    }
