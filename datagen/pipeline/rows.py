"""An episode's rows: steps, grounding, rejects and the episode itself, built from what the
episode saw and did.

    Observation + Decision ─► StepRow (action_description: annotate/describe.py)
    Observation ─► GroundingRow | RejectRow
    the final Observation + the episode's end ─► EpisodeRow
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datagen.annotate import grounding_rows
from datagen.annotate.describe import describe, model_description
from datagen.annotate.grounding import UNSHOWN_NAMES
from datagen.annotate.model import model_expressions
from datagen.config import PipelineConfig
from datagen.config.urls import strip_credentials
from datagen.engine.roles import Engines
from datagen.policy.roles import profile_for
from datagen.records import (
    Click,
    Decision,
    Element,
    EpisodeRow,
    GroundingRow,
    ImageData,
    ModelTrace,
    Observation,
    PageState,
    RejectReason,
    RejectRow,
    StepRow,
    TaskRow,
    TypeText,
)
from datagen.records.actions import action_json, action_repr
from datagen.validate import check_grounding
from datagen.versions import SCHEMA_VERSION


def digest(*parts: object) -> str:
    """A stable hex id of `parts` (episode ids and seeds)."""
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


def group_columns(run_id: str, task_id: str, repeat: int) -> dict[str, Any]:
    """`group_id` and `sample_index` of an episode's rows: the run's `run.repeats` episodes of
    one task form a group (the first 16 hex of sha256(run_id:task_id)); the repeat is the
    episode's place in it."""
    group = hashlib.sha256(f"{run_id}:{task_id}".encode()).hexdigest()[:16]
    return {"group_id": group, "sample_index": repeat}


@dataclass(frozen=True)
class Hit:
    """The element a step acted on, as a replay finds it again: role, name and its position
    among the page's elements of that role and name (0: the first). For a synthesised
    task's words (annotate/tasks.py): how many such elements there were, its accessible name,
    and its context where that tells it from them."""

    role: str
    name: str
    nth: int = 0
    equals: int = 1
    label: str = ""
    context: str = ""
    shown: bool = True  # `name` is drawn (not an icon-only control's aria-label, alt, title)

    @classmethod
    def of(cls, element: Element, elements: Sequence[Element]) -> Hit:
        """`element` as one of `elements` (the observation it was found in)."""
        equals = [e for e in elements if (e.role, e.name) == (element.role, element.name)]
        nth = next((i for i, e in enumerate(equals) if e is element), None)
        if nth is None:  # an equal copy, not the object itself: the first with its box
            nth = next((i for i, e in enumerate(equals) if e.box == element.box), 0)
        told = sum(e.context == element.context for e in equals) == 1
        context = element.context if told else ""
        shown = element.name_source not in UNSHOWN_NAMES
        name, label = element.name, element.accessible_name
        return cls(element.role, name, nth, len(equals), label, context, shown)


@dataclass
class EpisodeOutcome:
    """Rows produced by one episode (`group`: its group columns, on steps and the episode)."""

    ids: dict[str, str]
    group: dict[str, Any] = field(default_factory=dict)
    steps: list[StepRow] = field(default_factory=list)
    grounding: list[GroundingRow] = field(default_factory=list)
    rejects: list[RejectRow] = field(default_factory=list)
    episode: EpisodeRow | None = None
    # for replay verification (verify.py), never written: the episode's recorded traffic
    # (Playwright's HAR, written when its context closed) and, by step index, the element
    # each click landed on (typing's field)
    recording: Path | None = None
    hits: dict[int, Hit] = field(default_factory=dict)
    # task synthesis (annotation.tasks): its candidates, the state its episode ended on (other
    # episodes' tasks must be false on it), and the time synthesis took
    tasks: list[TaskRow] = field(default_factory=list)
    final_state: PageState | None = None
    path_states: list[PageState] = field(default_factory=list)  # synthesis's first replay's
    synth_ms: float = 0.0

    def reject(self, stage: str, reason: RejectReason, detail: str, **where: int) -> None:
        self.rejects.append(
            RejectRow(**self.ids, stage=stage, reason=reason.value, detail=detail[:2000], **where)
        )


