"""One observation of a page: screenshot and DOM elements of the same moment.

    ┌ one evaluate ───────────────────────────────────────┐
    settle.js ─► walls.js signals ─► scan (elements.js) ─► capture (CDP) ─► re-measure
                                                                        (stability.js) ─► Observation

Two page round trips an observation: everything read before the screenshot in one evaluate,
the re-measure (which must follow the screenshot) in another. Both go through the session's
own CDP channel (`Runtime.evaluate`), not `page.evaluate` (see `Camera._call`). The first evaluate's function
(~35 KB of source) is sent and compiled once per document: it is kept in the page under a key
unique to the session, and called by a short expression after that.

Screenshots go through Chrome's own `Page.captureScreenshot` over a CDP session with its
speed option: it saves 15-35% CPU over `page.screenshot` (measured in reference/measured.md).
Only the viewport is captured, never the full page.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from playwright.async_api import CDPSession, Page
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel, ValidationError

from datagen.browser.memory import PageMemory
from datagen.config import BrowserConfig
from datagen.records import Box, Element, Observation

log = logging.getLogger(__name__)
_HERE = Path(__file__).parent


def _with_includes(name: str, *parts: str) -> str:
    """A script with the files it includes (`/*@include NAME*/`) put in."""
    text = (_HERE / name).read_text(encoding="utf-8")
    for part in parts:
        mark = f"/*@include {part}*/"
        if mark not in text:
            raise RuntimeError(f"{name} does not include {part}")
        text = text.replace(mark, (_HERE / part).read_text(encoding="utf-8").strip())
    return text


# elements.js includes what text the screen draws and where unnamed controls are (issue 44)
ELEMENTS_JS = _with_includes("elements.js", "drawn.js", "groups.js")
SETTLE_JS = (_HERE / "settle.js").read_text(encoding="utf-8")
STABILITY_JS = (_HERE / "stability.js").read_text(encoding="utf-8")
WALLS_JS = (_HERE / "walls.js").read_text(encoding="utf-8")
# Settle, read the wall signals, then scan, in one call; the scan runs whether or not the
# settle got quiet (a page that never holds still is observed as it is, its boxes flagged).
# `after` is the ms spent after the settle (signals and scan): not settle time. A scan that
# throws comes back as null (read again by `Camera._scan`), not as a navigation.
OBSERVE_FN = f"""async (args) => {{
  const settled = await ({SETTLE_JS})(args.settle);
  const from = performance.now();
  let signals = null, scan = null;
  try {{ signals = ({WALLS_JS})(); }} catch (e) {{ signals = null; }}
  try {{ scan = ({ELEMENTS_JS})(args.scan); }} catch (e) {{ scan = null; }}
  return {{ quiet: settled.quiet, scan, signals, after: performance.now() - from }};
}}"""
# The call once the function is in the page; null: not there (a new document) ─► INSTALL_JS.
CALL_JS = "(a) => { const f = window[Symbol.for(a.key)]; return f ? f(a) : null; }"
INSTALL_JS = f"""(a) => {{
  const f = {OBSERVE_FN};
  try {{ Object.defineProperty(window, Symbol.for(a.key), {{ value: f }}); }} catch (e) {{}}
  return f(a);
}}"""
MAX_ELEMENTS = 400
MOVED_PX = 1.0  # a box that shifted more than this between scan and screenshot disagrees with it
RETAKES = 1  # observations retaken when something moved, before its boxes are flagged


class _Scan(BaseModel):
    """What elements.js returns (as one JSON string)."""

    scrollX: float
    scrollY: float
    elements: tuple[Element, ...]


class _Remeasure(BaseModel):
    """What stability.js returns: the scanned elements' boxes now (None: gone), and the
    page's title (read in the same round trip)."""

    title: str = ""
    scrollX: float
    scrollY: float
    boxes: list[Box | None]


