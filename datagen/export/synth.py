"""Synthesised tasks in the `sft` and `rl` exports: each kept task's demonstration as
task-labelled samples, and each task as an `rl` group whose check rewards a rollout (issue 43).

    committed `tasks` parts ─► chosen(): one per (start URL, effect) and per instruction,
        as `--format tasks`
        ─► by_shard(): each on the shard of the episode it came from (ShardData.tasks)
        ─► demos(): the demonstration's steps as the minimal path showed them (`on_path`),
            then a `done` on the screen after its last step (the path's next screen)
        ─► sft_synth(): one sample per step, the synthesised instruction, the earlier
            demonstration steps as history (`instruction_source` synthesised, `synth_task_id`)
        ─► rl_synth(): a group per task: the demonstration (reward 1.0, the check held after
            it on two sealed replays), and the run's episodes from the same start the check
            was false on (reward 0.0: `false_on_episodes`, and those that showed its `fail`
            message; ROLLOUTS at most, from any committed shard: elsewhere() reads those of
            other shards once an export), each with the task's `check` and `fail` as JSON for
            a trainer's reward

A synthesised sample's group (`group_id`, hence its split side) is its source episode's in
`sft`; an `rl` group is the task's own (`group_id` of the run and the task id), on the split
side of its source episode; its 0.0 rollouts start where it does, on the same site, which
the split keeps on one side. Counts go into the export's tally (`synth.*`) and the card.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass

from datagen.export.coords import Frame
from datagen.export.labels import Labelled, on_path, standin
from datagen.export.options import ExportOptions
from datagen.export.source import Row, ShardData, group_id, read_shard
from datagen.export.tasks import synth_task_id
from datagen.export.trajectory import image_size, trajectory
from datagen.sink.models import Marker
from datagen.sink.storage import Storage
from datagen.sink.synthesised import chosen, synthesised_run

SOURCE = "synthesised"  # `instruction_source` of a synthesised task's samples
DONE = json.dumps({"type": "done", "answer": ""})
Sampler = Callable[[Row, Labelled, ExportOptions], Row]
# 0.0 rollouts a task's rl group takes at most: with its demonstration, 16 (a GRPO group's
# usual size). The episodes from a site's start page that a task's check is false on may be
# most of the site's, and every group of that start would carry them all.
ROLLOUTS = 15
# `failure_category` of a 0.0 rollout: an episode run for its own task, on whose final page
# this task's check is false
OTHER_TASK = "other_task"


def by_shard(
    storage: Storage, exported: frozenset[int] = frozenset()
) -> tuple[dict[int, list[Row]], dict[str, int]]:
    """The output's synthesised tasks as the tasks export keeps them (one per (start URL,
    effect), across shards), by the shard of the episode each came from; and episode id →
    shard of the episodes from their starts (read with them: where `elsewhere` finds an rl
    group's rollouts). A (start URL, effect) kept in a shard `exported` already (an earlier
    export of this folder took one of them then) is not given again by a shard committed
    since."""
    rows, ended = synthesised_run(storage)  # specificity decided over the whole run
    done = {(r["start_url"], r["effect"]) for r in rows if r["kept"] and r["shard"] in exported}
    out: dict[int, list[Row]] = {}
    for row in chosen(rows):
        if (row["start_url"], row["effect"]) not in done:
            out.setdefault(row["shard"], []).append(row)
    return out, {f.episode_id: f.shard for f in ended}


@dataclass(frozen=True)
class Demo:
    """A kept task's demonstration as samples show it: its steps on the minimal path, and a
    `done` on the screen after the last (None when the path has no screen after it)."""

    task: Row
    episode: Row
    steps: tuple[Row, ...]
    done: Row | None


def demos(shard: ShardData, options: ExportOptions, tally: Counter[str]) -> list[Demo]:
    """The demonstrations of the shard's synthesised tasks; stand-in ones left out (tallied)
    unless the options allow them."""
    episodes = {e["episode_id"]: e for e in shard.episodes}
    out = []
    for task in shard.tasks:
        episode = episodes.get(task["episode_id"])
        steps = {s["step_index"]: s for s in shard.steps_by_episode.get(task["episode_id"], [])}
        demo = [steps.get(i) for i in task["demo_steps"]]
        if episode is None or not demo or any(s is None for s in demo):
            tally["left_out.synth_no_steps"] += 1
            continue
        shown = tuple(on_path(s) for s in demo if s is not None)
        if not options.allow_standin and any(map(standin, shown)):
            tally["left_out.standin_step"] += 1
            continue
        later = [s for i, s in sorted(steps.items()) if i > shown[-1]["step_index"]]
        after = next((s for s in later if s.get("needed") is True), None)
        done = None
        if after is not None:  # the path's screen after the demonstration
            done = {
                **on_path(after),
                "action_type": "done",
                "action_json": DONE,
                "action_description": "Finish",  # describe()'s words for a done
                "x_px": None,
                "y_px": None,
                "action_error": None,
            }
        out.append(Demo(task, episode, shown, done))
    return out


def count(demo: Demo, tally: Counter[str]) -> None:
    """A task's figures for the card: tasks, those with a fail check, their writes by method."""
    tally["synth.tasks"] += 1
    tally["synth.with_fail"] += bool(demo.task.get("fail_json"))
    for write in demo.task.get("writes") or []:
        tally[f"synth.writes={write.split(' ')[1]}"] += 1


