"""The executor of the action vocabulary (`records/actions.py`): real input events on a page.

    Session.act() ─► execute(page, action) ─► error text or None

Actions carry screenshot pixels; the executor divides by the device scale factor, because
Playwright's mouse works in CSS pixels. Execution errors are returned, not raised, so that the
next observation carries them (BrowserGym's habit) and the episode goes on.
"""

from __future__ import annotations

import asyncio

from playwright.async_api import Page

from datagen.records import (
    Action,
    Back,
    Click,
    Done,
    Goto,
    Key,
    Scroll,
    TypeText,
    Wait,
    action_repr,
)


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
