"""What a format made of a shard besides its rows: counts of the labels its samples carry and
of what it left out, and why (for the export state and the dataset card).

    <format>_samples(shard, options) ─► Samples(rows, tally) ─► run: rows → Parquet,
                                                                tally → ShardRecord.tally → card

Keys are `pairs.<same_state>` (pairs: start, screenshot) and `left_out.<reason>` (what each
sample carries, `instruction_source` and `needed`, is on the rows, and `figures` counts it):

- `standin_step`: a sample that would hold a step the model stand-in chose (the step itself,
  or one in its history), or a pair with such a step on either side;
- `standin_relabel`: an episode whose accepted relabel came from the stand-in: its samples
  fall back to the task rule (or, under `--filter judged` without a solve, are not kept);
- `standin_episode`: an rl rollout with any step the stand-in chose.

`--allow-standin` keeps them all (tests of the pipeline; never train on them).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from datagen.export.source import Row
from datagen.export.synth import ROLLOUTS

WHY = {
    "synth_no_steps": "synthesised tasks whose demonstration's steps are not in the output",
    "standin_step": "samples holding an action chosen by datagen's model stand-in, not a model",
    "standin_relabel": "episodes whose relabel was written by the stand-in (relabel not used)",
    "standin_episode": "rollouts with actions chosen by the stand-in",
}


@dataclass
class Samples:
    """A format's rows of one shard and its tally."""

    rows: list[Row]
    tally: Counter[str] = field(default_factory=Counter)


def tally_lines(tally: dict[str, int]) -> list[str]:
    """The card's lines on the pairs' shared states and on what was left out, and why (none
    when the tally is empty). Only a pairs export counts `pairs.` keys."""
    lines: list[str] = []
    pairs = {k.split(".", 1)[1]: n for k, n in tally.items() if k.startswith("pairs.")}
    if pairs:
        lines.append(
            "- pairs by shared state: "
            + ", ".join(f"{s} {n}" for s, n in sorted(pairs.items()))
            + " (start: both actions are their episodes' first; screenshot: byte-identical)"
        )
    lines += synth_lines(tally)
    for key, n in sorted(tally.items()):
        if key.startswith("left_out.") and n:
            reason = key.split(".", 1)[1]
            lines.append(
                f"- left out: {n} {WHY.get(reason, reason)} (`--allow-standin` keeps them)"
            )
    return lines


def synth_lines(tally: dict[str, int]) -> list[str]:
    """The card's lines on the run's synthesised tasks (export/synth.py; none without)."""
    tasks = tally.get("synth.tasks", 0)
    if not tasks:
        return []
    writes = {k.split("=", 1)[1]: n for k, n in tally.items() if k.startswith("synth.writes=")}
    made = [f"{tally.get('synth.samples', 0)} samples (`instruction_source` synthesised)"]
    if tally.get("synth.groups"):
        made = [
            f"{tally['synth.groups']} groups of {tally.get('synth.rollouts', 0)} rollouts "
            "(the demonstration, reward 1.0; episodes from the same start its check was "
            f"false on, reward 0.0, {ROLLOUTS} at most, {tally.get('synth.rollouts_elsewhere', 0)} "
            "of them from other shards than the task's; columns `check` and `fail` hold the "
            "task's checks)"
        ]
    said = ", ".join(f"{m} {n}" for m, n in sorted(writes.items())) or "none"
    return [
        f"- synthesised tasks (task synthesis, one per start URL and effect as `datagen export "
        f"-f tasks`; `synth_task_id` names each): {tasks}, giving "
        + " ".join(made)
        + f"; {tally.get('synth.with_fail', 0)} with a `fail` check; writes their "
        f"demonstrations sent: {said}"
    ]
