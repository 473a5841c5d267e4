"""Typed records that cross stage boundaries, and the output rows derived from them.

Stage packages (source, browser, policy, annotate, validate, sink) talk to each other only
through these frozen models. The output tables' Arrow schemas and the JSON Schemas in
`schemas/` are generated from the `*Row` models here (see `sink/schema.py`), so the output
schema is defined exactly once.

Coordinate conventions:
- `Box` and `Element.box` are CSS pixels in viewport space (what `getBoundingClientRect` says).
- Actions and every `*_px` column are **screenshot pixels** (CSS px × device_scale_factor),
  what a pure-vision agent sees; `*_norm` columns are the same divided by the image size, in [0, 1].
- Boxes in rows are `[x1, y1, x2, y2]`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class Frozen(BaseModel):
    """Base of every record: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- tasks


class SuccessCheck(Frozen):
    """How to tell that a task is solved, evaluated on the live page. Every given key must pass."""

    js: str | None = Field(
        None,
        description="JS expression evaluated in the page, true = solved; a promise is awaited "
        "(5 s at most); anything but true or false is a check_error",
    )
    url_contains: str | None = Field(None, description="substring the page URL must contain")
    text_present: str | None = Field(None, description="substring of document.body.innerText")


# --------------------------------------------------------------------------- actions
# One vocabulary for the prompt, the parser and the executor (browser/actions.py).


class Click(Frozen):
    """Left click at screenshot-pixel coordinates."""

    type: Literal["click"] = "click"
    x: float
    y: float


class TypeText(Frozen):
    """Type text into whatever has focus, key by key."""

    type: Literal["type"] = "type"
    text: str


class Key(Frozen):
    """Press a key or chord, Playwright spelling (e.g. ``Enter``, ``Control+A``)."""

    type: Literal["key"] = "key"
    combo: str


class Scroll(Frozen):
    """Mouse-wheel scroll by (dx, dy) screenshot pixels at the viewport centre."""

    type: Literal["scroll"] = "scroll"
    dx: float = 0.0
    dy: float = 0.0


class Goto(Frozen):
    """Navigate to a URL."""

    type: Literal["goto"] = "goto"
    url: str


class Back(Frozen):
    """History back."""

    type: Literal["back"] = "back"


class Wait(Frozen):
    """Do nothing for a while."""

    type: Literal["wait"] = "wait"
    seconds: float = 0.5


class Done(Frozen):
    """End the episode, optionally with an answer."""

    type: Literal["done"] = "done"
    answer: str = ""


Action = Annotated[
    Click | TypeText | Key | Scroll | Goto | Back | Wait | Done, Field(discriminator="type")
]


class TaskSpec(Frozen):
    """One task from a task list, normalised from whatever format it came in."""

    id: str
    start_url: str
    instruction: str
    check: SuccessCheck | None = None
    max_steps: int | None = Field(None, ge=1, le=500)
    source: str = Field("", description="reader that produced it: native, webvoyager, urls, sites")
    site: str = ""
    actions: tuple[Action, ...] = Field((), description="steps for the scripted policy")


# --------------------------------------------------------------------------- observations


class Box(Frozen):
    """Axis-aligned box in CSS px, viewport space."""

    x: float
    y: float
    width: float
    height: float

    @property
    def centre(self) -> tuple[float, float]:
        return (self.x + self.width / 2, self.y + self.height / 2)


class Element(Frozen):
    """A visible interactive node of the live DOM at the moment of a screenshot."""

    index: int
    tag: str
    role: str
    name: str = Field(description="accessible name")
    text: str = ""
    placeholder: str = ""
    input_type: str = ""
    selector: str
    box: Box
    hit: bool = Field(description="the box centre hit-tests to this element (not occluded)")
    editable: bool = False
    checked: bool | None = None
    name_source: str = Field(
        "",
        description="where `name` came from: aria-label, labelledby, label, content, alt, "
        "title, placeholder, nearby (visible text beside an unlabeled field), field-name, "
        "appearance (an unnamed SVG shape: its colour)",
    )
    context: str = Field(
        "", description="nearest visible heading, legend or labelled region around the element"
    )
    href: str = Field("", description="absolute URL a link leads to; empty for other elements")
    stable: bool = Field(
        True, description="the box was the same before and after the screenshot was taken"
    )


