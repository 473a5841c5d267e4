"""An episode that failed, read as its reject row (or as a shard that must fail).

    exception out of an episode ─► Failure(stage, reason, detail) ─► one RejectRow
                                └► BrowserDied (from browser/triage.py): the shard is retried

The pipeline's own failures (the policy's, the episode's time limit) are read here; what a
browser call's failure means is read by `datagen.browser.triage`.
"""

from __future__ import annotations

from pydantic import ValidationError

from datagen.browser.failures import BROWSER_FAILURES, Failure
from datagen.browser.session import Session
from datagen.browser.triage import browser_failure, preempting
from datagen.pipeline.context import ShardContext
from datagen.policy import PolicyFailure
from datagen.records import RejectReason, TaskSpec

# Everything an episode may fail with for its task's or its page's sake
EPISODE_FAILURES = (*BROWSER_FAILURES, PolicyFailure, TimeoutError, ValidationError)
# Rejects after which the browser is asked whether it still answers (the watchdog)
WATCHED = (RejectReason.TIMEOUT_STEP, RejectReason.TIMEOUT_EPISODE, RejectReason.RENDERER_CRASH)


async def failure(
    exc: BaseException,
    session: Session | None,
    ctx: ShardContext,
    task: TaskSpec,
    expired: bool = False,
) -> Failure:
    """The reject row for an episode that failed: (stage, reason, detail). `session`: the
    episode's, if it was opened; `expired`: the episode's own time limit ran out."""
    early = preempting(exc, ctx.host, session, task.id)
    if early is not None:
        return early
    if isinstance(exc, PolicyFailure):
        return Failure("episode", exc.reason, str(exc))
    if isinstance(exc, TimeoutError) and expired:  # only the episode's own limit, not any
        limit = ctx.config.run.episode_timeout_s
        return Failure("task", RejectReason.TIMEOUT_EPISODE, f"episode took over {limit:g}s")
    return await browser_failure(exc, ctx.host, session, task.id)
