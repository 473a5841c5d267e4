"""The naive baseline of `bench/e2e.py --part naive`: one episode at a time, as AgentLab and
BrowserGym users run an agent: one Playwright browser, one episode after another, each step
waiting for the model before the next.

    task ─► new context ─► [screenshot ─► policy request ─► (click: localizer request) ─► act
                             ─► the task's check] × max_steps ─► close ─► next task

Plain Playwright and httpx against the same stand-in; the prompts come from datagen's prompt
builder (`datagen.engine.profiles`, the vlm policy's defaults: 3 history images, the localizer
for clicks, no judge), so the model work per step is the same as the pipeline's. Nothing of
datagen's pipeline is used (no BrowserHost, Session, observer, policy, Dask or sink).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from playwright.async_api import Page, async_playwright

from datagen.browser.launch import find_executable, launch_options
from datagen.engine.profiles import (
    PROFILES,
    ModelOutputError,
    NavAnswer,
    NavBack,
    NavClick,
    NavKey,
    NavScroll,
    NavStep,
    NavType,
    Point,
    SentImage,
    encode_screenshot,
    parse_output,
)
from datagen.records import TaskSpec

PROFILE = PROFILES["holo2_norm1000"]
HISTORY_IMAGES = 3
WIDTH, HEIGHT = 1280, 800
SCROLL = {"up": (0, -400), "down": (0, 400), "left": (-400, 0), "right": (400, 0)}


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

    def count(self, kind: str, reply: dict[str, Any]) -> None:
        usage = reply.get("usage") or {}
        got = (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
        self.usage.setdefault(kind, []).append(got)


class NaiveAgent:
    """One episode at a time on one browser; see the module docstring."""

    def __init__(self, engine_url: str, model: str, result: NaiveResult) -> None:
        self.url = engine_url + "/v1/chat/completions"
        self.model = model
        self.result = result
        self.http = httpx.AsyncClient(timeout=600)

    async def ask(self, kind: str, messages: list[dict[str, Any]], schema: dict[str, Any],
                  temperature: float, max_tokens: int) -> str:  # fmt: skip
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "structured_outputs": {"json": schema},
        }
        began = time.perf_counter()
        reply = (await self.http.post(self.url, json=body)).raise_for_status().json()
        self.result.engine_s += time.perf_counter() - began
        self.result.count(kind, reply)
        return str(reply["choices"][0]["message"]["content"])

    async def episode(self, page: Page, task: TaskSpec, url: str, max_steps: int) -> None:
        await page.goto(url, wait_until="load")
        images: list[SentImage | None] = []
        previous: list[str] = []
        note = ""
        for step in range(min(task.max_steps or max_steps, max_steps)):
            if task.check is not None and task.check.js and await self.solved(page, task.check.js):
                return
            shot = await page.screenshot(type="jpeg", quality=80)
            image = encode_screenshot(shot, "jpeg", WIDTH, HEIGHT, WIDTH)
            images.append(image)
            for old in range(len(images) - HISTORY_IMAGES):  # older ones: a placeholder
                images[old] = None
            messages = PROFILE.navigation_messages(task.instruction, step, note, previous, images)
            text = await self.ask(
                "navigation", messages, PROFILE.navigation_schema(image), 0.7, 512
            )
            self.result.steps += 1
            try:
                answer: NavStep = parse_output(text, NavStep)
            except ModelOutputError:
                self.result.errors += 1
                return
            note = answer.note
            previous.append(json.dumps(answer.action.model_dump(exclude={"x", "y"})))
            if isinstance(answer.action, NavAnswer):
                return
            await self.act(page, answer, image)

    async def act(self, page: Page, answer: NavStep, image: SentImage) -> None:
        action = answer.action
        try:
            if isinstance(action, NavClick):
                where = PROFILE.localization_messages(image, action.element)
                text = await self.ask("localizer", where, PROFILE.point_schema(image), 0.0, 64)
                point: Point = parse_output(text, Point)
                await page.mouse.click(point.x / 1000 * WIDTH, point.y / 1000 * HEIGHT)
            elif isinstance(action, NavType):
                await page.keyboard.type(action.text)
            elif isinstance(action, NavKey):
                await page.keyboard.press(action.key)
            elif isinstance(action, NavScroll):
                await page.mouse.wheel(*SCROLL[action.direction])
            elif isinstance(action, NavBack):
                await page.go_back(timeout=5000)
            # goto (off-site) and wait: nothing to do
            await page.wait_for_load_state("load")
        except (
            Exception
        ):  # an action that fails is the next observation's business, as in BrowserGym
            self.result.errors += 1

    async def solved(self, page: Page, js: str) -> bool:
        try:
            return bool(await page.evaluate(f"() => Boolean({js})"))
        except Exception:
            return False


async def run_naive(
    engine_url: str, tasks: list[tuple[TaskSpec, str]], max_steps: int, seconds: float
) -> NaiveResult:
    """Episodes one after another (`tasks`: each with its resolved start URL, in turn) until
    `seconds` have passed; the episode running then is finished and counted."""
    result = NaiveResult()
    models = httpx.get(engine_url + "/v1/models", timeout=10).json()
    agent = NaiveAgent(engine_url, models["data"][0]["id"], result)
    options = launch_options(find_executable(None, None), True, [])
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(**options)  # type: ignore[arg-type]
        began = time.perf_counter()
        index = 0
        while time.perf_counter() - began < seconds:
            task, url = tasks[index % len(tasks)]
            index += 1
            context = await browser.new_context(
                viewport={"width": WIDTH, "height": HEIGHT}, device_scale_factor=1
            )
            try:
                await agent.episode(await context.new_page(), task, url, max_steps)
            except Exception:  # a failed episode is counted, never stops the loop
                result.errors += 1
            finally:
                await context.close()
            result.episodes += 1
        result.seconds = time.perf_counter() - began
        await browser.close()
    await agent.http.aclose()
    return result