class Observation(Frozen):
    """What the browser showed before a step: the screenshot and the DOM elements on it."""

    url: str
    title: str
    screenshot: bytes
    image_format: str
    image_width: int
    image_height: int
    viewport_width: int
    viewport_height: int
    device_scale_factor: float
    elements: tuple[Element, ...]
    observe_ms: float = 0.0
    settle_ms: float = Field(0.0, description="time waited for the page to hold still first")
    stable: bool = Field(
        True, description="every element's box was the same before and after the screenshot"
    )
    retakes: int = Field(0, description="observations retaken because the page moved")


class ModelTrace(Frozen):
    """What the model side did for one step: every role's raw output, usage and latency."""

    model: str
    standin: bool = Field(description="answered by datagen's stand-in, not a model")
    prompt_profile: str
    prompt_version: str
    roles: str = Field(description="roles called, in order, e.g. policy+localizer")
    raw_output: str = Field(description="the policy role's raw text")
    localizer_output: str | None = None
    judge_output: str | None = None
    thought: str = ""
    note: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    attempts: int = 1
    sent_width: int = Field(0, description="size of the image the model saw")
    sent_height: int = 0


class Decision(Frozen):
    """A policy's choice for one step."""

    action: Action
    target: Element | None = None
    note: str = ""
    trace: ModelTrace | None = None


# --------------------------------------------------------------------------- output rows


class RejectReason(StrEnum):
    """Reason codes of the `rejects` table: one column, first-class failure categories."""

    NAVIGATION_FAILED = "navigation_failed"
    BROWSER_ERROR = "browser_error"
    ENGINE_UNAVAILABLE = "engine_unavailable"
    ENGINE_REJECTED = "engine_rejected"
    MODEL_PARSE_ERROR = "model_parse_error"
    MODEL_OFF_SCREEN = "model_off_screen"
    ROUND_TRIP_MISS = "round_trip_miss"
    TIMEOUT_EPISODE = "timeout_episode"
    TIMEOUT_STEP = "timeout_step"
    BLOCKED_URL = "blocked_url"
    DNS_FAILED = "dns_failed"  # the start URL's host name has no address (not a block)
    UNREACHABLE = "unreachable"  # its host does not take connections (refused, unreachable)
    BAD_URL = "bad_url"  # the start URL does not parse (a port out of range, an unclosed `[`)
    RENDERER_CRASH = "renderer_crash"
    PAGE_MEMORY = "page_memory"  # the page held more than browser.page_memory_mb
    TASK_ERROR = "task_error"
    CHECK_ERROR = "check_error"
    NO_STEPS = "no_steps"
    SCREENSHOT_SIZE_MISMATCH = "screenshot_size_mismatch"
    ACTION_OFF_SCREEN = "action_off_screen"
    OCCLUDED = "occluded"
    BOX_OUTSIDE_IMAGE = "box_outside_image"
    BOX_TOO_SMALL = "box_too_small"
    NO_REFERRING_EXPRESSION = "no_referring_expression"
    AMBIGUOUS_EXPRESSION = "ambiguous_expression"
    UNSTABLE_BOX = "unstable_box"
    OFF_SCOPE = "off_scope"
    ERROR_PAGE = "error_page"
    BLANK_PAGE = "blank_page"


class ImageData(Frozen):
    """An image as Hugging Face `datasets` stores it: `struct<bytes, path>`."""

    bytes: bytes
    path: str | None = None


BoxPx = tuple[float, float, float, float]


class RowBase(Frozen):
    """Columns on every row of every table."""

    run_id: str
    schema_version: str
    task_id: str
    episode_id: str
    browser_version: str


class Provenance(Frozen):
    """Environment versions, repeated on rows so that any row can be replayed on its own."""

    playwright_version: str
    datagen_version: str
    policy: str


