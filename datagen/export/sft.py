"""`sft`: chat samples, one per step, in the `messages` + `images` layout of TRL's vision SFT
and the Qwen-VL / UI-TARS trainers.

    ShardData ─► sft_samples(shard, options) ─► data/part-<shard>.parquet (+ .jsonl, no image bytes)

A sample is three turns. The system turn: the action tool or functions with the screen size
(`system.py`). The user turn: the screenshots of the step's history (oldest first, the current
one last; at most `history` of them) as `{"type": "image"}` parts, then one text part with the
instruction and the previous actions in words. The assistant turn: the step's action in the
export's syntax (`actions`), its point in the export's convention (`coords`). The `images`
column lists the screenshots in the order of the image parts.

Which episodes (`filter`): `solved` (the task's check passed), `judged` (solved, or a relabel
its check accepted), `all` (failures too, each with its `failure_category`). Which instruction
each step gets, and which earlier steps it shows, is `labels.plan`'s: the task's only on a
needed step of a replay-verified episode (history: the earlier needed steps), the accepted
relabel on every step of its episode (`--instruction relabeled`), the step's own description
everywhere else (`instruction_source` says which). A run's synthesised tasks add their
demonstrations (`synth.py`: `instruction_source` synthesised, `synth_task_id`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa

from datagen.export.actions import action_text
from datagen.export.coords import Frame
from datagen.export.failures import failure_category, solved
from datagen.export.labels import Labelled, accepted_relabel, plan, standin_relabel
from datagen.export.options import ExportOptions
from datagen.export.parquet import IMAGE
from datagen.export.source import Row, ShardData
from datagen.export.synth import sft_synth
from datagen.export.system import system_text
from datagen.export.tally import Samples

PART = pa.struct([("type", pa.string()), ("text", pa.string())])
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.list_(PART))])
SCHEMA = pa.schema(
    [
        ("messages", pa.list_(MESSAGE)),
        ("images", pa.list_(IMAGE)),
        ("instruction", pa.string()),
        ("instruction_source", pa.string()),
        ("action", pa.string()),
        ("action_type", pa.string()),
        ("action_description", pa.string()),
        ("point", pa.list_(pa.float64(), 2)),
        ("coords", pa.string()),
        ("syntax", pa.string()),
        ("image_width", pa.int64()),
        ("image_height", pa.int64()),
        ("model_image_width", pa.int64()),
        ("model_image_height", pa.int64()),
        ("previous_steps", pa.list_(pa.int64())),
        ("needed", pa.bool_()),
        ("verification", pa.string()),
        ("run_id", pa.string()),
        ("task_id", pa.string()),
        ("episode_id", pa.string()),
        ("group_id", pa.string()),
        ("sample_index", pa.int64()),
        ("step_index", pa.int64()),
        ("n_steps", pa.int64()),
        ("success", pa.bool_()),
        ("status", pa.string()),
        ("failure_category", pa.string()),
        ("url", pa.string()),
        ("synth_task_id", pa.string()),
    ]
)
# The JSONL companion: everything but the image bytes (`images` become their paths).
JSONL_COLUMNS = list(SCHEMA.names)


def kept(episode: Row, options: ExportOptions) -> bool:
    """Whether the filter keeps the episode (`judged`: a relabel the export may use)."""
    if options.filter == "all":
        return True
    if options.filter == "judged":
        return solved(episode) or accepted_relabel(episode, options.allow_standin) is not None
    return solved(episode)


def user_text(instruction: str, previous: list[str]) -> str:
    """The user turn's text: the instruction, then the actions taken so far."""
    done = "\n".join(f"{i}. {d}" for i, d in enumerate(previous, 1)) or "none"
    return f"Instruction: {instruction}\nPrevious actions:\n{done}"


def prompt(
    system: str, instruction: str, earlier: tuple[Row, ...], shown: int
) -> list[dict[str, Any]]:
    """The system and user turns of a step's sample: `shown` image parts (the last `shown - 1`
    earlier screenshots, then the step's own), the instruction and the earlier actions."""
    parts: list[dict[str, Any]] = [{"type": "image", "text": None} for _ in range(shown)]
    text = user_text(instruction, [s["action_description"] for s in earlier])
    return [
        {"role": "system", "content": [{"type": "text", "text": system}]},
        {"role": "user", "content": [*parts, {"type": "text", "text": text}]},
    ]


def screenshots(labelled: Labelled, history: int) -> list[Any]:
    """The sample's screenshots: up to `history - 1` earlier ones of its history, then its own."""
    earlier = list(labelled.earlier)[max(0, len(labelled.earlier) - (history - 1)) :]
    return [s["screenshot"] for s in [*earlier, labelled.step]]


def sft_samples(shard: ShardData, options: ExportOptions) -> Samples:
    """The shard's samples (one per step of each episode the filter keeps, stand-in ones left
    out) and their tally."""
    tally: Counter[str] = Counter()
    out: list[Row] = []
    for episode in shard.episodes:
        if standin_relabel(episode, options):
            tally["left_out.standin_relabel"] += 1
        if not kept(episode, options):
            continue
        steps = shard.steps_by_episode.get(episode["episode_id"], [])
        for labelled in plan(episode, steps, options, tally):
            out.append(_sample(episode, labelled, options))
    out += sft_synth(shard, options, tally, _sample)  # synthesised tasks' demonstrations
    return Samples(out, tally)


def sft_rows(shard: ShardData, options: ExportOptions) -> list[Row]:
    """The shard's samples alone."""
    return sft_samples(shard, options).rows


def _sample(episode: Row, labelled: Labelled, options: ExportOptions) -> Row:
    step = labelled.step
    frame = Frame.of(step["image_width"], step["image_height"], options)
    images = screenshots(labelled, options.history)
    action = action_text(step, frame, options.syntax, solved(episode))
    system = system_text(options.syntax, frame)
    messages = [
        *prompt(system, labelled.instruction, labelled.earlier, len(images)),
        {"role": "assistant", "content": [{"type": "text", "text": action}]},
    ]
    point = None
    if step.get("x_px") is not None:
        point = frame.point(step["x_px"], step["y_px"])
    return {
        "messages": messages,
        "images": images,
        "instruction": labelled.instruction,
        "instruction_source": labelled.source,
        "action": action,
        "action_type": step["action_type"],
        "action_description": step["action_description"],
        "point": point,
        **frame.columns(options.syntax),
        "previous_steps": [s["step_index"] for s in labelled.earlier],
        "needed": step.get("needed"),
        "verification": episode.get("verification"),
        **{k: episode[k] for k in ("run_id", "task_id", "episode_id", "group_id", "sample_index")},
        "step_index": step["step_index"],
        "n_steps": episode["n_steps"],
        "success": episode["success"],
        "status": episode["status"],
        "failure_category": failure_category(episode),
        "url": step["url"],
    }
