"""The independent checker's page (bench/taskcheck.py, issue 43): our own static server for
the bundled sites, a fresh context on a task's start with its cookie banner answered, the
recorded actions replayed with plain Playwright, and a check read on the live page as a
trainer's reward would read it. No datagen import.

A check: `url_contains` in the page's URL, `text_present` in the body's text, `element`: an
element of that role (Playwright's role engine) that is visible and called `name` as drawn
(its text, its label's, its row's) or by its accessible name, in the state asked.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from playwright.async_api import Browser, Page
from playwright.async_api import Error as PlaywrightError

SITES = Path(__file__).resolve().parents[1] / "datagen" / "sites"
CHROMIUM = "/usr/bin/chromium"
SETTLE_MS = 500  # after a load and after each action: the bundled sites answer at once
READS = 3  # a read of the page cut short by a navigation is made again, once it has loaded
T = TypeVar("T")
REJECT = re.compile(r"^(essential only|reject( all)?|decline|necessary only)$", re.IGNORECASE)


@contextmanager
def served(root: Path) -> Iterator[str]:
    """A static file server over `root` on 127.0.0.1; yields its base URL."""
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


# What the page shows of every element of one role: is it drawn (and enabled), what is it called (its own
# text as drawn, aria-label, title, value, its <label>s, aria-labelledby, the text of the row
# or label around it), and is it on (checked, aria-checked, aria-pressed).
DESCRIBE = """(els) => els.map((el) => {
  const box = el.getBoundingClientRect();
  const style = getComputedStyle(el);
  // a disabled control is none to act on: datagen's `element` kind reads it as absent
  const shown = box.width > 0 && box.height > 0 && style.visibility !== 'hidden' &&
    !el.disabled && el.getAttribute('aria-disabled') !== 'true';
  const flat = (t) => (t || '').replace(/\\s+/g, ' ').trim();
  const names = [el.innerText, el.getAttribute('aria-label'), el.getAttribute('title'),
    el.value, el.getAttribute('alt')];
  for (const l of el.labels || []) {
    // a label around its control: its own words, without the control's (a select's options)
    const own = l.cloneNode(true);
    own.querySelectorAll('select, input, textarea, button').forEach((c) => c.remove());
    names.push(l.innerText, own.textContent);
  }
  for (const id of (el.getAttribute('aria-labelledby') || '').split(/\\s+/)) {
    const l = id && document.getElementById(id); if (l) names.push(l.innerText);
  }
  const row = el.closest('li, label, tr, [role=row], [role=listitem]');
  if (row) names.push(row.innerText);
  const option = el.tagName === 'SELECT' && el.selectedOptions[0];
  const on = el.checked === true || el.getAttribute('aria-checked') === 'true' ||
    el.getAttribute('aria-pressed') === 'true';
  const off = el.checked === false || el.getAttribute('aria-checked') === 'false' ||
    el.getAttribute('aria-pressed') === 'false';
  return { shown, names: names.map(flat).filter(Boolean),
           value: option ? flat(option.textContent) : flat(el.value || el.innerText),
           on, off };
})"""


async def holds(page: Page, check: dict[str, Any]) -> bool:
    """Is the check true on the live page (every part of it)?"""
    if "url_contains" in check and check["url_contains"] not in page.url:
        return False
    if "text_present" in check:
        body = await page.evaluate("() => document.body ? document.body.innerText : ''")
        if check["text_present"] not in body:
            return False
    if "element" in check:
        spec = check["element"]
        seen = await page.get_by_role(spec["role"]).evaluate_all(DESCRIBE)
        same = [e for e in seen if e["shown"] and spec["name"] in e["names"]]
        if "value" in spec:
            same = [e for e in same if e["value"] == spec["value"]]
        state = spec.get("state", "present")
        if state == "absent":
            return not same
        if state == "checked":
            return any(e["on"] for e in same)
        if state == "unchecked":
            return any(e["off"] for e in same)
        return bool(same)
    if not {"url_contains", "text_present", "element"} & set(check):
        raise ValueError(f"a check this checker cannot read: {check}")
    return True


async def settle(page: Page) -> None:
    with contextlib.suppress(Exception):  # a page still loading is read as it is
        await page.wait_for_load_state("load", timeout=10_000)
    await page.wait_for_timeout(SETTLE_MS)


async def start(browser: Browser, url: str) -> Page:
    """A fresh context on `url`, its cookie banner answered with the essential choice."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    await page.goto(url)
    await settle(page)
    banner = page.locator("[aria-label*=cookie i], [id*=cookie i], [id*=consent i]")
    buttons = banner.get_by_role("button", name=REJECT)
    if await buttons.count() and await buttons.first.is_visible():
        await buttons.first.click()
        await settle(page)
    return page


async def do(page: Page, action: dict[str, Any]) -> None:
    """The recorded action, with plain Playwright (no wait after it)."""
    kind = action["type"]
    if kind == "click":
        await page.mouse.click(action["x"], action["y"])
    elif kind == "type":
        await page.keyboard.type(action["text"])
    elif kind == "key":
        await page.keyboard.press(action["combo"])
    elif kind == "scroll":
        await page.mouse.move(640, 400)
        await page.mouse.wheel(action.get("dx", 0), action.get("dy", 0))
    elif kind == "wait":
        await page.wait_for_timeout(1000 * action.get("seconds", 0.5))
    elif kind in ("done",):
        return
    else:
        raise ValueError(f"an action this checker does not replay: {action}")


async def act(page: Page, action: dict[str, Any]) -> None:
    """The recorded action, then the page settles (a done: nothing)."""
    if action["type"] == "done":
        return
    await do(page, action)
    await settle(page)


async def steady(page: Page, read: Callable[[], Awaitable[T]]) -> T:
    """`read()` of the page, made again once the page has loaded where a navigation that an
    action started after the settle cut it short (a loaded machine commits it late)."""
    for attempt in range(1, READS + 1):
        try:
            return await read()
        except PlaywrightError as exc:
            if "context was destroyed" not in str(exc) or attempt == READS:
                raise
            await settle(page)
    raise AssertionError("unreachable")