def sft_synth(
    shard: ShardData, options: ExportOptions, tally: Counter[str], sample: Sampler
) -> list[Row]:
    """The synthesised tasks' samples: one per demonstration step, and its done.
    `sample(episode, labelled, options)`: sft's sample of a labelled step."""
    if options.instruction == "step":  # step-level samples only: no task's words
        return []
    out = []
    for demo in demos(shard, options, tally):
        count(demo, tally)
        steps = [*demo.steps, *([demo.done] if demo.done else [])]
        for i, step in enumerate(steps):
            labelled = Labelled(step, demo.task["instruction"], SOURCE, tuple(steps[:i]))
            row = sample(demo.episode, labelled, options)
            out.append(row | {"synth_task_id": synth_task_id(demo.task)})
        tally["synth.samples"] += len(steps)
    return out


def failed_on(task: Row, known: Container[str]) -> list[str]:
    """The episodes of `known` a task's rl group takes as 0.0 rollouts, ROLLOUTS at most: those
    from its start its check was false on that did not act on its demonstration's last
    element, then those that did and showed its `fail` message, then the others that did
    (`false_after_acting`, sink/synthesised.py: the shop's cart task's "Cart 3" after three
    "Add to cart" clicks)."""
    others = [
        *(task.get("false_on_episodes") or []),
        *(task.get("fail_episodes") or []),
        *(task.get("false_after_acting") or []),
    ]
    return [e for e in dict.fromkeys(others) if e in known and e != task["episode_id"]][:ROLLOUTS]


def elsewhere(
    storage: Storage,
    markers: dict[int, Marker],
    run_id: str,
    tasks: dict[int, list[Row]],
    shard_of: dict[str, int],
) -> dict[str, tuple[Row, list[Row]]]:
    """Episode id → (episode, steps) of the rollouts the rl groups of `tasks` (by the shard
    each is exported with) take from other committed shards (`shard_of`, from by_shard: a
    rollout of another shard was decided on its final page, so it is there): each such shard
    read once, only those episodes kept."""
    wanted: dict[int, set[str]] = {}
    for shard, rows in tasks.items():
        for task in rows:
            for episode_id in failed_on(task, shard_of):
                if shard_of[episode_id] != shard:
                    wanted.setdefault(shard_of[episode_id], set()).add(episode_id)
    out: dict[str, tuple[Row, list[Row]]] = {}
    for shard, ids in sorted(wanted.items()):
        data = read_shard(storage, markers[shard], run_id, ("episodes", "steps"))
        for e in data.episodes:
            if e["episode_id"] in ids:
                out[e["episode_id"]] = (e, data.steps_by_episode.get(e["episode_id"], []))
    return out


def synth_group(task: Row) -> str:
    """A synthesised task's rl group: that of its run and its task id."""
    return group_id(task["run_id"], synth_task_id(task))


def rl_synth(
    shard: ShardData, options: ExportOptions, tally: Counter[str], system: Callable[[Frame], str]
) -> list[Row]:
    """A group per synthesised task: its demonstration (reward 1.0), then the episodes from
    its start whose final page its check was false on (reward 0.0; `failed_on`), of this
    shard or another (`shard.rollouts`). `system(frame)`: the system turn for a screen."""
    episodes = shard.reachable()  # its own, and those of other shards (elsewhere())
    own = {e["episode_id"] for e in shard.episodes}
    out = []
    for demo in demos(shard, options, tally):
        count(demo, tally)
        task = demo.task
        rollouts: list[tuple[Row, list[Row], float]] = [
            (demo.episode, [*demo.steps, *([demo.done] if demo.done else [])], 1.0)
        ]
        for episode_id in failed_on(task, episodes):
            episode, steps = episodes[episode_id]
            if options.allow_standin or not any(map(standin, steps)):
                rollouts.append((episode, steps, 0.0))
                tally["synth.rollouts_elsewhere"] += episode_id not in own
        group = synth_group(task)
        for index, (episode, steps, reward) in enumerate(rollouts):
            records, images = trajectory(episode, steps, options)
            frame = Frame.of(*image_size(steps, episode), options)
            final = episode["final_screenshot"]
            if reward == 1.0:  # the screen after the demonstration, not the episode's end
                final = demo.done["screenshot"] if demo.done else None
            out.append(
                {
                    "run_id": episode["run_id"],
                    "group_id": group,
                    "sample_index": index,
                    "seed": episode["seed"],
                    "task_id": synth_task_id(task),
                    "episode_id": episode["episode_id"],
                    "instruction": task["instruction"],
                    "system": system(frame),
                    "reward": reward,
                    "success": reward == 1.0,
                    "status": "solved" if reward == 1.0 else "failed",
                    "failure_category": None if reward == 1.0 else OTHER_TASK,
                    # the demonstration's replays proved it; a 0.0 rollout's replays (if any)
                    # were of its own task's steps, which say nothing of this one
                    "verification": episode.get("verification") if reward == 1.0 else None,
                    "group_size": len(rollouts),
                    "group_rejected": 0,
                    "n_steps": len(steps),
                    "steps": records,
                    "images": images,
                    "final_screenshot": final,
                    **frame.columns(options.syntax),
                    "synth_task_id": synth_task_id(task),
                    "check": task["check_json"],
                    "fail": task.get("fail_json"),
                }
            )
        tally["synth.groups"] += 1
        tally["synth.rollouts"] += len(rollouts)
    return out
