"""`pairs`: step-level preference pairs, a verified action and a failed episode's different
action from the same state, for DPO-style training.

    ShardData ─► pair_samples(shard, options) ─► data/part-<shard>.parquet (one row per pair)

The chosen side is a step that replay verification showed the task needs (`needed = true` in an
episode whose `verification` is minimal: the verified path, `labels.task_path`). The
rejected side is a step of a failed episode of the same task (its check ran and said no) taken
from the same state:

- `start`: both are their episodes' first step (every repeat of a task starts from the same
  start URL and state), or
- `screenshot`: the two steps' screenshots are byte-identical;

and whose action leaves the verified path: another kind of action, a click outside the chosen
click's target box (a different target when the step has no box: never a pair when neither
says), other text, other keys, another scroll direction, another URL, another answer. A failed
episode that took the chosen action from that state gives no pair there. Each (chosen step,
rejected action) is one pair, however many failed episodes took that action; and one prompt
(the same screenshot and history) with the same two actions is one pair, however many solved
repeats took the chosen one.

The prompt is the chosen step's: the system turn, then the user turn with its screenshot, the
task's instruction and the earlier steps of the verified path in words (as the chosen step's
`sft` sample has them, one screenshot). `prompt` / `chosen` / `rejected` / `images` are TRL's
vision DPO columns. Both actions are written as the agent wrote them: a rejected `done` says
success (the agent claimed it; the check disagreed). The whole-trajectory pairing of earlier
versions (the n-th solved episode against the n-th failed one) is gone: two trajectories share
no prompt once their pages differ, so they made no preference a model can learn from.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from typing import Any

import pyarrow as pa

from datagen.export.actions import ACTION, action_text, pyautogui_keys
from datagen.export.coords import Frame
from datagen.export.failures import failure_category, solved
from datagen.export.labels import standin, task_path
from datagen.export.options import ExportOptions
from datagen.export.parquet import IMAGE
from datagen.export.sft import MESSAGE, prompt
from datagen.export.source import Row, ShardData
from datagen.export.system import system_text
from datagen.export.tally import Samples

SIDE = [
    ("episode_id", pa.string()),
    ("sample_index", pa.int64()),
    ("step_index", pa.int64()),
    ("action", pa.string()),
    ("action_type", pa.string()),
    ("action_description", pa.string()),
    ("point", pa.list_(pa.float64(), 2)),
]
SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("prompt", pa.list_(MESSAGE)),
        ("chosen", pa.list_(MESSAGE)),
        ("rejected", pa.list_(MESSAGE)),
        ("images", pa.list_(IMAGE)),
        ("system", pa.string()),
        ("instruction", pa.string()),
        ("same_state", pa.string()),
        ("previous_steps", pa.list_(pa.int64())),
        ("run_id", pa.string()),
        ("group_id", pa.string()),
        ("task_id", pa.string()),
        ("start_url", pa.string()),
        ("url", pa.string()),
        *[(f"chosen_{name}", dtype) for name, dtype in SIDE],
        ("chosen_verification", pa.string()),
        *[(f"rejected_{name}", dtype) for name, dtype in SIDE],
        ("rejected_failure_category", pa.string()),
        ("coords", pa.string()),
        ("syntax", pa.string()),
        ("image_width", pa.int64()),
        ("image_height", pa.int64()),
        ("model_image_width", pa.int64()),
        ("model_image_height", pa.int64()),
    ]
)


def same_state(good: Row, bad: Row) -> str | None:
    """How two steps are known to start from the same state (`start`, `screenshot`), or None."""
    if good["step_index"] == 0 and bad["step_index"] == 0:
        return "start"
    if good["screenshot"]["bytes"] == bad["screenshot"]["bytes"]:
        return "screenshot"
    return None


def leaves_path(good: Row, bad: Row) -> bool:
    """Whether `bad`'s action is another action than `good`'s (the module docstring's rules)."""
    a = ACTION.validate_json(good["action_json"]).model_dump()
    b = ACTION.validate_json(bad["action_json"]).model_dump()
    if a["type"] != b["type"]:
        return True
    kind = a["type"]
    if kind == "click":
        box = good.get("target_bbox_px")
        if box is not None:
            x1, y1, x2, y2 = box
            return not (x1 <= b["x"] <= x2 and y1 <= b["y"] <= y2)
        ours, theirs = good.get("target_selector"), bad.get("target_selector")
        return bool(ours and theirs and ours != theirs)
    if kind == "key":
        return pyautogui_keys(a["combo"]) != pyautogui_keys(b["combo"])
    if kind == "scroll":
        return (_sign(a["dx"]), _sign(a["dy"])) != (_sign(b["dx"]), _sign(b["dy"]))
    field = {"type": "text", "goto": "url", "done": "answer"}.get(kind)
    return field is not None and a[field] != b[field]


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def pair_samples(shard: ShardData, options: ExportOptions) -> Samples:
    """The shard's pairs, group by group, and their tally."""
    tally: Counter[str] = Counter()
    groups: dict[str, list[Row]] = defaultdict(list)
    for e in shard.episodes:
        groups[e["group_id"]].append(e)
    out: list[Row] = []
    for group in sorted(groups):
        episodes = sorted(groups[group], key=lambda e: e["sample_index"])
        failed = [e for e in episodes if e.get("success") is False]
        seen: set[tuple[object, ...]] = set()
        for chosen in (e for e in episodes if solved(e)):
            out += _pairs(shard, chosen, failed, options, tally, seen)
    return Samples(out, tally)


def pair_rows(shard: ShardData, options: ExportOptions) -> list[Row]:
    """The shard's pairs alone."""
    return pair_samples(shard, options).rows


def _pairs(
    shard: ShardData,
    chosen: Row,
    failed: list[Row],
    options: ExportOptions,
    tally: Counter[str],
    seen: set[tuple[object, ...]],
) -> list[Row]:
    """The pairs whose chosen side is a step of `chosen`'s verified path; `seen`: the group's
    pairs so far, as (prompt, chosen action, rejected action)."""
    path = task_path(chosen, shard.steps_by_episode.get(chosen["episode_id"], []))
    out: list[Row] = []
    for k, good in enumerate(path):
        earlier = tuple(path[:k])
        for loser in failed:
            for bad in shard.steps_by_episode.get(loser["episode_id"], []):
                how = same_state(good, bad)
                if how is None or not leaves_path(good, bad):
                    continue
                if not options.allow_standin and any(map(standin, (good, bad, *earlier))):
                    tally["left_out.standin_step"] += 1
                    continue
                row = _pair(chosen, good, earlier, loser, bad, how, options)
                key = (good["screenshot"]["bytes"], str(row["prompt"]), row["chosen_action"])
                if (*key, row["rejected_action"]) in seen:
                    continue  # the same preference again (another failed or solved repeat)
                seen.add((*key, row["rejected_action"]))
                tally[f"pairs.{how}"] += 1
                out.append(row)
    return out


def _side(episode: Row, step: Row, options: ExportOptions) -> tuple[Frame, dict[str, Any]]:
    frame = Frame.of(step["image_width"], step["image_height"], options)
    point = None if step.get("x_px") is None else frame.point(step["x_px"], step["y_px"])
    return frame, {
        "episode_id": episode["episode_id"],
        "sample_index": episode["sample_index"],
        "step_index": step["step_index"],
        # as the agent wrote it: a done claims success, whatever the check said after
        "action": action_text(step, frame, options.syntax, answered=True),
        "action_type": step["action_type"],
        "action_description": step["action_description"],
        "point": point,
    }


def _pair(
    chosen: Row,
    good: Row,
    earlier: tuple[Row, ...],
    loser: Row,
    bad: Row,
    how: str,
    options: ExportOptions,
) -> Row:
    frame, ours = _side(chosen, good, options)
    _, theirs = _side(loser, bad, options)
    system = system_text(options.syntax, frame)
    ids = f"{chosen['episode_id']}:{good['step_index']}:{loser['episode_id']}:{bad['step_index']}"

    def turn(text: str) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]

    return {
        "pair_id": hashlib.sha256(ids.encode()).hexdigest()[:16],
        "prompt": prompt(system, str(chosen["instruction"]), earlier, 1),
        "chosen": turn(ours["action"]),
        "rejected": turn(theirs["action"]),
        "images": [good["screenshot"]],
        "system": system,
        "instruction": chosen["instruction"],
        "same_state": how,
        "previous_steps": [s["step_index"] for s in earlier],
        **{k: chosen[k] for k in ("run_id", "group_id", "task_id", "start_url")},
        "url": good["url"],
        **{f"chosen_{k}": v for k, v in ours.items()},
        "chosen_verification": chosen.get("verification"),
        **{f"rejected_{k}": v for k, v in theirs.items()},
        "rejected_failure_category": failure_category(loser),
        **frame.columns(options.syntax),
    }
