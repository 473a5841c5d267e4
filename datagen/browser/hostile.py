"""What a page may do to an episode, handled on purpose: dialogs, pop-ups and new tabs,
downloads, renderer crashes, navigation floods. Each is recorded in `PageEvents`, as are the
requests the egress proxy refused (egress.py; the session records them).

    BrowserContext + Page ─► harden() ─► PageEvents (filled while the episode runs)

A navigation flood (a loop on `history.pushState`, `location.hash`, in many frames at once)
is first held by Chromium's own limit of 200 navigations per frame in 10 s, which the browser
host keeps on (`host.FLOODING_PROTECTION_OFF`). A page whose frames still navigate more than
FLOOD_NAVIGATIONS times in FLOOD_WINDOW_S (40 frames at their limit, say), or that opens more
than FLOOD_POPUPS windows in that time, is stopped: its renderer is crashed (`stop`), the
episode ends as a reject (`events.flooded` says why), the browser and the shard go on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import BrowserContext, Dialog, Frame, Page

from datagen.config.urls import strip_credentials

log = logging.getLogger(__name__)
MAX_RECORDED = 50
# No page needs 400 navigations in 10 s; each costs the browser process a commit and
# Playwright an event. Chromium's own limit lets one frame make 200 in 10 s: two frames at it.
FLOOD_NAVIGATIONS = 400
# Each window is a page for the browser to create and for us to close: a page opening them in
# a loop (hundreds a second) starves every other page of the browser.
FLOOD_POPUPS = 20
FLOOD_WINDOW_S = 10.0


@dataclass
class PageEvents:
    """What hostile or surprising things happened in one episode's context."""

    blocked: list[str] = field(default_factory=list)
    dialogs: int = 0
    popups: int = 0
    crashed: bool = False
    flooded: str = ""  # why the page was stopped for a navigation flood ("": it was not)

    def block(self, reason: str, url: str) -> None:
        if len(self.blocked) < MAX_RECORDED:
            self.blocked.append(strip_credentials(f"{reason}: {url[:300]}"))  # kept in rows


def harden(
    context: BrowserContext,
    page: Page,
    events: PageEvents,
    stop: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Install the handlers on a fresh context and its page. `stop` ends the page alone (its
    renderer), for a page that floods its navigations."""
    tasks: set[asyncio.Task[Any]] = set()

    def spawn(coro: Any) -> None:  # keep a reference until done (asyncio holds tasks weakly)
        task = asyncio.ensure_future(coro)
        tasks.add(task)
        task.add_done_callback(_settled)

    def _settled(task: asyncio.Task[Any]) -> None:
        """Its outcome read: dismissing a dialog or closing a pop-up of a page that closed
        meanwhile fails, which is no news (unread, asyncio printed each as a traceback)."""
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("page handler failed: %s", task.exception())

    def flooded(what: str) -> None:
        """Stop a page that floods (once): its renderer crashed, the episode a reject."""
        if not events.flooded:
            events.flooded = f"{what}; datagen stopped its renderer"
            log.warning("%s: %s", events.flooded, strip_credentials(page.url[:300]))
            if stop is not None:
                spawn(stop())

    popups, navigations = Rate(FLOOD_POPUPS), Rate(FLOOD_NAVIGATIONS)

    def on_page(other: Page) -> None:
        """Pop-ups and new tabs: the episode stays on its page; the newcomer is closed."""
        if other is not page:
            events.popups += 1
            spawn(other.close())
            if popups.over():
                flooded(f"the page opened over {popups.limit} windows in {FLOOD_WINDOW_S:g} s")

    def on_navigated(_: Frame) -> None:
        if navigations.over():
            flooded(
                f"the page's frames navigated over {navigations.limit} times in "
                f"{FLOOD_WINDOW_S:g} s (a history or location flood)"
            )

    def on_dialog(dialog: Dialog) -> None:
        """alert/confirm/prompt are dismissed; "leave this page?" is accepted, so the action that
        navigates goes through. No page can hold an episode with a dialog."""
        events.dialogs += 1
        spawn(dialog.accept() if dialog.type == "beforeunload" else dialog.dismiss())

    def on_crash(_: Page) -> None:
        events.crashed = True
        if not events.flooded:  # stopped on purpose: that was said when it was stopped
            log.warning("renderer crashed on %s", strip_credentials(page.url[:300]))

    context.on("page", on_page)
    context.on("dialog", on_dialog)
    page.on("crash", on_crash)
    page.on("framenavigated", on_navigated)


class Rate:
    """Events within the last FLOOD_WINDOW_S; `over()` counts one and says if the count is
    above `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._times: deque[float] = deque()

    def over(self) -> bool:
        now = time.monotonic()
        self._times.append(now)
        while now - self._times[0] > FLOOD_WINDOW_S:
            self._times.popleft()
        return len(self._times) > self.limit
