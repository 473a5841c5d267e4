"""The one action vocabulary: what a policy decides, the executor performs and a step row keeps.

    policy ─► Action ─► browser/actions.execute()   (real input events)
                     ─► action_repr() / action_json()   (StepRow.action_repr, .action_json)

The model's answers are a different, model-facing schema (`engine/vocabulary.py`, fixed by the
prompt formats); each of them maps onto exactly one action here. Actions carry screenshot
pixels (CSS px × device_scale_factor).
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import Field

from datagen.records.base import Frozen


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

# Positional argument names of each action, in call order: `click(412, 230)`.
SIGNATURES: dict[str, tuple[str, ...]] = {
    "click": ("x", "y"),
    "type": ("text",),
    "key": ("combo",),
    "scroll": ("dx", "dy"),
    "goto": ("url",),
    "back": (),
    "wait": ("seconds",),
    "done": ("answer",),
}


def action_repr(action: Action) -> str:
    """`click(412, 230)`, `type("hello")`: the call syntax of the vocabulary, for people."""
    values = [getattr(action, name) for name in SIGNATURES[action.type]]
    shown = [json.dumps(v) if isinstance(v, str) else f"{v:g}" for v in values]
    return f"{action.type}({', '.join(shown)})"


def action_json(action: Action) -> str:
    """The action as JSON with sorted keys, for programs (`TypeAdapter(Action)` reads it)."""
    return json.dumps(action.model_dump(mode="json"), sort_keys=True)
