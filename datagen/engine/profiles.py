"""Prompt profiles: named, versioned ways of asking a Holo-family model, and of reading its
coordinates back. The profile name and version are stored on every step row.

    Observation ─► encode_screenshot() ─► SentImage
    profile.navigation_messages(...) + navigation_schema()  ─► engine ─► NavStep
        NavStep.action ─► policy/translate.to_action() ─► Action (records/actions.py)
    profile.localization_messages(...) + point_schema()     ─► engine ─► Point ─► to_pixels()

`holo2_norm1000` (default): integers in [0, 1000] of the image as sent, origin top-left (Holo2,
Holo3 and the holo-nano harness; Nemotron tiling distorts aspect, so a normalised frame is
the well-defined one). `holo15_abs`: absolute pixels of the image as sent (Holo1.5).
Structured output goes as `structured_outputs: {"json": schema}` (vLLM ignores `guided_json`
since 0.12) and is validated again here.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

IMAGE_PLACEHOLDER = "[Image omitted by context cleaning]"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# The answer models below carry no docstrings on purpose: pydantic would put them in the JSON
# Schemas that the prompts carry, and the prompts must stay byte-identical (the stand-in and a
# real server get the same ones). Field descriptions are part of those schemas.


class NavClick(Strict):
    type: Literal["click"]
    element: str = Field(description="the element to click, described so a person could find it")
    x: int
    y: int


class NavType(Strict):
    type: Literal["type"]
    text: str = Field(description="text to type into the focused field")


class NavKey(Strict):
    type: Literal["key"]
    key: str = Field(description="key or chord, e.g. Enter, Control+A")


class NavScroll(Strict):
    type: Literal["scroll"]
    direction: Literal["up", "down", "left", "right"]


class NavGoto(Strict):
    type: Literal["goto"]
    url: str


class NavBack(Strict):
    type: Literal["back"]


class NavWait(Strict):
    type: Literal["wait"]


class NavAnswer(Strict):
    type: Literal["answer"]
    content: str = Field(description="the answer, or a summary of what was done")


NavAction = Annotated[
    NavClick | NavType | NavKey | NavScroll | NavGoto | NavBack | NavWait | NavAnswer,
    Field(discriminator="type"),
]


class NavStep(Strict):
    """One navigation step: think, keep a note (the only memory across steps), act."""

    thought: str
    note: str
    action: NavAction


class Point(Strict):
    x: int
    y: int


class Expression(Strict):
    expression: str = Field(description="a short referring expression for the element")


class Verdict(Strict):
    verdict: Literal["SUCCESS", "NOT SUCCESS"]
    reason: str


class ModelOutputError(ValueError):
    """The model's text is not valid against the schema we asked for (`raw`: that text, when
    the caller keeps it, e.g. for a relabel's trace)."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw


def parse_output(text: str, model: type[Strict]) -> Any:
    """Validate a model's JSON answer on our side too (the server may have ignored the schema)."""
    try:
        return TypeAdapter(model).validate_json(text)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(map(str, problem["loc"]))
        raise ModelOutputError(f"{where}: {problem['msg']}" if where else problem["msg"]) from None


@dataclass(frozen=True)
class SentImage:
    """A screenshot as sent to the model."""

    data_url: str
    width: int
    height: int


def encode_screenshot(
    data: bytes, image_format: str, width: int, height: int, max_width: int
) -> SentImage:
    """Reuse the screenshot bytes when they fit; else resize on the worker (JPEG q90), so the
    server's single-threaded preprocessing does not pay for it."""
    if width <= max_width and image_format in ("jpeg", "png"):
        return SentImage(
            f"data:image/{image_format};base64,{base64.b64encode(data).decode()}", width, height
        )
    with Image.open(io.BytesIO(data)) as image:
        scale = min(1.0, max_width / image.width)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        out = io.BytesIO()
        image.convert("RGB").resize(size, Image.Resampling.LANCZOS).save(out, "JPEG", quality=90)
    return SentImage(
        f"data:image/jpeg;base64,{base64.b64encode(out.getvalue()).decode()}", size[0], size[1]
    )


GUIDELINES = """You operate a web browser for a user, one action at a time, by looking at screenshots.
Act like a careful person: read the page, think about what brings you closer to the task, then act.
Rules: click elements by describing them and giving their position; type only after a field has focus;
dismiss cookie banners and pop-ups that are in the way; do not log in or create accounts unless the task
asks; scroll at most a few times in a row; keep facts you will need later in `note` (it is the only memory
you keep between steps); when the task is done, or the answer is known, use the `answer` action."""