class StepRow(Provenance, RowBase):
    """One step of an episode: the observation before the action, and the action."""

    step_index: int
    url: str
    title: str
    screenshot: ImageData
    image_width: int
    image_height: int
    viewport_width: int
    viewport_height: int
    device_scale_factor: float
    action_type: str
    action_repr: str = Field(description="the action in the vocabulary's call syntax")
    action_json: str
    x_px: float | None = None
    y_px: float | None = None
    x_norm: float | None = None
    y_norm: float | None = None
    text: str | None = None
    target_selector: str | None = None
    target_role: str | None = None
    target_name: str | None = None
    target_bbox_px: BoxPx | None = None
    target_hit: bool | None = Field(None, description="target's centre hit-tested to it")
    action_error: str | None = None
    n_elements: int
    observe_ms: float
    act_ms: float
    settle_ms: float | None = Field(None, description="time waited for the page to hold still")
    observation_stable: bool | None = Field(
        None,
        description="screenshot and element boxes agree (false: some boxes moved while it was "
        "taken; their grounding rows were rejected as unstable_box)",
    )
    model: str | None = Field(None, description="served model name (vlm policy)")
    model_standin: bool | None = Field(
        None, description="true: the engine was datagen's stand-in, not a model"
    )
    prompt_profile: str | None = None
    prompt_version: str | None = None
    engine_roles: str | None = None
    raw_output: str | None = Field(None, description="the policy role's raw answer")
    localizer_output: str | None = None
    judge_output: str | None = None
    thought: str | None = None
    note: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    engine_latency_ms: float | None = None
    engine_attempts: int | None = None


class EpisodeRow(Provenance, RowBase):
    """One episode: the task, how it ended, and the final screen."""

    source: str
    site: str
    instruction: str
    start_url: str
    final_url: str
    n_steps: int
    success: bool | None = Field(description="the task's check on the final page; null: no check")
    status: str = Field(
        description="solved | done | max_steps | left_scope (its actions kept leaving the "
        "episode's scope: it ends on its last page in scope)"
    )
    answer: str
    seed: int
    duration_s: float
    final_screenshot: ImageData
    blocked_requests: list[str] = Field(
        default_factory=list, description="what the URL guard stopped, with why"
    )
    dialogs: int = Field(0, description="alert/confirm/prompt/beforeunload dialogs dismissed")
    popups: int = Field(0, description="pop-up windows and new tabs closed")
    viewport_width: int
    viewport_height: int
    device_scale_factor: float


class GroundingRow(RowBase):
    """A UI-grounding annotation: an element of a step's screenshot and a referring expression.

    The screenshot is the `steps` row with the same (episode_id, step_index).
    """

    step_index: int
    element_index: int
    referring_expression: str
    expression_kind: str = Field(
        "",
        description="what singles the element out: name | label | placeholder | nearby | "
        "field-name | appearance (an unnamed shape by its colour) | context (nearest heading) | "
        "position (ordinal among same-named ones)",
    )
    role: str
    tag: str
    name: str
    text: str
    selector: str
    bbox_px: BoxPx
    bbox_norm: BoxPx
    bbox_css: BoxPx = Field(description="the box in CSS px (bbox_px / device_scale_factor)")
    point_px: tuple[float, float]
    image_width: int
    image_height: int
    hit_test: bool
    url: str
    model_expression: str | None = Field(
        None, description="model-written expression, kept only if it round-trips"
    )
    round_trip_point_px: tuple[float, float] | None = Field(
        None, description="where the localizer put the model's expression"
    )
    round_trip_ok: bool | None = Field(
        None, description="that point is inside bbox_px; null: not asked"
    )


class RejectRow(RowBase):
    """Something that did not become data, and why."""

    stage: str = Field(description="task | step | grounding | episode")
    reason: str
    detail: str
    step_index: int | None = None
    element_index: int | None = None


class ShardResult(Frozen):
    """What a worker reports for a finished shard (the rows themselves went to the sink)."""

    shard: int
    tasks: int
    episodes: int
    steps: int
    grounding: int
    rejects: int
    solved: int
    reject_reasons: dict[str, int]
    seconds: float
    peak_sessions: int = Field(0, description="most episodes this shard had in flight at once")
    browser_memory_mb: float = Field(
        0.0, description="the worker's browser memory (USS) when the shard ended"
    )
    browser_episodes: int = Field(0, description="episodes this browser has run since it started")
    tasks_with_episodes: int = Field(0, description="tasks of the shard with at least one episode")


class Resumed(Frozen):
    """What earlier runs into an output committed, from the markers of the shards a run skips.
    Each task × repeat ends once: as an episode row or as a reject."""

    shards: int = 0
    ended: int = Field(0, description="tasks × repeats of those shards: all of them ended")
    episodes: int = Field(0, description="of them, those that became episode rows")

    @property
    def rejected(self) -> int:
        """Those that ended as a reject."""
        return self.ended - self.episodes
