"""Which instruction each step's sample may carry, and which earlier steps it shows.

    episode row + its step rows + options ─► plan(episode, steps, options, tally) ─► [Labelled]
                                                                (sft samples, pairs' chosen side)

A sample that pairs a task's instruction with an action teaches a model that the action serves
the task; for most steps of an explore episode that solved its task by chance it does not. So
the task's instruction goes only where replay verification showed it true:

- `task`: a step with `needed = true` of an episode whose `verification` is `minimal` (the
  final done of a verified episode is needed). Its history (the previous actions in words and
  the earlier screenshots) holds only the earlier needed steps: the verified path. A `reduced`
  episode's search stopped before it proved every step it kept: its steps are step-level only
  (a task sample would pair the instruction with a step nobody showed it needs).
- `relabel` (`--instruction relabeled`): an episode whose relabel its check accepted; the
  relabel describes the whole trajectory, so every step carries it, with all earlier steps.
- `step` / `step_from_action`: every other step of a kept episode, with its own action
  description as the instruction (`step_from_action`: derived here for outputs without
  descriptions) and all earlier steps as history. Never the task's instruction.

Unverified outputs (written before `annotation.verify`, or without it) have no needed steps:
their samples are all step-level. Stand-in output is left out unless `--allow-standin` (a
sample holding a step the stand-in chose, a relabel it wrote), counted in the tally.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from datagen.export.options import ExportOptions
from datagen.export.source import Row

VERIFIED = ("minimal",)


@dataclass(frozen=True)
class Labelled:
    """One step's sample-to-be: its instruction, where that came from, and the earlier steps
    it shows (oldest first)."""

    step: Row
    instruction: str
    source: str  # task | relabel | step | step_from_action
    earlier: tuple[Row, ...]


def verified(episode: Row) -> bool:
    """Replay verification proved the steps the episode's task needs (`minimal`)."""
    return episode.get("verification") in VERIFIED


def task_path(episode: Row, steps: list[Row]) -> list[Row]:
    """The steps that carry the task's instruction: the needed steps of a verified episode,
    in order, as the minimal path showed them (`on_path`); none for any other episode."""
    if not verified(episode):
        return []
    return [on_path(s) for s in steps if s.get("needed") is True]


def on_path(step: Row) -> Row:
    """A needed step as its task-labelled sample shows it: the screen and the action's words
    observed on the replay of the minimal path (`path_screenshot`, its URL `path_url`), so that the sample's
    screen shows no effect of a step its history leaves out. A step without one (nothing was
    left out: the episode's own screens are the path's; or output of schema < 1.4) as it is."""
    if step.get("path_screenshot") is None:
        return step
    words = step.get("path_action_description") or step["action_description"]
    url = step.get("path_url") or step["url"]
    return {**step, "screenshot": step["path_screenshot"], "action_description": words, "url": url}


def standin(step: Row) -> bool:
    """The step's action was chosen by datagen's model stand-in, not by a model."""
    return step.get("model_standin") is True


def accepted_relabel(episode: Row, allow_standin: bool) -> str | None:
    """The episode's relabel its check accepted; None without one, or when the stand-in wrote
    it and `allow_standin` is off."""
    text = episode.get("relabeled_instruction")
    if not text or episode.get("relabel_accepted") is not True:
        return None
    if episode.get("relabel_standin") is True and not allow_standin:
        return None
    return str(text)


def standin_relabel(episode: Row, options: ExportOptions) -> bool:
    """An accepted relabel the export would read (`--instruction relabeled`, `--filter
    judged`) but leaves out because the stand-in wrote it."""
    reads = options.instruction == "relabeled" or options.filter == "judged"
    return (
        reads
        and not options.allow_standin
        and accepted_relabel(episode, allow_standin=True) is not None
        and episode.get("relabel_standin") is True
    )


def step_source(step: Row) -> str:
    """`step`, or `step_from_action` for a description derived at export (schema < 1.2)."""
    return (
        "step" if step.get("description_source", "pipeline") == "pipeline" else "step_from_action"
    )


def plan(
    episode: Row, steps: list[Row], options: ExportOptions, tally: Counter[str]
) -> list[Labelled]:
    """The samples of a kept episode's steps, in step order, with their instruction and
    history; stand-in ones left out and counted (`tally`) unless the options allow them."""
    relabelled = None
    if options.instruction == "relabeled":
        relabelled = accepted_relabel(episode, options.allow_standin)
    path = {s["step_index"]: s for s in task_path(episode, steps)}
    out: list[Labelled] = []
    for i, step in enumerate(steps):
        if relabelled is not None:
            labelled = Labelled(step, relabelled, "relabel", tuple(steps[:i]))
        elif options.instruction != "step" and step["step_index"] in path:
            earlier = tuple(path[s["step_index"]] for s in steps[:i] if s["step_index"] in path)
            shown = path[step["step_index"]]
            labelled = Labelled(shown, str(episode["instruction"]), "task", earlier)
        else:
            labelled = Labelled(
                step, step["action_description"], step_source(step), tuple(steps[:i])
            )
        if not options.allow_standin and any(map(standin, (step, *labelled.earlier))):
            tally["left_out.standin_step"] += 1
            continue
        out.append(labelled)
    return out
