"""What a page may do to an episode, handled on purpose: the URL guard on every request,
dialogs, pop-ups and new tabs, downloads, renderer crashes. Each is recorded in `PageEvents`.

    BrowserContext + Page ─► harden() ─► PageEvents (filled while the episode runs)
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import BrowserContext, Dialog, Page, Request, Route, WebSocketRoute

from datagen.browser.guard import BadUrl, NameNotResolved, UrlGuard

log = logging.getLogger(__name__)
MAX_RECORDED = 50


@dataclass
class PageEvents:
    """What hostile or surprising things happened in one episode's context."""

    blocked: list[str] = field(default_factory=list)
    dialogs: int = 0
    popups: int = 0
    crashed: bool = False

    def block(self, reason: str, url: str) -> None:
        if len(self.blocked) < MAX_RECORDED:
            self.blocked.append(f"{reason}: {url[:300]}")


async def harden(
    context: BrowserContext, page: Page, guard: UrlGuard | None, events: PageEvents
) -> None:
    """Install the guard and the handlers on a fresh context and its page."""
    tasks: set[asyncio.Task[Any]] = set()

    def spawn(coro: Any) -> None:  # keep a reference until done (asyncio holds tasks weakly)
        task = asyncio.ensure_future(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    if guard is not None:

        async def on_request(route: Route, request: Request) -> None:
            try:
                reason = await guard.check(request.url, top_level=_top_level(request))
            except NameNotResolved:  # no block: fails as it would without the guard
                await route.abort("namenotresolved")
                return
            except BadUrl:  # Chromium's URLs parse; should one not, it fails, and is no block
                await route.abort("failed")
                return
            if reason is None:
                await route.continue_()
            else:
                events.block(reason, request.url)
                await route.abort("blockedbyclient")

        async def on_socket(socket: WebSocketRoute) -> None:
            try:
                reason = await guard.check(socket.url, top_level=False)
            except (NameNotResolved, BadUrl) as exc:
                await socket.close(code=1011, reason=str(exc)[:100])
                return
            if reason is None:
                socket.connect_to_server()
            else:
                events.block(reason, socket.url)
                await socket.close(code=1008, reason="blocked by datagen")

        await context.route("**/*", on_request)
        await context.route_web_socket("**/*", on_socket)

    def on_page(other: Page) -> None:
        """Pop-ups and new tabs: the episode stays on its page; the newcomer is closed."""
        if other is not page:
            events.popups += 1
            spawn(other.close())

    def on_dialog(dialog: Dialog) -> None:
        """alert/confirm/prompt are dismissed; "leave this page?" is accepted, so the action that
        navigates goes through. No page can hold an episode with a dialog."""
        events.dialogs += 1
        spawn(dialog.accept() if dialog.type == "beforeunload" else dialog.dismiss())

    def on_crash(_: Page) -> None:
        events.crashed = True
        log.warning("renderer crashed on %s", page.url)

    context.on("page", on_page)
    context.on("dialog", on_dialog)
    page.on("crash", on_crash)


def _top_level(request: Request) -> bool:
    """A navigation of a main frame (a new tab's first request has no frame yet: top level)."""
    if not request.is_navigation_request():
        return False
    try:
        return request.frame.parent_frame is None
    except Exception:
        return True
