"""Solve rate per task: of each task's episodes (`run.repeats` of them), how many its check
passed, from the committed `episodes` table. What a run of a task list with repeats (an
exported synthesised task list, a benchmark) is read for: pass@1 per task, and which tasks
no episode solved.

    committed episodes (task_id, success, instruction) ─► solve_rates() ─► {task: Rate}
        ─► solve_line() (the run summary) and solve_html() (the run report)
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass

from datagen.sink.read import iter_committed
from datagen.sink.storage import Storage, open_storage

log = logging.getLogger(__name__)

LISTED = 20  # tasks the summary names one by one (the report lists every one)


@dataclass
class Rate:
    """One task's episodes and how many of them were solved."""

    instruction: str
    episodes: int = 0
    solved: int = 0

    @property
    def share(self) -> float:
        return self.solved / self.episodes if self.episodes else 0.0


def solve_rates(storage: Storage) -> dict[str, Rate]:
    """Each task's episodes and solves, by task id (in task id order)."""
    rates: dict[str, Rate] = {}
    columns = ["task_id", "success", "instruction"]
    for _, part in iter_committed(storage, "episodes", columns):
        for row in part.to_pylist():
            rate = rates.setdefault(row["task_id"], Rate(row["instruction"] or ""))
            rate.episodes += 1
            rate.solved += bool(row["success"])
    return dict(sorted(rates.items()))


def rates_at(uri: str, endpoint_url: str | None = None) -> dict[str, Rate]:
    """`solve_rates` of the output at `uri`; none when it cannot be read (the summary goes on
    without the line, the reason logged)."""
    try:
        return solve_rates(open_storage(uri, endpoint_url))
    except Exception:
        log.info("no solve rates per task", exc_info=True)
        return {}


def solve_line(rates: dict[str, Rate]) -> str:
    """The summary's line: tasks all, some and none of whose episodes were solved, the mean
    solve rate, and each task's `solved/episodes` when there are few ("" when no task had
    more than one episode: a rate of one episode is its outcome, said already)."""
    if not rates or max(r.episodes for r in rates.values()) < 2:
        return ""
    every = sum(r.solved == r.episodes for r in rates.values())
    none = sum(r.solved == 0 for r in rates.values())
    mean = sum(r.share for r in rates.values()) / len(rates)
    line = (
        f"solve rate per task: mean {mean:.0%} over {len(rates)} tasks; every episode solved "
        f"{every}, some {len(rates) - every - none}, none {none}"
    )
    if len(rates) <= LISTED:
        return line + ": " + ", ".join(f"{t} {r.solved}/{r.episodes}" for t, r in rates.items())
    return line + " (each task's in the run report)"


def solve_html(rates: dict[str, Rate]) -> str:
    """The report's section: one row per task (id, instruction, solved of episodes)."""
    line = solve_line(rates)
    if not line:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(t)}</td><td>{html.escape(r.instruction[:200])}</td>"
        f"<td>{r.solved}/{r.episodes}</td><td>{r.share:.0%}</td></tr>"
        for t, r in rates.items()
    )
    return (
        f"<h2>solve rate per task</h2><p>{html.escape(line)}</p><table border=1>"
        f"<tr><th>task</th><th>instruction</th><th>solved</th><th>rate</th></tr>{rows}</table>"
    )
