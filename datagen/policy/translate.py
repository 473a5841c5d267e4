"""The model's answers as actions: the one translation from the model-facing action schema to
the action vocabulary the executor runs and the step rows keep.

    NavStep.action (engine/profiles.py) ─► to_action(answer, Screen) ─► Action (records)

The model-facing schema is fixed by the prompt formats (engine-spec §2.6: `element` beside a
click's point, a scroll `direction`, `answer{content}`), so it is not generated from the
records; instead every answer type maps onto exactly one action type here. mypy checks that
`to_action` covers every answer type, and tests/unit/test_vlm_policy.py that every action
type is reached. A click's point is in the profile's coordinate frame of the image the model
saw; the action carries screenshot pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from datagen.engine.profiles import (
    NavAction,
    NavAnswer,
    NavBack,
    NavClick,
    NavGoto,
    NavKey,
    NavScroll,
    NavType,
    NavWait,
    PromptProfile,
    SentImage,
)
from datagen.records import Action, Back, Click, Done, Goto, Key, Scroll, TypeText, Wait

SCROLL_FRACTION = 0.6  # of the screenshot's width or height: the model names only a direction
WAIT_S = 1.0  # the model's `wait` carries no duration


class OffScreen(ValueError):
    """The model's point lies outside the frame of the image it was shown."""


@dataclass(frozen=True)
class Screen:
    """What an answer is read against: the profile's frame, the image the model saw, and the
    screenshot's size in pixels (the unit of every action)."""

    profile: PromptProfile
    image: SentImage
    width: int
    height: int

    def pixels(self, x: int, y: int) -> tuple[float, float]:
        """Screenshot pixels of a point in the profile's frame; OffScreen outside it."""
        pixels = self.profile.to_pixels(x, y, self.image, self.width, self.height)
        if pixels is None:
            raise OffScreen(
                f"point ({x}, {y}) outside the {self.profile.coords} frame of a "
                f"{self.image.width}x{self.image.height} image"
            )
        return pixels


def to_action(answer: NavAction, screen: Screen) -> Action:
    """The action an answer asks for, in screenshot pixels; OffScreen for a point off the image."""
    match answer:
        case NavClick(x=x, y=y):
            px, py = screen.pixels(x, y)
            return Click(x=round(px, 1), y=round(py, 1))
        case NavType(text=text):
            return TypeText(text=text)
        case NavKey(key=key):
            return Key(combo=key)
        case NavScroll(direction=direction):
            dx = {"left": -screen.width, "right": screen.width}.get(direction, 0)
            dy = {"up": -screen.height, "down": screen.height}.get(direction, 0)
            return Scroll(dx=dx * SCROLL_FRACTION, dy=dy * SCROLL_FRACTION)
        case NavGoto(url=url):
            return Goto(url=url)
        case NavBack():
            return Back()
        case NavWait():
            return Wait(seconds=WAIT_S)
        case NavAnswer(content=content):
            return Done(answer=content)
        case _:
            assert_never(answer)