async def settle_load(page: Page, timeout_s: float) -> None:
    """Wait (bounded) for the page's load event; a page that never gets there is observed
    as it is.

    Playwright answers a page already loaded from the load states it keeps for the main frame,
    but only after setting up a waiter and sending its driver three messages about it (~0.5 ms
    of CPU, after every action). The same states are read here first; without them (another
    Playwright) it asks Playwright."""
    if loaded(page):
        return
    try:
        await page.wait_for_load_state("load", timeout=timeout_s * 1000)
    except Exception:
        log.debug("page did not reach load state", exc_info=True)


def loaded(page: Page) -> bool:
    """Playwright's own record says the page's main frame has fired `load` (False: not yet, or
    a Playwright that keeps no such record)."""
    frame = getattr(page.main_frame, "_impl_obj", None)
    return "load" in getattr(frame, "_load_states", ())


class Camera:
    """Observes one session's page. `loading` says whether a request of the page that is
    not a long poll or a stream is open (the session follows its requests)."""

    def __init__(
        self,
        page: Page,
        cdp: CDPSession,
        config: BrowserConfig,
        loading: Callable[[], bool],
        memory: PageMemory | None = None,
    ) -> None:
        self.page = page
        self.cdp = cdp
        self.config = config
        self._loading = loading
        self.memory = memory
        self.observed = 0  # observations taken: the first may settle longer
        self._key = f"datagen.observe.{uuid.uuid4().hex}"  # where OBSERVE_FN is kept
        self._crashed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        page.on("crash", self._crash)
        self.signals: object = (
            None  # walls.js's read of the last observation (`url`: of which page)
        )

    async def screenshot(self, scroll_x: float = 0.0, scroll_y: float = 0.0) -> bytes:
        """The viewport at device pixels. CDP's capture ignores the emulated device scale
        factor unless asked through `clip.scale`, and its clip is in document coordinates."""
        cfg = self.config
        clip = {
            "x": scroll_x,
            "y": scroll_y,
            "width": cfg.viewport.width,
            "height": cfg.viewport.height,
            "scale": cfg.device_scale_factor,
        }
        params: dict[str, object] = {
            "format": cfg.image_format,
            "optimizeForSpeed": True,
            "clip": clip,
        }
        if cfg.image_format != "png":
            params["quality"] = cfg.image_quality
        if self.memory is not None:  # a page's renderers are not killed while this runs
            self.memory.capturing += 1
        try:
            result = await self.cdp.send("Page.captureScreenshot", params)
        finally:
            if self.memory is not None:
                self.memory.capturing -= 1
        return base64.b64decode(result["data"])

    def _crash(self, _: Page) -> None:
        if not self._crashed.done():
            self._crashed.set_result(None)

    async def _call(self, function: str, arg: object = None) -> object:
        """`function(arg)` in the page's main world, its value returned (a promise awaited),
        through the session's CDP channel (`Runtime.evaluate`). Playwright's `page.evaluate`
        does the same at ~0.5 ms more CPU a call (its driver wraps, serialises and parses each
        one), and an observation makes two. A script that throws, or a page that navigates away
        meanwhile, raises Playwright's Error, as `page.evaluate` does."""
        params = {
            "expression": f"({function})({json.dumps(arg)})",
            "returnByValue": True,
            "awaitPromise": True,
        }
        # A crashed renderer never answers a CDP command (Playwright's evaluate fails at once)
        sent = asyncio.ensure_future(self.cdp.send("Runtime.evaluate", params))
        crashed: asyncio.Future[Any] = self._crashed
        try:
            await asyncio.wait([sent, crashed], return_when=asyncio.FIRST_COMPLETED)
        finally:  # cancelled (an interrupt), or the crash came first: the command is dropped
            answered = sent.done()
            if not answered:
                sent.cancel()
            elif not sent.cancelled():
                sent.exception()  # looked at, so never "exception was never retrieved"
        if not answered:
            raise PlaywrightError("Target crashed: the page's renderer is gone")
        result = sent.result()
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            thrown = details.get("exception", {}).get("description") or details.get("text", "")
            raise PlaywrightError(f"the page's script failed: {str(thrown)[:300]}")
        return result.get("result", {}).get("value")

    async def elements(self) -> tuple[tuple[Element, ...], float, float]:
        """The visible interactive elements, and the page's scroll offset (x, y)."""
        raw = await self.page.evaluate(ELEMENTS_JS, {"maxElements": MAX_ELEMENTS, "asJson": True})
        return await self._parsed(raw)

    async def _parsed(self, raw: object) -> tuple[tuple[Element, ...], float, float]:
        """elements.js's JSON text as elements and scroll offset."""
        try:
            scan = _Scan.model_validate_json(raw if isinstance(raw, str) else "")
        except ValidationError:  # the page's JSON is not the standard one: take the object
            args = {"maxElements": MAX_ELEMENTS, "asJson": False}
            scan = _Scan.model_validate(await self.page.evaluate(ELEMENTS_JS, args))
        return scan.elements, scan.scrollX, scan.scrollY

    async def _until_quiet(
        self, limit_ms: float, read: Callable[[float], Awaitable[object]]
    ) -> tuple[float, bool, dict[str, Any] | None]:
        """The settle loop: wait out open requests, then `read(ms left)` (an evaluate whose
        result has `quiet`), again while it is quiet but a request opened meanwhile, until the
        limit. Returns (ms waited, quiet, the last result; None when the page never answered:
        it was navigating)."""
        start = time.monotonic()
        deadline = start + limit_ms / 1000
        while True:
            while self._loading() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            left_ms = max(0.0, (deadline - time.monotonic()) * 1000)
            result: dict[str, Any] | None = None
            try:
                raw = await read(left_ms)
                result = raw if isinstance(raw, dict) else None
            except PlaywrightError:  # navigating: the new document settles on the next round
                await settle_load(self.page, self.config.navigation_timeout_s)
            quiet = bool(result and result.get("quiet"))
            if (quiet and not self._loading()) or time.monotonic() >= deadline:
                break
        return (time.monotonic() - start) * 1000, quiet and not self._loading(), result

    async def _settled_scan(
        self, limit_ms: float
    ) -> tuple[float, bool, tuple[tuple[Element, ...], float, float]]:
        """`settle`, then the wall signals (kept in `signals`) and the scan, in one evaluate:
        (ms the settle waited, quiet, scan)."""
        scan = {"maxElements": MAX_ELEMENTS, "asJson": True}

        async def read(left_ms: float) -> object:
            settle = {"quietMs": self.config.settle_quiet_ms, "timeoutMs": left_ms}
            args = {"key": self._key, "settle": settle, "scan": scan}
            raw = await self._call(CALL_JS, args)
            if raw is None:  # a new document: the function is not in it yet
                raw = await self._call(INSTALL_JS, args)
            return raw

        waited, quiet, result = await self._until_quiet(limit_ms, read)
        self.signals = None if result is None else result.get("signals")
        if result is None:  # the page never answered in time: scan what is there now
            return waited, False, await self._scan()
        after = result.get("after")
        waited -= min(waited, float(after)) if isinstance(after, int | float) else 0.0
        if not isinstance(result.get("scan"), str):  # the scan threw: once more on its own
            return waited, quiet, await self._scan()
        try:
            found = await self._parsed(result["scan"])
        except PlaywrightError:  # its fallback found the page navigating: as `_scan` does
            found = await self._scan()
        return waited, quiet, found

    async def settle(self, timeout_ms: float | None = None) -> tuple[float, bool]:
        """Wait, bounded by `timeout_ms` (default `settle_timeout_ms`), until the page holds
        still: no request loading, no DOM change for `settle_quiet_ms`, fonts ready, a frame
        painted. Returns (ms waited, whether it got quiet: False when it gave up at the limit).
        Apps that render after `load` (loaders, SPAs, data fetches) are observed once they have
        rendered, not at `load`."""
        cfg = self.config
        limit_ms = cfg.settle_timeout_ms if timeout_ms is None else timeout_ms

        async def read(left_ms: float) -> object:
            args = {"quietMs": cfg.settle_quiet_ms, "timeoutMs": left_ms}
            return await self.page.evaluate(SETTLE_JS, args)

        waited, quiet, _ = await self._until_quiet(limit_ms, read)
        return waited, quiet

    async def settled_elements(self) -> tuple[Element, ...]:
        """`settle`, then `elements`, in one evaluate (a replay aiming a click: one round trip
        to the page, not two)."""
        _, _, (elements, _, _) = await self._settled_scan(self.config.settle_timeout_ms)
        return elements

    async def _scan(self) -> tuple[tuple[Element, ...], float, float]:
        try:
            return await self.elements()
        except PlaywrightError:
            # The page navigated under us ("execution context was destroyed"): wait, retry once.
            await settle_load(self.page, self.config.navigation_timeout_s)
            return await self.elements()

    async def _moved(
        self, elements: tuple[Element, ...], scroll: tuple[float, float]
    ) -> tuple[set[int], str | None]:
        """Indices of the scanned elements whose box is not where the scan put it any more, and
        the page's title (None when the page could not be read)."""
        try:
            raw = await self._call(STABILITY_JS)
            now = _Remeasure.model_validate_json(raw if isinstance(raw, str) else "")
        except (PlaywrightError, ValidationError):
            return {e.index for e in elements}, None  # navigated away: nothing is certain
        if abs(now.scrollX - scroll[0]) > MOVED_PX or abs(now.scrollY - scroll[1]) > MOVED_PX:
            return {e.index for e in elements}, now.title
        moved = set()
        for element, box in zip(elements, now.boxes, strict=False):
            if box is None or _shifted(element.box, box):
                moved.add(element.index)
        return moved, now.title

    async def observe(self) -> Observation:
        """Screenshot and DOM elements of one moment: settle, scan, capture, then measure the
        boxes again. If anything moved meanwhile, take it all again once; elements that still
        moved, and those the scan saw animated (a running CSS animation of their geometry, or a
        script rewriting their style frame after frame), are marked `stable=False`: their boxes
        may not match the image. A settle that gave up at its limit (the page never held
        still: it may not have rendered yet) is recorded as `settle_timed_out` and the
        observation is not `stable`; the first observation of the session (its episode) may
        wait `first_settle_timeout_ms`. A page above its memory ceiling raises
        PageMemoryExceeded."""
        start = time.perf_counter()
        if self.memory is not None:  # a page above its memory ceiling is no observation
            await self.memory.check()
        cfg = self.config
        limit = cfg.settle_timeout_ms
        if not self.observed:
            limit = max(limit, cfg.first_settle_timeout_ms)
        self.observed += 1
        settle_ms, quiet, scan = await self._settled_scan(limit)
        retakes = 0
        while True:
            elements, scroll_x, scroll_y = scan if not retakes else await self._scan()
            image = await self.screenshot(scroll_x, scroll_y)
            moved, title = await self._moved(elements, (scroll_x, scroll_y))
            if not moved or retakes >= RETAKES:
                break
            retakes += 1
        moved |= {e.index for e in elements if not e.stable}  # animated: moving by nature
        if moved:
            elements = tuple(
                e.model_copy(update={"stable": False}) if e.index in moved else e for e in elements
            )
        scale = cfg.device_scale_factor
        return Observation(
            url=self.page.url,
            title=title if title is not None else await self.page.title(),
            screenshot=image,
            image_format=cfg.image_format,
            image_width=round(cfg.viewport.width * scale),
            image_height=round(cfg.viewport.height * scale),
            viewport_width=cfg.viewport.width,
            viewport_height=cfg.viewport.height,
            device_scale_factor=scale,
            elements=elements,
            observe_ms=(time.perf_counter() - start) * 1000,
            settle_ms=round(settle_ms, 1),
            stable=not moved and quiet,
            retakes=retakes,
            settle_timed_out=not quiet,
        )


def _shifted(before: Box, after: Box) -> bool:
    return (
        abs(before.x - after.x) > MOVED_PX
        or abs(before.y - after.y) > MOVED_PX
        or abs(before.width - after.width) > MOVED_PX
        or abs(before.height - after.height) > MOVED_PX
    )
