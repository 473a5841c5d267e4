"""Cookie-consent dialogs, answered before an episode's first observation (`browser.consent`).

    start page loaded ─► settle ─► consent.js in each frame ─► (framework, outcome, button)
                      ─► a real click on the button ─► the dialog gone? ─► consent_action

A consent dialog covers the app: left alone, every grounding row under it is `occluded` and a
policy's first steps go to the dialog, not the task. `reject` (the default) answers with the
framework's own "reject all"/"only necessary" button; `accept` with its "accept all"; `leave`
only records that a dialog was there. Frameworks known by their ids and classes: OneTrust,
Cookiebot, Didomi, Quantcast Choice, Usercentrics, TrustArc, Osano, Sourcepoint (a TCF CMP in
an iframe); any other dialog or banner about cookies by its buttons' words ("Reject all",
"Essential only", "Accept all", ...). Open shadow roots (Usercentrics) and iframes are searched
too; a closed shadow root is not reachable and its dialog stays.

The result, on the episode row: `<outcome>:<framework>` with outcome `rejected`, `accepted`,
`closed` (reject asked, the dialog had no reject button: its close button, which CMPs treat
as no consent), `left` (mode leave), `no_button` (no button for the mode: the dialog stays),
`failed` (clicked, but the dialog did not go away); None: no dialog was found.

The episode's scope is fixed by the start URL's load, not by where a consent answer leads: an
answer that navigates the page to another origin (a "Reject all" that is a link to the CMP's
own site, even one `browser.allow` lets through) ends the task as an `off_scope` reject
(NavigationFailed), so no step is ever recorded there. An answer that reloads the page, or
moves within its origin, is the site's own doing.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from playwright.async_api import ElementHandle, Frame

from datagen.browser.navigation import NavigationFailed
from datagen.browser.observe import settle_load
from datagen.records import RejectReason
from datagen.url import origin

if TYPE_CHECKING:
    from datagen.browser.session import Session

log = logging.getLogger(__name__)
CONSENT_JS = (Path(__file__).parent / "consent.js").read_text(encoding="utf-8")
MAX_FRAMES = 12  # frames searched: the main one first; ad-heavy pages have dozens
CLICK_TIMEOUT_MS = 3000  # for the click's actionability checks (visible, stable, on top)
GONE_TIMEOUT_MS = 2000  # for the dialog to go away after the click (animations)
OUTCOMES = {
    "reject": "rejected",
    "accept": "accepted",
    "close": "closed",
    "leave": "left",
    "none": "no_button",
}


async def answer_consent(session: Session, mode: str) -> str | None:
    """Find the page's consent dialog and answer it as `mode` (reject | accept | leave) asks;
    what was done (see the module docstring), or None when there was no dialog."""
    await session.settle()  # frameworks inject their dialog after load, from their own scripts
    start = session.page.url  # the start URL's load: the episode's page, its scope's start
    for frame in session.page.frames[:MAX_FRAMES]:
        found = await _find(frame, mode)
        if found is None:
            continue
        framework, outcome, button = found
        if button is None:
            return f"{OUTCOMES[outcome]}:{framework}"
        gone = await _click(button)
        await settle_load(session.page, session.config.navigation_timeout_s)  # some reload
        answer = f"{OUTCOMES[outcome] if gone else 'failed'}:{framework}"
        now = session.page.url
        if _origin(now) != _origin(start):
            raise NavigationFailed(
                f"the cookie-consent answer ({answer}) led from {start[:300]} to {now[:300]}, "
                "another origin: the episode's scope is its start page's",
                RejectReason.OFF_SCOPE,
            )
        return answer
    return None


def _origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, the port spelled out (http://h and http://h:80 agree);
    a URL without a host (about:blank) or that does not parse is its own origin."""
    scheme, host, port = origin(url)
    return (scheme, host, port) if host else (url, "", 0)


async def _find(frame: Frame, mode: str) -> tuple[str, str, ElementHandle | None] | None:
    """consent.js's answer in one frame; None when it has no dialog or cannot be read."""
    try:
        handle = await frame.evaluate_handle(CONSENT_JS, mode)
    except Exception:  # a frame detached or navigating meanwhile: no dialog to answer there
        log.debug("consent: frame %s not readable", frame.url[:200], exc_info=True)
        return None
    try:
        head = await handle.evaluate("(r) => r && [String(r[0]), String(r[1])]")
        if not head:
            return None
        button = (await handle.get_property("2")).as_element()
        return str(head[0]), str(head[1]), button
    finally:
        await handle.dispose()


async def _click(button: ElementHandle) -> bool:
    """Click the button as a user would (scrolled into view, real mouse events); the page's
    own click handler is the fallback when something keeps the pointer off it. True when the
    button then went away (hidden or detached: its dialog closed)."""
    try:
        await button.click(timeout=CLICK_TIMEOUT_MS)
    except Exception:
        log.debug("consent: pointer click failed, using the element's click()", exc_info=True)
        try:
            await button.evaluate("(b) => b.click()")
        except Exception:
            log.debug("consent: the button's click() failed", exc_info=True)
    try:
        await button.wait_for_element_state("hidden", timeout=GONE_TIMEOUT_MS)
    except Exception:
        try:
            return await button.is_hidden()
        except Exception:  # its document is gone: the answer navigated (some CMPs reload)
            return True
    return True
