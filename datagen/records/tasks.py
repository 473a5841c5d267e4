"""Tasks: what a source reads from a task list, normalised, and how a task is judged solved.

source readers ─► TaskSpec ─► pipeline (one episode per task × repeat)
"""

from __future__ import annotations

from pydantic import Field

from datagen.records.actions import Action
from datagen.records.base import Frozen


class SuccessCheck(Frozen):
    """How to tell that a task is solved, evaluated on the live page. Every given key must pass."""

    js: str | None = Field(
        None,
        description="JS expression evaluated in the page, true = solved; a promise is awaited "
        "(5 s at most); anything but true or false is a check_error",
    )
    url_contains: str | None = Field(None, description="substring the page URL must contain")
    text_present: str | None = Field(None, description="substring of document.body.innerText")


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
