"""What the browser saw before a step, and what a policy decided from it.

browser ─► Observation(Element boxes in CSS px) ─► policy ─► Decision(Action, ModelTrace)
"""

from __future__ import annotations

from pydantic import Field

from datagen.records.actions import Action
from datagen.records.base import Frozen


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
    name: str = Field(
        description="what a person sees it called (see `name_source`); empty: no name shown"
    )
    accessible_name: str = Field(
        "",
        description="the accessible name as assistive technology computes it (aria-labelledby, "
        "aria-label, label, value, alt, own text, title), shown on the screen or not",
    )
    text: str = Field(
        "",
        description="own text as the screen draws it (issue 44); a field's value; a drop-down's "
        "shown option",
    )
    placeholder: str = ""
    input_type: str = ""
    selector: str
    box: Box
    hit: bool = Field(description="the box centre hit-tests to this element (not occluded)")
    editable: bool = False
    checked: bool | None = None
    name_source: str = Field(
        "",
        description="where `name` came from: aria-label, labelledby, label (for/wrapping), "
        "content, alt (an image's alt, an icon's SVG title or aria-label), title, "
        "sibling-label (a <label> beside a field or toggle in its row), nearby (other text "
        "beside it in its row), glyph (a CSS pseudo-element's or the text's symbol, e.g. ×), "
        "icon (an image's file name), appearance (an unnamed SVG shape: its colour); "
        "aria-label, alt and title only for an icon-only control; graphic: no name, it draws "
        "an icon; empty: no words (never the HTML name attribute, an id or a class name)",
    )
    placeholder_shown: bool = Field(
        True, description="the placeholder is drawn (the field holds no text)"
    )
    anchor: str = Field(
        "",
        description="text beside an element without words of its own (or only a glyph or "
        "icon), in its own control row, or for a control with no name the text nearest it: "
        "what a relational expression points from",
    )
    anchor_side: str = Field(
        "", description="where `anchor` is drawn from the element: left | right | above | below"
    )
    group_size: int = Field(
        0,
        description="the like controls (same tag and role) of the group it belongs to, when "
        "it or another of them has no words of its own (a grid's cells); 0: none",
    )
    group_index: int = Field(0, description="its place in the group, in reading order (1 on)")
    group_kind: str = Field("", description="grid | row | column | list (how the group is laid)")
    group_anchor: str = Field("", description="the drawn text nearest the group's box")
    group_anchor_side: str = Field(
        "", description="where `group_anchor` is drawn from the group: left | right | above | below"
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
    settle_timed_out: bool = Field(
        False,
        description="the settle gave up at its time limit before the page held still (the "
        "observation is then not `stable`)",
    )


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
    action_description: str | None = Field(
        None,
        description="the model's own words for its action (a click's element description), "
        "verbatim; None when its answer has none",
    )
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
