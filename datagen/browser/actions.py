"""The one action vocabulary: its text form (for prompts and logs), its parser, its executor.

    Action (records.py) ─► action_repr() / parse_action() ─► execute(page, action)

Actions carry screenshot pixels; the executor divides by the device scale factor, because
Playwright's mouse works in CSS pixels. Execution errors are returned, not raised, so that the
next observation carries them (BrowserGym's habit) and the episode goes on.
"""

from __future__ import annotations

import ast
import asyncio
import json

from playwright.async_api import Page
from pydantic import TypeAdapter, ValidationError

from datagen.records import Action, Back, Click, Done, Goto, Key, Scroll, TypeText, Wait

ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)

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

VOCABULARY_HELP = """\
click(x, y)      left click at pixel (x, y) of the screenshot
type("text")     type text into the focused field
key("Enter")     press a key or chord (Control+A, Tab, ArrowDown, ...)
scroll(dx, dy)   scroll by pixels (dy > 0 scrolls down)
goto("url")      open a URL
back()           go back in history
wait(seconds)    wait for the page
done("answer")   finish, with the answer if the task asks for one"""


def action_repr(action: Action) -> str:
    """`click(412, 230)`, `type("hello")`: the call syntax of the vocabulary."""
    values = [getattr(action, name) for name in SIGNATURES[action.type]]
    shown = [json.dumps(v) if isinstance(v, str) else f"{v:g}" for v in values]
    return f"{action.type}({', '.join(shown)})"


def action_json(action: Action) -> str:
    return json.dumps(action.model_dump(mode="json"), sort_keys=True)


def parse_action(text: str) -> Action:
    """Parse `name(args...)` back into an Action; ValueError says what is wrong."""
    try:
        call = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not an action call: {text!r}") from exc
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError(f"not an action call: {text!r}")
    name = call.func.id
    if name not in SIGNATURES:
        raise ValueError(f"unknown action {name!r}; known: {', '.join(SIGNATURES)}")
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except ValueError as exc:
        raise ValueError(f"arguments of {name} must be literals: {text!r}") from exc
    if len(args) > len(SIGNATURES[name]):
        raise ValueError(f"{name} takes {len(SIGNATURES[name])} arguments, got {len(args)}")
    fields = dict(zip(SIGNATURES[name], args, strict=False)) | kwargs
    try:
        return ACTION_ADAPTER.validate_python({"type": name, **fields})
    except ValidationError as exc:
        raise ValueError(f"bad arguments for {name}: {exc.errors()[0]['msg']}") from None


async def execute(page: Page, action: Action, scale: float, timeout_s: float) -> str | None:
    """Perform an action with real input events; returns an error text, or None."""
    try:
        await asyncio.wait_for(_perform(page, action, scale, timeout_s), timeout_s)
    except TimeoutError:
        return f"timeout: {action_repr(action)} took over {timeout_s:g}s"
    except Exception as exc:  # a failed action is data for the next step, not a crash
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


async def _perform(page: Page, action: Action, scale: float, timeout_s: float) -> None:
    match action:
        case Click(x=x, y=y):
            await page.mouse.click(x / scale, y / scale)
        case TypeText(text=text):
            await page.keyboard.type(text)
        case Key(combo=combo):
            await page.keyboard.press(combo)
        case Scroll(dx=dx, dy=dy):
            size = page.viewport_size or {"width": 800, "height": 600}
            await page.mouse.move(size["width"] / 2, size["height"] / 2)
            await page.mouse.wheel(dx / scale, dy / scale)
        case Goto(url=url):
            await page.goto(url, timeout=timeout_s * 1000)
        case Back():
            await page.go_back(timeout=timeout_s * 1000)
        case Wait(seconds=seconds):
            await asyncio.sleep(min(seconds, timeout_s))
        case Done():
            pass