def new_outcome(run_id: str, task_id: str, repeat: int, browser_version: str) -> EpisodeOutcome:
    """An episode's outcome before it plays: its ids and group columns, no rows yet. What an
    `Episode` starts from, and all a task that ends before any session (a blocked host,
    robots.txt: pipeline/hosts.py) needs to write its one reject row."""
    ids = {
        "run_id": run_id,
        "schema_version": SCHEMA_VERSION,
        "task_id": task_id,
        "episode_id": digest(run_id, task_id, repeat)[:16],
        "browser_version": browser_version,
    }
    return EpisodeOutcome(ids=ids, group=group_columns(run_id, task_id, repeat))


def image_width_limit(config: PipelineConfig) -> int:
    """Widest screenshot sent to a model (the vlm policy's setting, else 1280)."""
    return getattr(config.policy, "image_max_width", 1280)


async def annotate(
    obs: Observation,
    index: int,
    out: EpisodeOutcome,
    config: PipelineConfig,
    engines: Engines | None,
) -> None:
    """DOM grounding rows, validated; optionally model-written expressions checked by round trip."""
    rows = grounding_rows(
        obs, **out.ids, step_index=index, limit=config.annotation.max_elements_per_step
    )
    stable = {e.index: e.stable for e in obs.elements}
    accepted = []
    for row in rows:
        problem = check_grounding(row, config.validation, stable[row.element_index])
        if problem:
            out.reject(
                "grounding",
                problem[0],
                problem[1],
                step_index=index,
                element_index=row.element_index,
            )
        else:
            accepted.append(row)
    expressions = config.annotation.model_expressions
    if expressions is not None and engines is not None and accepted:
        trips = await model_expressions(
            accepted,
            obs,
            engines,
            expressions,
            profile_for(config),
            image_width_limit(config),
        )
        accepted = trips.rows
        for row, reason, detail in trips.problems:
            out.reject(
                "grounding", reason, detail, step_index=index, element_index=row.element_index
            )
    out.grounding += accepted


def step_row(
    out: EpisodeOutcome,
    provenance: dict[str, str],
    index: int,
    obs: Observation,
    decision: Decision,
    error: str | None,
    act_ms: float,
) -> StepRow:
    """The step row of one observe → decide → act."""
    ids = out.ids
    action, target = decision.action, decision.target
    point = (action.x, action.y) if isinstance(action, Click) else None
    box = None
    if target is not None:
        s, b = obs.device_scale_factor, target.box
        box = (b.x * s, b.y * s, (b.x + b.width) * s, (b.y + b.height) * s)
    return StepRow(
        **ids,
        **provenance,
        **out.group,
        step_index=index,
        url=strip_credentials(obs.url),
        title=obs.title,
        screenshot=ImageData(
            bytes=obs.screenshot, path=f"{ids['episode_id']}-{index:03d}.{obs.image_format}"
        ),
        image_width=obs.image_width,
        image_height=obs.image_height,
        viewport_width=obs.viewport_width,
        viewport_height=obs.viewport_height,
        device_scale_factor=obs.device_scale_factor,
        action_type=action.type,
        action_repr=action_repr(action),
        action_json=action_json(action),
        action_description=describe(obs, decision),
        model_action_description=model_description(decision),
        x_px=point[0] if point else None,
        y_px=point[1] if point else None,
        x_norm=point[0] / obs.image_width if point else None,
        y_norm=point[1] / obs.image_height if point else None,
        text=action.text if isinstance(action, TypeText) else None,
        target_selector=target.selector if target else None,
        target_role=target.role if target else None,
        target_name=target.name if target else None,
        target_bbox_px=box,
        target_hit=target.hit if target else None,
        action_error=error,
        n_elements=len(obs.elements),
        observe_ms=round(obs.observe_ms, 2),
        act_ms=round(act_ms, 2),
        settle_ms=obs.settle_ms,
        observation_stable=obs.stable,
        settle_timed_out=obs.settle_timed_out,
        **_trace_columns(decision.trace),
    )


def _trace_columns(trace: ModelTrace | None) -> dict[str, Any]:
    """The model columns of a step row (all null for policies without a model)."""
    if trace is None:
        return {}
    return {
        "model": trace.model,
        "model_standin": trace.standin,
        "prompt_profile": trace.prompt_profile,
        "prompt_version": trace.prompt_version,
        "engine_roles": trace.roles,
        "raw_output": trace.raw_output,
        "localizer_output": trace.localizer_output,
        "judge_output": trace.judge_output,
        "thought": trace.thought,
        "note": trace.note,
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "engine_latency_ms": trace.latency_ms,
        "engine_attempts": trace.attempts,
    }
