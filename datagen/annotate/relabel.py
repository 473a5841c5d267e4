"""Hindsight relabeling of a finished episode: which instruction did its trajectory carry out?

    EpisodeRow + its StepRows ─► screenshots (the first, the final one, evenly spaced ones
        between, `images` in all) + each step's action in words (and its error, if any)
    ─► relabel role: HINDSIGHT.relabel_messages ─► RelabelAnswer {thought, instruction}
    ─► check (annotation.relabel.check): the judge role, or the relabel role re-reading,
       asks whether the session carries the instruction out, the final screenshot in view
       ─► RelabelVerdict {reason, fulfilled};  `none`: accepted unchecked
    ─► Relabeled: the episode row's relabel columns, and a problem for the rejects table

Works from rows only (no page, no Observation): the pipeline calls it after the episode's
browser context is closed. Never raises for the model's failures: an engine error or an
unparseable answer leaves `relabeled_instruction` (or the verdict) null and becomes a `relabel`
reject with the reason; a rejection by the check is a `relabel_rejected` reject. The episode
row is kept either way, `instruction_source` saying which instruction it carries.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from datagen.config import RelabelConfig, RoleName
from datagen.engine.client import EngineError
from datagen.engine.hindsight import HINDSIGHT, Frame, RelabelAnswer, RelabelVerdict
from datagen.engine.profiles import ModelOutputError, SentImage, encode_screenshot
from datagen.engine.roles import Engines
from datagen.records import EpisodeRow, ImageData, RejectReason, StepRow

ROLE: RoleName = "relabel"


@dataclass(frozen=True)
class Relabeled:
    """What a relabel leaves: the episode's relabel columns, and why it fell short (if so)."""

    columns: dict[str, Any] = field(default_factory=dict)
    problem: tuple[RejectReason, str] | None = None


def frame_indices(frames: int, images: int) -> list[int]:
    """Which of `frames` screenshots to send: the first, the last, evenly spaced between."""
    wanted = min(frames, images)
    if wanted <= 1:
        return list(range(frames))
    return sorted({round(i * (frames - 1) / (wanted - 1)) for i in range(wanted)})


def describe(step: StepRow) -> str:
    """A step's action in words (from its DOM target); its call syntax if that is empty."""
    return step.action_description or step.action_repr


def trajectory(
    episode: EpisodeRow, steps: Sequence[StepRow], images: int, max_width: int
) -> tuple[list[tuple[str, str | None]], list[Frame]]:
    """The actions (description, error) and the chosen frames as sent."""
    shots = [(step.screenshot, f"before action {step.step_index + 1}") for step in steps]
    shots.append((episode.final_screenshot, "after the last action"))
    frames = [
        Frame(_sent(shots[i][0], max_width), shots[i][1]) for i in frame_indices(len(shots), images)
    ]
    return [(describe(step), step.action_error) for step in steps], frames


async def relabel_episode(
    episode: EpisodeRow,
    steps: Sequence[StepRow],
    engines: Engines,
    config: RelabelConfig,
    max_width: int,
) -> Relabeled:
    """Ask the relabel role, then the check; the episode's relabel columns and any problem."""
    checkers: dict[str, RoleName | None] = {"judge": "judge", "reread": ROLE, "none": None}
    checker = checkers[config.check]
    involved = [engines.roles[ROLE]] + ([engines.roles[checker]] if checker else [])
    columns: dict[str, Any] = {
        "relabel_model": involved[0].model,
        "relabel_standin": any(role.standin for role in involved),
        "relabel_prompt_version": HINDSIGHT.tag,
    }
    actions, frames = trajectory(episode, steps, config.images, max_width)
    messages = HINDSIGHT.relabel_messages(actions, frames)
    try:
        answer, result = await engines.ask(
            ROLE, messages, HINDSIGHT.relabel_schema(), RelabelAnswer
        )
    except (ModelOutputError, EngineError) as exc:
        return Relabeled(columns | _raw(exc, "relabel_output"), _problem(exc, "relabel"))
    columns["relabel_output"] = result.content
    instruction = " ".join(answer.instruction.split())
    if not instruction:
        return Relabeled(columns, (RejectReason.MODEL_PARSE_ERROR, "relabel: empty instruction"))
    columns["relabeled_instruction"] = instruction
    if checker is None:
        return Relabeled(columns | {"relabel_accepted": True, "instruction_source": "relabel"})
    check = HINDSIGHT.check_messages(instruction, actions, frames[-1].image)
    try:
        verdict, checked = await engines.ask(
            checker, check, HINDSIGHT.check_schema(), RelabelVerdict
        )
    except (ModelOutputError, EngineError) as exc:
        return Relabeled(columns | _raw(exc, "relabel_check_output"), _problem(exc, checker))
    columns |= {"relabel_check_output": checked.content, "relabel_accepted": verdict.fulfilled}
    if verdict.fulfilled:
        return Relabeled(columns | {"instruction_source": "relabel"})
    detail = f"{checker} check: {instruction!r} not carried out: {verdict.reason}"
    return Relabeled(columns, (RejectReason.RELABEL_REJECTED, detail))


def _sent(image: ImageData, max_width: int) -> SentImage:
    """A stored screenshot as sent to the model (its size and format read from its header)."""
    with Image.open(io.BytesIO(image.bytes)) as opened:
        width, height = opened.size
        kind = (opened.format or "png").lower()
    return encode_screenshot(image.bytes, kind, width, height, max_width)


def _raw(exc: Exception, column: str) -> dict[str, Any]:
    """An unparseable answer's text, kept in its column (nothing for an engine error)."""
    raw = exc.raw if isinstance(exc, ModelOutputError) else None
    return {column: raw} if raw is not None else {}


def _problem(exc: Exception, role: RoleName) -> tuple[RejectReason, str]:
    """The reject reason of a failed call, as the vlm policy names them."""
    if isinstance(exc, ModelOutputError):
        return RejectReason.MODEL_PARSE_ERROR, f"{role}: {exc}"
    if isinstance(exc, EngineError):  # engine_rejected, engine_unavailable or engine_error
        return RejectReason(exc.reason), f"{role}: {exc}"
    return RejectReason.ENGINE_UNAVAILABLE, f"{role}: {exc}"