@dataclass(frozen=True)
class PromptProfile:
    """A versioned prompt family and its coordinate frame."""

    name: str
    version: str
    coords: Literal["norm1000", "pixels"]

    # ------------------------------------------------------------------ coordinates

    def bounds(self, image: SentImage) -> tuple[int, int]:
        """Largest valid x and y in this profile's frame."""
        return (1000, 1000) if self.coords == "norm1000" else (image.width - 1, image.height - 1)

    def frame_text(self, image: SentImage) -> str:
        if self.coords == "norm1000":
            return "x and y are integers from 0 to 1000, relative to the image width and height (0,0 is the top-left corner)"
        return f"x and y are pixels of the {image.width}x{image.height} image (0,0 is the top-left corner)"

    def to_pixels(
        self, x: int, y: int, image: SentImage, shot_w: int, shot_h: int
    ) -> tuple[float, float] | None:
        """Screenshot pixels of a model point; None when it lies outside the image."""
        max_x, max_y = self.bounds(image)
        if not (0 <= x <= max_x and 0 <= y <= max_y):
            return None
        if self.coords == "norm1000":
            px, py = x / 1000 * shot_w, y / 1000 * shot_h
        else:
            px, py = x * shot_w / image.width, y * shot_h / image.height
        return min(px, shot_w - 1), min(py, shot_h - 1)

    def from_box(
        self, box_px: tuple[float, float, float, float], shot_w: int, shot_h: int, image: SentImage
    ) -> list[int]:
        """A screenshot-pixel box in this profile's frame (to show the model an element)."""
        sx, sy = (
            (1000 / shot_w, 1000 / shot_h)
            if self.coords == "norm1000"
            else (image.width / shot_w, image.height / shot_h)
        )
        x1, y1, x2, y2 = box_px
        return [round(x1 * sx), round(y1 * sy), round(x2 * sx), round(y2 * sy)]

    # ------------------------------------------------------------------ schemas

    def navigation_schema(self, image: SentImage) -> dict[str, Any]:
        schema = NavStep.model_json_schema()
        max_x, max_y = self.bounds(image)
        for definition in schema.get("$defs", {}).values():
            props = definition.get("properties", {})
            if "x" in props and "y" in props:
                props["x"].update(minimum=0, maximum=max_x)
                props["y"].update(minimum=0, maximum=max_y)
        return schema

    def point_schema(self, image: SentImage) -> dict[str, Any]:
        max_x, max_y = self.bounds(image)
        schema = Point.model_json_schema()
        schema["properties"]["x"].update(minimum=0, maximum=max_x)
        schema["properties"]["y"].update(minimum=0, maximum=max_y)
        return schema

    # ------------------------------------------------------------------ messages

    def navigation_messages(
        self, task: str, step: int, note: str, previous: list[str], images: list[SentImage | None]
    ) -> list[dict[str, Any]]:
        """System (guidelines + output format) and one user turn: state, then the screenshots
        in order; `None` stands for an older one no longer sent (a text placeholder)."""
        current = images[-1]
        assert current is not None, "the current screenshot is always sent"
        system = f"{GUIDELINES}\nCoordinates: {self.frame_text(current)}.\n<output_format>\n{json.dumps(self.navigation_schema(current))}\n</output_format>"
        state = json.dumps(
            {"task": task, "step": step, "note": note, "previous_actions": previous[-20:]}
        )
        parts: list[dict[str, Any]] = [{"type": "text", "text": state}]
        for image in images:
            if image is None:
                parts.append({"type": "text", "text": IMAGE_PLACEHOLDER})
            else:
                parts.append({"type": "image_url", "image_url": {"url": image.data_url}})
        return [{"role": "system", "content": system}, {"role": "user", "content": parts}]

    def localization_messages(self, image: SentImage, target: str) -> list[dict[str, Any]]:
        text = (
            "Localize an element on the GUI image according to the provided target and output a click position.\n"
            f" * You must output a valid JSON following the format: {json.dumps(self.point_schema(image))}\n"
            f" * {self.frame_text(image)}.\n Your target is:\n{target}"
        )
        return _image_turn(image, text)

    def expression_messages(self, image: SentImage, box: list[int]) -> list[dict[str, Any]]:
        text = (
            f"Look at the UI element inside the box {box} ({self.frame_text(image)}; the box is [x1, y1, x2, y2]).\n"
            "Write one short referring expression that lets a person find exactly this element on the screen, "
            f"as JSON: {json.dumps(Expression.model_json_schema())}"
        )
        return _image_turn(image, text)

    def judge_messages(self, task: str, answer: str, image: SentImage) -> list[dict[str, Any]]:
        text = (
            f"A web agent was given this task: {task}\nIt finished with this answer: {answer}\n"
            "Looking at the final screen, did it succeed? Answer as JSON: "
            f"{json.dumps(Verdict.model_json_schema())}"
        )
        return _image_turn(image, text)


def _image_turn(image: SentImage, text: str) -> list[dict[str, Any]]:
    """One user turn: the screenshot, then the instruction (the order H's cookbooks use)."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image.data_url}},
                {"type": "text", "text": text},
            ],
        }
    ]


PROFILES = {
    "holo2_norm1000": PromptProfile("holo2_norm1000", "1", "norm1000"),
    "holo15_abs": PromptProfile("holo15_abs", "1", "pixels"),
}
