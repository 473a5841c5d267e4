"""The output tables' rows and the reject reason codes; the one definition of the output schema.

    pipeline ─► StepRow / EpisodeRow / GroundingRow / RejectRow ─► sink (Parquet)

`sink/schema.py` derives the Arrow schemas and `schemas/*.schema.json` from these models.
Boxes in rows are `[x1, y1, x2, y2]`; every `*_px` column is screenshot pixels and every
`*_norm` column the same divided by the image size, in [0, 1].
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from datagen.records.base import Frozen


class RejectReason(StrEnum):
    """Reason codes of the `rejects` table: one column, first-class failure categories."""

    NAVIGATION_FAILED = "navigation_failed"
    BROWSER_ERROR = "browser_error"
    ENGINE_UNAVAILABLE = "engine_unavailable"
    ENGINE_REJECTED = "engine_rejected"
    ENGINE_ERROR = "engine_error"  # answers that are not a completion (cut off, HTML, too big)
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
    RELABEL_REJECTED = "relabel_rejected"  # the check said the trajectory does not carry it out
    CHECK_PASSES_AT_START = "check_passes_at_start"  # solved before any action: no label in it
    NOT_REPRODUCED = "not_reproduced"  # a solved episode's replay did not pass its check again
    HOST_BLOCKED = "host_blocked"  # its host is on the run's blocklist (run.hosts.block_after)
    ROBOTS_DISALLOWED = "robots_disallowed"  # the host's robots.txt disallows the start URL
    BOT_WALL = "bot_wall"  # a bot wall, CAPTCHA or login wall (browser/walls.py): never a step
    STRAGGLER = "straggler"  # far slower than its peers (run.straggler_s, straggler_factor)


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

    group_id: str = Field(
        description="the run's episodes of one task (run.repeats of them): the first 16 hex of "
        "sha256(run_id:task_id); GRPO-style trainers normalise rewards per group"
    )
    sample_index: int = Field(description="which of the group's episodes: 0 … run.repeats-1")
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
    action_description: str = Field(
        description='the action in words, from its DOM target: Click the second "Submit" '
        'button, Type "Buy milk" into the "New todo" field, Scroll down (docs/output.md)'
    )
    model_action_description: str | None = Field(
        None,
        description="the vlm policy's own words for its action (a click's element description, "
        "verbatim); null for other policies and answers without one",
    )
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
        description="screenshot and element boxes agree and the page had settled (false: some "
        "boxes moved while it was taken, their grounding rows rejected as unstable_box; or "
        "the settle gave up at its limit: settle_timed_out)",
    )
    settle_timed_out: bool | None = Field(
        None,
        description="the settle before the observation gave up at its limit "
        "(browser.settle_timeout_ms, the first of an episode browser.first_settle_timeout_ms) "
        "before the page held still: it may show the page before it rendered",
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
    path_screenshot: ImageData | None = Field(
        None,
        description="a needed step of a verified episode: the screen before its action on a "
        "replay of the needed steps alone (the minimal path, observed); task-labelled samples "
        "show it, so their history and screen agree. null: not a needed step",
    )
    path_action_description: str | None = Field(
        None, description="the action in words on that screen (as action_description)"
    )
    path_url: str | None = Field(
        None, description="the page's URL on that screen (as url): the path's, not the episode's"
    )
    needed: bool | None = Field(
        None,
        description="verified by replay on a fresh context (annotation.verify): true: the "
        "task needs this step (the check failed without it; the final done of a solved episode "
        "is needed); false: the check passed with it left out; null: not decided (not solved, "
        "verification off, the replay did not reproduce the success, or the search stopped "
        "before a replay left it out: a reduced episode)",
    )


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
        "episode's scope: it ends on its last page in scope) | not_reproduced (its check "
        "passed, but a replay of its steps did not pass it again: no label carries its task) "
        "| failed_task (the task's fail check passed: it ended unsuccessfully there)"
    )
    stop_note: str | None = Field(
        None,
        description="why the episode stopped: the note of the policy's last decision (explore: "
        "'check passed', 'nothing new: …'; scripted: 'scripted'), or max_steps, fail check "
        "passed, left scope",
    )
    answer: str
    seed: int = Field(description="the policy's seed: from run.seed, the task and sample_index")
    group_id: str = Field(
        description="the run's episodes of one task (run.repeats of them): the first 16 hex of "
        "sha256(run_id:task_id); GRPO-style trainers normalise rewards per group"
    )
    sample_index: int = Field(description="which of the group's episodes: 0 … run.repeats-1")
    duration_s: float
    final_screenshot: ImageData
    blocked_requests: list[str] = Field(
        default_factory=list, description="what the URL guard stopped, with why"
    )
    dialogs: int = Field(0, description="alert/confirm/prompt/beforeunload dialogs dismissed")
    popups: int = Field(0, description="pop-up windows and new tabs closed")
    consent_action: str | None = Field(
        None,
        description="the cookie-consent dialog answered before the first observation "
        "(browser.consent): <outcome>:<framework>, outcome rejected | accepted | closed | left | "
        "no_button | failed, framework onetrust | cookiebot | didomi | quantcast | usercentrics "
        "| trustarc | osano | sourcepoint | text (found by its buttons' words); null: none found",
    )
    viewport_width: int
    viewport_height: int
    device_scale_factor: float
    # hindsight relabeling (annotation.relabel): `instruction` above stays the task's
    relabeled_instruction: str | None = Field(
        None,
        description="the instruction the relabel role says the trajectory carried out, whether "
        "the check accepted it or not; null: not asked, or no usable answer",
    )
    instruction_source: str = Field(
        "task",
        description="which instruction the episode's actions carry out: relabel (the relabeled "
        "one, accepted by its check) | task (the task's: no relabel ran, it failed, or the "
        "check rejected it)",
    )
    relabel_accepted: bool | None = Field(
        None, description="the check's verdict on relabeled_instruction; null: no verdict"
    )
    relabel_model: str | None = Field(None, description="served model name of the relabel role")
    relabel_standin: bool | None = Field(
        None, description="true: the relabel or its check came from datagen's stand-in"
    )
    relabel_output: str | None = Field(None, description="the relabel role's raw answer")
    relabel_check_output: str | None = Field(
        None, description="the check's raw answer (judge role, or the relabel role re-reading)"
    )
    relabel_prompt_version: str | None = Field(
        None, description="prompt profile/version of the relabel and its check, e.g. hindsight/1"
    )
    # replay verification of solved episodes (annotation.verify)
    verification: str | None = Field(
        None,
        description="minimal (replayed: every step marked needed was shown needed, and its "
        "path replayed once more, observed: task-labelled samples come only from these) | "
        "reduced (a smaller set of its steps passed, but the search stopped before it proved "
        "every one needed: max_replays or time; steps nothing decided have needed = null; "
        "step-level samples only) | not_reproduced (no replay passed the check: time, "
        "randomness, a request the recording could not answer; its steps carry no task label) "
        "| null (not solved, or verification off)",
    )
    verified_steps: int | None = Field(
        None, description="steps with needed = true (the verified trajectory, its done included)"
    )
    verify_replays: int | None = Field(None, description="replays the verification took")
    verify_ms: float | None = Field(None, description="wall time of those replays")
    verify_note: str | None = Field(
        None,
        description="why verification is reduced or not_reproduced: the time budget ran out "
        "(run.episode_timeout_s holds the episode and its replays), a replay diverged (a "
        "click on another element, a state-changing request the episode never made), …",
    )
    verify_network: list[str] = Field(
        default_factory=list,
        description="what the replays sent to the network, 'METHOD host count': only hosts "
        "in annotation.verify.live; the rest was answered from the episode's own recorded "
        "traffic or refused (verify_aborted)",
    )
    verify_aborted: list[str] = Field(
        default_factory=list,
        description="requests of replays that were refused, 'METHOD host count': never sent "
        "(a state-changing request the episode never made, or not in that order; a GET it "
        "never made; what a worker or a closing page sent past the routes; WebSockets, 'WS')",
    )
    verify_requests: list[str] = Field(
        default_factory=list,
        description="every request the replays made, 'fate kind METHOD host count': fate "
        "answered (from the episode's recording) | refused | live (annotation.verify.live); "
        "kind as Chromium names it (document, fetch, xhr, script, ping, websocket, …) or "
        "unrouted (a connection no route saw: workers, beacons at close; met the sealed proxy)",
    )
    # task synthesis (annotation.tasks): what run-wide specificity reads of every episode
    final_state_json: str | None = Field(
        None,
        description="the final page as a check reads it (URL, body text, visible elements: "
        "records/state.py PageState as JSON), with annotation.tasks on: a synthesised task of "
        "another shard from the same start must be false on it (schema 1.8)",
    )
    acted_json: str | None = Field(
        None,
        description="the elements its steps acted on, as a JSON list of [role, name] pairs, "
        "with annotation.tasks on: an episode that acted on a task's last demonstrated element "
        "may have made its effect, and is no evidence against it (schema 1.8)",
    )


class GroundingRow(RowBase):
    """A UI-grounding annotation: an element of a step's screenshot and a referring expression.

    The screenshot is the `steps` row with the same (episode_id, step_index).
    """

    step_index: int
    element_index: int
    referring_expression: str
    expression_kind: str = Field(
        "",
        description="what singles the element out: name | label | placeholder | value (what "
        "a filled field holds, the option a drop-down shows) | nearby | icon (its glyph, icon "
        "word, or an icon-only control's accessible name) | appearance (an unnamed shape by its "
        "colour) | role (a control with no name: its role and state alone) | relation (the "
        "text beside it) | context (nearest heading) | position (ordinal among same-reading "
        "ones); field-name (the HTML name attribute) only in older data",
    )
    role: str
    tag: str
    name: str
    name_source: str = Field(
        "",
        description="where `name` came from: labelledby | label | sibling-label | content | "
        "nearby | glyph | icon | appearance | aria-label, alt, title (an icon-only control); "
        "graphic or empty: the element shows no name (see docs/output.md, Grounding names)",
    )
    accessible_name: str = Field(
        "",
        description="the accessible name as assistive technology computes it, shown on the "
        "screen or not (expressions quote only what is shown; this column keeps the rest)",
    )
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

    stage: str = Field(
        description="task | step | grounding | episode | relabel, verify (the episode row is "
        "kept: its relabel was rejected, or its success did not reproduce on replay)"
    )
    reason: str
    detail: str
    step_index: int | None = None
    element_index: int | None = None
