"""`sft`: chat samples, one per step, in the `messages` + `images` layout of TRL's vision SFT
and the Qwen-VL / UI-TARS trainers.

    ShardData ─► sft_rows(shard, options) ─► data/part-<shard>.parquet (+ .jsonl, no image bytes)

A sample is two turns. The user turn: the last `history` screenshots of the episode up to this
step (oldest first, the current one last) as `{"type": "image"}` parts, then one text part with
the instruction and the previous actions in words. The assistant turn: the step's action as a
tool call or code string (`actions`), its point in the export's convention (`coords`). The
`images` column lists the screenshots in the order of the image parts.

Which episodes (`filter`): `solved` (the task's check passed), `judged` (solved, or a relabel
its check accepted), `all` (failures too, each with its `failure_category`). Which instruction
(`instruction`): `task` (the task's), `relabeled` (the accepted relabel, else the task's: the
`instruction_source` column says which), `step` (the step's own action description as a
low-level instruction).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from datagen.export.actions import action_text
from datagen.export.coords import to_point
from datagen.export.failures import failure_category, solved
from datagen.export.options import ExportOptions
from datagen.export.parquet import IMAGE
from datagen.export.source import Row, ShardData

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
    ]
)
# The JSONL companion: everything but the image bytes (`images` become their paths).
JSONL_COLUMNS = list(SCHEMA.names)


def kept(episode: Row, options: ExportOptions) -> bool:
    """Whether the filter keeps the episode."""
    if options.filter == "all":
        return True
    if options.filter == "judged":
        return solved(episode) or episode.get("relabel_accepted") is True
    return solved(episode)


def episode_instruction(episode: Row, options: ExportOptions) -> tuple[str, str]:
    """(instruction, source) of an episode's samples for `task` / `relabeled`."""
    relabel = episode.get("relabeled_instruction")
    if options.instruction == "relabeled" and relabel and episode.get("relabel_accepted"):
        return str(relabel), "relabel"
    return str(episode["instruction"]), "task"


def user_text(instruction: str, previous: list[str]) -> str:
    """The user turn's text: the instruction, then the actions taken so far."""
    done = "\n".join(f"{i}. {d}" for i, d in enumerate(previous, 1)) or "none"
    return f"Instruction: {instruction}\nPrevious actions:\n{done}"


def sft_rows(shard: ShardData, options: ExportOptions) -> list[Row]:
    """The shard's samples: one per step of each episode the filter keeps."""
    out: list[Row] = []
    for episode in shard.episodes:
        if not kept(episode, options):
            continue
        steps = shard.steps_by_episode.get(episode["episode_id"], [])
        out += [_sample(episode, steps, i, options) for i in range(len(steps))]
    return out


def _sample(episode: Row, steps: list[Row], i: int, options: ExportOptions) -> Row:
    step = steps[i]
    if options.instruction == "step":
        instruction = step["action_description"]
        source = "step" if step["description_source"] == "pipeline" else "step_from_action"
    else:
        instruction, source = episode_instruction(episode, options)
    shown = steps[max(0, i - options.history + 1) : i + 1]
    previous = [s["action_description"] for s in steps[:i]]
    action = action_text(step, options.coords, options.syntax, solved(episode))
    image_parts: list[dict[str, Any]] = [{"type": "image", "text": None} for _ in shown]
    messages = [
        {
            "role": "user",
            "content": [*image_parts, {"type": "text", "text": user_text(instruction, previous)}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": action}]},
    ]
    point = None
    if step.get("x_px") is not None:
        w, h = step["image_width"], step["image_height"]
        point = to_point(step["x_px"], step["y_px"], w, h, options.coords)
    return {
        "messages": messages,
        "images": [s["screenshot"] for s in shown],
        "instruction": instruction,
        "instruction_source": source,
        "action": action,
        "action_type": step["action_type"],
        "action_description": step["action_description"],
        "point": point,
        "coords": options.coords,
        "syntax": options.syntax,
        "image_width": step["image_width"],
        "image_height": step["image_height"],
        **{k: episode[k] for k in ("run_id", "task_id", "episode_id", "group_id", "sample_index")},
        "step_index": step["step_index"],
        "n_steps": episode["n_steps"],
        "success": episode["success"],
        "status": episode["status"],
        "failure_category": failure_category(episode),
        "url": step["url"],
    }
