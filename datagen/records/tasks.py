"""Tasks: what a source reads from a task list, normalised, and how a task is judged solved.

source readers ─► TaskSpec ─► pipeline (one episode per task × repeat)
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from datagen.records.actions import Action
from datagen.records.base import Frozen
from datagen.records.state import ElementCheck, PageState, element_holds


class SuccessCheck(Frozen):
    """How to tell that a task is solved, evaluated on the live page. Every given key must pass."""

    js: str | None = Field(
        None,
        description="JS expression evaluated in the page, true = solved; a promise is awaited "
        "(5 s at most); anything but true or false is a check_error",
    )
    url_contains: str | None = Field(None, description="substring the page URL must contain")
    text_present: str | None = Field(None, description="substring of document.body.innerText")
    element: ElementCheck | None = Field(
        None,
        description="an element shown (or not) on the screen: role, name as drawn, and "
        "present | absent | checked | unchecked, optionally the value it shows; decided the "
        "same way on a live page and on a recorded observation",
    )

    @model_validator(mode="after")
    def _says_something(self) -> SuccessCheck:
        # an empty check holds on every page: the task would be "solved" before its first step
        if all(v is None for v in (self.js, self.url_contains, self.text_present, self.element)):
            raise ValueError(
                "an empty check holds on every page; give one of url_contains, text_present, "
                "element, js (or leave the check out: the task then has none)"
            )
        return self

    @model_serializer(mode="wrap")
    def _omit_no_element(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when unset: run ids hash every task's dump, and task lists written before
        # the element kind existed must keep theirs.
        data: dict[str, Any] = handler(self)
        if self.element is None:
            data.pop("element", None)
        return data

    def holds_on(self, state: PageState) -> bool | None:
        """The check decided on a recorded page state, without a browser; None when it has a
        `js` part (no offline meaning)."""
        if self.js is not None:
            return None
        if self.url_contains is not None and self.url_contains not in state.url:
            return False
        if self.text_present is not None and self.text_present not in state.text:
            return False
        return self.element is None or element_holds(self.element, state)


class TaskSpec(Frozen):
    """One task from a task list, normalised from whatever format it came in."""

    id: str
    start_url: str
    instruction: str
    check: SuccessCheck | None = None
    fail: SuccessCheck | None = Field(
        None,
        description="how to tell that the task has ended unsuccessfully (same shape as check: "
        "every given key must pass): a wrong answer's page, a 'Start again' cover. Once it "
        "passes, the episode ends (status failed_task) and no later step is recorded",
    )
    max_steps: int | None = Field(None, ge=1, le=500)
    source: str = Field("", description="reader that produced it: native, webvoyager, urls, sites")
    site: str = ""
    actions: tuple[Action, ...] = Field((), description="steps for the scripted policy")
    reference: tuple[str, ...] = Field(
        (),
        description="the source's own account of the task's steps, as recorded (Mind2Web's "
        "action_reprs: '[button]  Search -> CLICK'); not replayed",
    )

    provenance: dict[str, str] = Field(
        default_factory=dict,
        description="where a synthesised task came from (datagen export --format tasks): run, "
        "episode, source task, demonstration steps, effect, its proof",
    )

    @model_serializer(mode="wrap")
    def _omit_empty_reference(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when empty: the run id hashes every task's dump, and task lists that
        # have no reference (or no fail check) must keep the run ids they had before the
        # field existed.
        data: dict[str, Any] = handler(self)
        if not self.reference:
            data.pop("reference", None)
        if not self.provenance:
            data.pop("provenance", None)
        if self.fail is None:
            data.pop("fail", None)
        return data
