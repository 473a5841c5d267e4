"""Reading a failed browser call for the episode: is the page hung, what reject it becomes,
whether the browser itself is gone (then BrowserDied: the shard fails and is retried).

    exception ─► preempting() ─► browser_failure() ─► Failure | BrowserDied
    a hang or a crash ─► watchdog() ─► kill a browser that stopped answering

Above `host` and `session` (it asks them); the failure classes it reads are in `failures.py`,
below both, so the browser package has no import circle (tests/unit/test_architecture.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError

from datagen.browser.failures import (
    BrowserDied,
    CheckFailed,
    CheckNotBoolean,
    Failure,
    StepTimedOut,
    first_line,
    target_closed,
)
from datagen.browser.memory import PageMemoryExceeded
from datagen.browser.navigation import NavigationFailed
from datagen.records import RejectReason, SuccessCheck

if TYPE_CHECKING:
    from datagen.browser.host import BrowserHost
    from datagen.browser.session import Session

log = logging.getLogger(__name__)


async def hung(session: Session, exc: BaseException) -> bool:
    """Did a browser call fail because the page's main thread is stuck (a script that never
    yields)? Chromium then sometimes answers a screenshot with an error instead of waiting."""
    if target_closed(exc) or session.events.crashed or session.events.flooded:
        return False
    if session.memory is not None and session.memory.exceeded is not None:
        return False  # stopped for its memory, not stuck
    return not await session.answers()


async def as_hang(exc: PlaywrightError, host: BrowserHost, session: Session) -> StepTimedOut | None:
    """A Playwright error raised while the episode's page is still open: a StepTimedOut to
    raise instead when the page is stuck in a script; None when it is not."""
    if host.connected and await hung(session, exc):
        return StepTimedOut(f"the page stopped responding ({first_line(exc)})")
    return None


async def run_check(
    session: Session, check: SuccessCheck | None, task_id: str, first: bool = False
) -> bool | None:
    """The task's success check on the live page; None when the task has none.

    A check that throws on the start page is broken (the task is at fault: CheckFailed).
    Later, a throw means the page is no longer one the check understands (the agent went
    elsewhere, an element it reads is gone): not solved.
    """
    if check is None:
        return None
    try:
        return await session.check(check)
    except CheckNotBoolean as exc:  # broken wherever it is evaluated: never a label
        raise CheckFailed(str(exc)) from None
    except PlaywrightError as exc:
        if first:
            raise CheckFailed(f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
        log.debug("check raised on %s: %s", session.page.url, exc, extra={"task_id": task_id})
        return False


def preempting(
    exc: BaseException, host: BrowserHost, session: Session | None, task_id: str
) -> Failure | None:
    """What goes before any other reading of a failure: a browser that is gone or being closed
    (a shutdown, an interrupt, a crash) fails the shard whatever failed, raising BrowserDied;
    a page stopped above its memory ceiling is rejected for that, whatever failed after."""
    if not host.connected:
        if not host.stopping:  # a browser that died under us: keep what Playwright saw of it
            # (its error ends with the browser's own log lines: a crash's signal, say)
            log.warning("browser closed during task %s: %s", task_id, str(exc)[-3000:])
        # (No `from exc`: Dask cannot pickle Playwright's chained errors, it logs a
        # RecursionError.)
        raise BrowserDied(f"browser closed during task {task_id}: {first_line(exc)}") from None
    exceeded = session.memory.exceeded if session is not None and session.memory else None
    if isinstance(exc, PageMemoryExceeded) or exceeded is not None:
        return Failure("episode", RejectReason.PAGE_MEMORY, str(exceeded or exc))
    return None


async def browser_failure(
    exc: BaseException, host: BrowserHost, session: Session | None, task_id: str
) -> Failure:
    """The reject for a failure of the browser's part of an episode (after `preempting`)."""
    if session is not None and session.events.flooded:  # stopped on purpose: whatever failed
        return Failure("episode", RejectReason.RENDERER_CRASH, session.events.flooded)
    if isinstance(exc, NavigationFailed):
        return Failure("task", exc.reason, str(exc))
    if isinstance(exc, CheckFailed):
        return Failure("episode", RejectReason.CHECK_ERROR, str(exc))
    if isinstance(exc, StepTimedOut):
        return Failure("episode", RejectReason.TIMEOUT_STEP, str(exc))
    if target_closed(exc) and not await host.responsive():
        # the browser itself is gone (or going, e.g. a worker shutting down): fail the shard,
        # it is retried; a page that merely closed itself is the task's doing, below
        raise BrowserDied(f"browser died during task {task_id}: {first_line(exc)}") from None
    line = first_line(exc)
    if session is not None and session.events.crashed:
        return Failure(
            "episode", RejectReason.RENDERER_CRASH, f"the page's renderer crashed: {line}"
        )
    detail = f"{type(exc).__name__}: {line}"
    # one line: an ordinary reject (its row says the same); the traceback at debug level
    log.warning("episode failed: %s", detail, extra={"task_id": task_id})
    log.debug("episode failed", extra={"task_id": task_id}, exc_info=exc)
    return Failure("task", RejectReason.BROWSER_ERROR, detail)


async def watchdog(host: BrowserHost, task_id: str) -> None:
    """After a hang or a crash: is the browser still answering? If not, kill it; the shard
    then fails and is retried on a fresh browser."""
    if not await host.responsive():
        await host.kill()
        raise BrowserDied(f"browser stopped answering after task {task_id}")
