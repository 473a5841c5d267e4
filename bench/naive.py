"""The naive baseline of `bench/e2e.py --part naive`, written apart from datagen: one
synchronous loop, one episode at a time, as an AgentLab or BrowserGym user runs an agent.

    task ─► new context ─► [screenshot ─► policy request ─► (click: localizer request) ─► act
                             ─► the task's check] × max_steps ─► close ─► next task

Only Playwright (its sync API) and httpx: no `datagen` import, so nothing it measures is shared
with the thing it is compared with. Its prompts are datagen's `holo2_norm1000` profile (the vlm
policy's defaults: 3 history images, the localizer for clicks, no judge), copied here as text
(docs/engine.md: the prompt formats are fixed and byte-identical for the stand-in and a real
server), so the model work per step is the same as the pipeline's;
tests/unit/test_bench_naive.py fails if datagen's prompts drift from this copy.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Page, sync_playwright

WIDTH, HEIGHT = 1280, 800
HISTORY_IMAGES = 3  # screenshots sent with each policy request; older ones become a placeholder
SCROLL = {"up": (0, -400), "down": (0, 400), "left": (-400, 0), "right": (400, 0)}
IMAGE_PLACEHOLDER = "[Image omitted by context cleaning]"
FRAME = (
    "x and y are integers from 0 to 1000, relative to the image width and height "
    "(0,0 is the top-left corner)"
)
GUIDELINES = """You operate a web browser for a user, one action at a time, by looking at screenshots.
Act like a careful person: read the page, think about what brings you closer to the task, then act.
Rules: click elements by describing them and giving their position; type only after a field has focus;
dismiss cookie banners and pop-ups that are in the way; do not log in or create accounts unless the task
asks; scroll at most a few times in a row; keep facts you will need later in `note` (it is the only memory
you keep between steps); when the task is done, or the answer is known, use the `answer` action."""
# The JSON Schemas of the answers (holo2_norm1000 for a 1280×800 image), as sent: a copy, kept
# as data beside this file (tests/unit/test_bench_naive.py checks it against datagen's).
SCHEMAS = json.loads((Path(__file__).with_name("naive_schemas.json")).read_text())
NAV_SCHEMA_JSON: str = SCHEMAS["navigation"]
POINT_SCHEMA_JSON: str = SCHEMAS["point"]


def navigation_messages(
    task: str, step: int, note: str, previous: list[str], images: list[str | None]
) -> list[dict[str, Any]]:
    """System (guidelines, frame, output format) and one user turn: the state as JSON, then
    the screenshots (data URLs) oldest first; None stands for one no longer sent."""
    system = (
        f"{GUIDELINES}\nCoordinates: {FRAME}.\n<output_format>\n{NAV_SCHEMA_JSON}\n</output_format>"
    )
    state = json.dumps(
        {"task": task, "step": step, "note": note, "previous_actions": previous[-20:]}
    )
    parts: list[dict[str, Any]] = [{"type": "text", "text": state}]
    for image in images:
        if image is None:
            parts.append({"type": "text", "text": IMAGE_PLACEHOLDER})
        else:
            parts.append({"type": "image_url", "image_url": {"url": image}})
    return [{"role": "system", "content": system}, {"role": "user", "content": parts}]


def localization_messages(image: str, target: str) -> list[dict[str, Any]]:
    """One user turn: the screenshot, then where to click, as JSON."""
    text = (
        "Localize an element on the GUI image according to the provided target and output a click position.\n"
        f" * You must output a valid JSON following the format: {POINT_SCHEMA_JSON}\n"
        f" * {FRAME}.\n Your target is:\n{target}"
    )
    return [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image}},
                {"type": "text", "text": text},
            ],
        }
    ]


@dataclass(frozen=True)
class NaiveTask:
    """A task as plain data: what to do, where to start (a resolved URL) and the page check
    that says it is solved (a JS expression), if any."""

    instruction: str
    url: str
    check_js: str | None = None


@dataclass
class NaiveResult:
    """What the naive loop did in its time: episodes ended, steps, model calls by kind with
    their (prompt, completion) tokens, and errors (counted, never raised)."""

    seconds: float = 0.0
    episodes: int = 0
    steps: int = 0
    usage: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    errors: int = 0
    engine_s: float = 0.0  # time spent waiting for the model


class StandInClient:
    """The model server's OpenAI chat route, one request at a time (httpx, sync)."""

    def __init__(self, url: str, result: NaiveResult) -> None:
        self.http = httpx.Client(base_url=url, timeout=600)
        self.model = str(self.http.get("/v1/models").json()["data"][0]["id"])
        self.result = result

    def ask(self, kind: str, messages: list[dict[str, Any]], schema: str, temperature: float,
            max_tokens: int) -> dict[str, Any]:  # fmt: skip
        """The answer, parsed; raises ValueError on an answer that is not a JSON object."""
        body = {
            "model": self.model, "messages": messages, "temperature": temperature,
            "max_tokens": max_tokens, "structured_outputs": {"json": json.loads(schema)},
        }  # fmt: skip
        began = time.perf_counter()
        reply = self.http.post("/v1/chat/completions", json=body).raise_for_status().json()
        self.result.engine_s += time.perf_counter() - began
        usage = reply.get("usage") or {}
        self.result.usage.setdefault(kind, []).append(
            (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
        )
        answer = json.loads(reply["choices"][0]["message"]["content"])
        if not isinstance(answer, dict):
            raise ValueError(f"not a JSON object: {answer!r}")
        return answer

    def close(self) -> None:
        self.http.close()


def screenshot(page: Page) -> str:
    """The viewport as a JPEG data URL (1280×800 fits the model as it is: no resize)."""
    data = page.screenshot(type="jpeg", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(data).decode()


def solved(page: Page, js: str | None) -> bool:
    if not js:
        return False
    try:
        return bool(page.evaluate(f"() => Boolean({js})"))
    except Exception:
        return False


def act(page: Page, client: StandInClient, action: dict[str, Any], image: str) -> None:
    """Do one action; a click asks the localizer where. Raises what Playwright raises."""
    kind = action.get("type")
    if kind == "click":
        where = localization_messages(image, str(action.get("element", "")))
        point = client.ask("localizer", where, POINT_SCHEMA_JSON, 0.0, 64)
        page.mouse.click(int(point["x"]) / 1000 * WIDTH, int(point["y"]) / 1000 * HEIGHT)
    elif kind == "type":
        page.keyboard.type(str(action.get("text", "")))
    elif kind == "key":
        page.keyboard.press(str(action.get("key", "")))
    elif kind == "scroll":
        page.mouse.wheel(*SCROLL[str(action.get("direction", "down"))])
    elif kind == "back":
        page.go_back(timeout=5000)
    # goto (off-site) and wait: nothing to do
    page.wait_for_load_state("load")


def episode(page: Page, client: StandInClient, task: NaiveTask, max_steps: int) -> None:
    result = client.result
    page.goto(task.url, wait_until="load")
    images: list[str | None] = []
    previous: list[str] = []
    note = ""
    for step in range(max_steps):
        if solved(page, task.check_js):
            return
        image = screenshot(page)
        images.append(image)
        for old in range(len(images) - HISTORY_IMAGES):
            images[old] = None
        messages = navigation_messages(task.instruction, step, note, previous, images)
        try:
            answer = client.ask("navigation", messages, NAV_SCHEMA_JSON, 0.7, 512)
            action = answer["action"]
            note = str(answer.get("note", ""))
        except (ValueError, KeyError, TypeError):  # an unreadable answer ends the episode
            result.errors += 1
            return
        finally:
            result.steps += 1
        previous.append(json.dumps({k: v for k, v in action.items() if k not in ("x", "y")}))
        if action.get("type") == "answer":
            return
        try:
            act(page, client, action, image)
        except Exception:  # a failed action is the next observation's business (BrowserGym)
            result.errors += 1


def run_naive(
    engine_url: str, tasks: list[NaiveTask], max_steps: int, seconds: float,
    executable: str | None = None, args: list[str] | None = None,
) -> NaiveResult:  # fmt: skip
    """Episodes one after another (`tasks` in turn) until `seconds` have passed; the episode
    running then is finished and counted. `executable`/`args`: the Chromium and its switches."""
    result = NaiveResult()
    client = StandInClient(engine_url, result)
    try:
        with sync_playwright() as pw:
            browser: Browser = pw.chromium.launch(
                executable_path=executable, args=args or [], headless=True
            )
            began = time.perf_counter()
            index = 0
            while time.perf_counter() - began < seconds:
                task = tasks[index % len(tasks)]
                index += 1
                context = browser.new_context(
                    viewport={"width": WIDTH, "height": HEIGHT}, device_scale_factor=1
                )
                try:
                    episode(context.new_page(), client, task, max_steps)
                except Exception:  # a failed episode is counted, never stops the loop
                    result.errors += 1
                finally:
                    context.close()
                result.episodes += 1
            result.seconds = time.perf_counter() - began
            browser.close()
    finally:
        client.close()
    return result
