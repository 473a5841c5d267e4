"""An episode's course: its scope, where it started, its last page in scope, and whether the
page on show may become data. The pipeline's step loop asks before every observation; pages
that may not become rejects and the session goes back (episode.py).

    run.scope + start URL + where it landed ─► Course.for_episode()
    Session (URL, main document, blocked requests) ─► Course.stray() ─► Stray | None

Nothing here drives the browser: it reads what the session already knows.
"""

from __future__ import annotations

from dataclasses import dataclass

from datagen.browser.guard import UrlGuard
from datagen.browser.session import Session
from datagen.records import Observation, StepRow
from datagen.scope import Scope, Stray, page_problem, same_document
from datagen.url import BadUrl, split_url

MAX_RETURNS = 3  # ways back in a row; the next page out of scope ends the episode


@dataclass
class Course:
    """Keeps an episode on task."""

    scope: Scope
    start_url: str
    returns: int = 0  # ways back since the last step that stayed in scope
    last: Observation | None = None  # the observation of the last recorded step
    success: bool | None = None  # the success check on that page
    stray: Stray | None = None  # the last page that was no data

    @classmethod
    def for_episode(
        cls, setting: str | list[str], start_url: str, landed: str, guard: UrlGuard | None
    ) -> Course:
        """`run.scope` around the start URL and where it redirected to."""
        blocked = guard.check_static if guard is not None else None
        scope = Scope.for_task(setting, start_url, landed, blocked=blocked)
        return cls(scope=scope, start_url=start_url)

    def stray_of(self, session: Session, url: str | None = None) -> Stray | None:
        """Is the page on show (or `url`, just observed) no data? From the session's URL, its
        main document's request and status, and what the guard blocked."""
        url = session.page.url if url is None else url
        requested, status = session.document
        status = status if same_document(requested, url) else None
        stray = page_problem(url, self.scope, status, requested)
        why = [b for b in session.events.blocked if requested and requested[:300] in b]
        if stray is not None and why:
            return stray._replace(detail=f"{stray.detail} (blocked: {why[-1]})")
        return stray

    def elsewhere(self, url: str) -> bool:
        """Out of scope, though the guard would let it load (what the guard blocks, it blocks
        and records itself: `blocked: …` and the episode's blocked_requests; a URL that does
        not parse is no place at all: the session says so, `bad URL: …`)."""
        try:
            split_url(url)
        except BadUrl:
            return False
        scope = self.scope
        blocked = scope.blocked is not None and scope.blocked(url) is not None
        return not blocked and not scope.contains(url, guarded=False)


def led_to(steps: list[StepRow], stray: Stray) -> None:
    """The last step was taken on a good page and stays data; its action_error says where
    the action led."""
    step = steps[-1]
    where = f"led to {stray.url[:300] or 'a blank page'} ({stray.reason.value})"
    error = f"{step.action_error}; {where}" if step.action_error else where
    steps[-1] = step.model_copy(update={"action_error": error})
