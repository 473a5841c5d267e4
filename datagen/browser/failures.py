"""What a failed browser call can be: the browser's failure classes, `Failure` (an episode's
reject), the errors a browser call may raise for the page's sake, and Playwright's private
"target closed" error matched by name.

    exception from a browser call ─► Failure(stage, reason, detail)   (the episode's reject)
                                  └► BrowserDied                       (the shard fails, retried)

What a failure means is read in `triage.py` (it asks a page whether it is hung, kills a
browser that stopped answering), so the pipeline reads failures in its own terms. This module
is below `host` and `session` (both raise its classes); `triage` is above them.
"""

from __future__ import annotations

import sysconfig
import traceback
from typing import NamedTuple

from playwright.async_api import Error as PlaywrightError

from datagen.browser.memory import PageMemoryExceeded
from datagen.browser.navigation import NavigationFailed
from datagen.records import RejectReason


class BrowserDied(Exception):
    """Chromium is gone: the shard must fail (and be retried), not be committed as rejects."""


class CheckNotBoolean(Exception):
    """A task's `check.js` gave something other than true or false (a training label must not
    come from JavaScript's truthiness: a Promise, an object or "false" would all be success)."""


class CheckFailed(Exception):
    """The task's success check itself raised (bad JS, say): the task is at fault."""


class StepTimedOut(Exception):
    """One step (observe, decide, act) overran `run.step_timeout_s`: a hung page, usually."""


class Failure(NamedTuple):
    """An episode's reject: `stage` is "task" (the task is at fault) or "episode"."""

    stage: str
    reason: RejectReason
    detail: str


# What a browser call may raise for the page's or the task's sake (not for a dead browser)
BROWSER_FAILURES = (
    PageMemoryExceeded,
    NavigationFailed,
    CheckFailed,
    StepTimedOut,
    PlaywrightError,
)
LIBRARY_DIRS = tuple(
    {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def target_closed(exc: BaseException) -> bool:
    """Playwright's "target page, context or browser has been closed" (its class is private)."""
    return type(exc).__name__ == "TargetClosedError"


def first_line(exc: BaseException) -> str:
    """The exception's first line, or where it came from when it has no message."""
    return str(exc).splitlines()[0] if str(exc) else _origin(exc)


def _origin(exc: BaseException) -> str:
    """Where an exception without a message came from: "file:line in function" of the
    innermost frame outside the standard library and installed packages (a TimeoutError is
    raised inside asyncio; what matters is which of our awaits it ended)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [
        f for f in frames if "/datagen/" in f.filename or not f.filename.startswith(LIBRARY_DIRS)
    ] or frames
    return f"at {ours[-1].filename}:{ours[-1].lineno} in {ours[-1].name}" if ours else ""
