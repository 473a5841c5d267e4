"""`annotation:` and `validation:`: what rows a step yields besides the step itself (grounding
rows, model-written referring expressions), what an episode gets after it ends (a relabeled
instruction), and which of them are kept.

    annotation: ─► AnnotationConfig ─► datagen.annotate;  validation: ─► ValidationConfig ─► datagen.validate
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, field_validator, model_validator

from datagen.config.base import NEUTRAL, Section
from datagen.config.policy import RoleConfig


class ModelExpressionsConfig(Section):
    """Referring expressions written by the model for DOM elements, kept only if they round-trip."""

    per_step: int = Field(2, ge=1, le=100, description="elements per screenshot to describe")
    writer: RoleConfig = Field(
        default_factory=lambda: RoleConfig(temperature=0.0, max_tokens=64, share=0.3)
    )


class RelabelConfig(RoleConfig):
    """Hindsight relabeling: after an episode, the `relabel` role writes the instruction the
    trajectory actually carried out (from a few of its screenshots and its actions in words),
    and a check accepts or rejects it. Its own role: endpoint, model, sampling, budget share."""

    temperature: float = Field(0.0, ge=0, le=2, description="sampling temperature (always sent)")
    max_tokens: int = Field(512, ge=1, le=1_048_576, description="output budget (always sent)")
    share: float = Field(
        0.3,
        gt=0,
        le=1,
        description="share of the worker's in-flight budget this role may use",
        json_schema_extra=NEUTRAL,
    )
    check: Literal["judge", "reread", "none"] = Field(
        "judge",
        description="who accepts the relabel: the judge role (policy.judge if the vlm policy "
        "has one, else `judge` below), the relabel role re-reading it against the final "
        "screenshot, or none (every parsed relabel is accepted)",
    )
    images: int = Field(
        3,
        ge=2,
        le=16,
        description="screenshots sent: the first, the final one, and evenly spaced ones between "
        "(keep within the server's --limit-mm-per-prompt)",
    )
    skip_solved: bool = Field(
        True,
        description="episodes whose task check passed keep the task's instruction, unasked",
    )
    judge: RoleConfig | None = Field(
        None,
        description="the judge role's settings for check: judge when the policy has no judge "
        "(null: temperature 0, 256 tokens, share 0.3)",
    )

    def judge_role(self) -> RoleConfig:
        """The judge's settings when the policy brings none."""
        return self.judge or RoleConfig(temperature=0.0, max_tokens=256, share=0.3)


class VerifyConfig(Section):
    """Replay verification of solved episodes: on a browser context of the same worker, wiped
    before each replay to be as new as a fresh one, the episode's actions are replayed from its start URL, leaving steps out, to find the ones
    its task needs (`needed` on steps). Only those carry the task's instruction in exports."""

    max_replays: int = Field(
        12,
        ge=2,
        le=200,
        description="replays per solved episode at most (each: a wiped context, the start URL, "
        "some of its actions, the check); past it, the steps no replay decided have needed = "
        "null and the episode is reduced (no task-labelled samples). One more replay, of the "
        "minimal path found, takes its screenshots for the task's samples",
    )
    live: list[str] = Field(
        default_factory=list,
        description="hosts (name, or name:port) that replays may reach live, form posts and "
        "all: only for sites the operator owns, where a repeated order, post or sign-up does "
        "no harm. Default none: replays are answered from the episode's own recorded traffic "
        "or refused, and reach no site",
    )

    @field_validator("live")
    @classmethod
    def _hosts_only(cls, value: list[str]) -> list[str]:
        for host in value:
            if not host or any(c in host for c in "/?#@ ") or "://" in host:
                raise ValueError(
                    f"annotation.verify.live: {host!r} is not a host; fix: give host names "
                    "or name:port, e.g. shop.example.com or 127.0.0.1:8080 (no scheme, no path)"
                )
        return [h.lower() for h in value]


TaskKind = Literal["state", "value", "url", "count", "appeared", "text", "disappeared"]
TASK_KINDS: tuple[TaskKind, ...] = get_args(TaskKind)


class TasksConfig(Section):
    """Task synthesis (issue 43): each verified (minimal) episode's needed steps are replayed,
    observed, and what they changed (a URL, an element that appeared or went, a control's
    state or value, a message) becomes a task whose check a program decides, kept only once
    replays prove it: false at the start, true after the demonstration, twice, and false on
    the shard's other episodes from the same start that did not act as it did. Written to
    the `tasks` table; `datagen export --format tasks` makes a task list of them."""

    per_episode: int = Field(
        3, ge=1, le=50, description="tasks kept per verified episode at most (most telling first)"
    )
    kinds: list[TaskKind] = Field(
        default_factory=lambda: list(TASK_KINDS),
        description="effect kinds that may become tasks: state (a control checked or not), "
        "value (a drop-down's choice), url (path or query), count (a control that shows "
        "another number: 'Cart 0' to 'Cart 1'), appeared / disappeared (an element, by "
        "role and name), text (a line of text that became visible)",
    )


class AnnotationConfig(Section):
    """Rows written for each step's elements."""

    grounding: bool = Field(True, description="write grounding rows for each step's elements")
    max_elements_per_step: int = Field(
        60, ge=1, le=10_000, description="cap on grounding rows per screenshot"
    )
    model_expressions: ModelExpressionsConfig | None = Field(
        None,
        description="ask the model for referring expressions and check them with the localizer",
    )
    verify: VerifyConfig | None = Field(
        default_factory=VerifyConfig,
        description="replay each solved episode to find the steps its task needs (null: off; "
        "then no sample carries the task's instruction)",
    )
    tasks: TasksConfig | None = Field(
        None,
        description="synthesise tasks from verified episodes' effects, proven by sealed "
        "replays (needs annotation.verify; null: off)",
    )
    relabel: RelabelConfig | None = Field(
        None,
        description="after each episode, ask the model which instruction the trajectory carried "
        "out (hindsight relabeling), with any policy",
    )

    @model_validator(mode="after")
    def _tasks_need_verify(self) -> AnnotationConfig:
        # synthesis reads the needed steps verification proves and replays on its recording
        if self.tasks is not None and self.verify is None:
            raise ValueError(
                "annotation.tasks needs annotation.verify (task synthesis proves its tasks by "
                "replaying the steps verification found needed); fix: remove `verify: null` "
                "from annotation (or set annotation.verify: {}), or set annotation.tasks: null"
            )
        return self


class ValidationConfig(Section):
    """Checks a grounding row must pass to be kept."""

    min_box_px: float = Field(
        4.0, ge=0, le=10_000, description="grounding boxes smaller than this are rejected"
    )
    require_hit_test: bool = Field(
        True, description="reject grounding rows whose element is occluded"
    )
