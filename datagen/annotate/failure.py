"""A synthesised task's `fail` check: the failure message its flow shows (issue 43, item 3).

    the task's start states and demonstration states (its first replay) + the final states of
    the shard's other episodes from the same start that acted on the demonstration's last
    element (the same form, the same button): without the effect (failed) or with it (solved)
        ─► fail_check() ─► SuccessCheck(text_present=<the message>) and who showed it, or None

Pure. A line is a failure message when it appeared on a failed episode's final page (it is on
no start state, its digits aside), reads as one (FAILURE: "Please enter your name", "Invalid
e-mail address", "You must agree to the terms") and is a message, not a paragraph (TEXT_LEN).
It is the task's `fail` only if it is false on every start state, on every state of the
demonstration and on every final state of an episode that made the effect: a fail check that
held on the way to success would end a solving episode as failed. Of several, the one most
failed episodes showed (then the first in order) is taken.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from datagen.annotate.tasks import TEXT_LEN, lines, mask
from datagen.records import PageState, SuccessCheck

# Words a page uses to say an action did not go through (English pages; a message in another
# language gives no fail check, never a wrong one).
FAILURE = re.compile(
    r"\b(error|errors|invalid|required|must|failed|failure|incorrect|wrong|cannot|can't|"
    r"could not|couldn't|unable|not allowed|denied|try again|too (?:short|long)|"
    r"please (?:enter|fill|provide|choose|select|check|agree|accept|correct))\b",
    re.IGNORECASE,
)


def failure_lines(starts: Sequence[PageState], final: PageState) -> list[str]:
    """Lines of `final` that are on no start state (digits masked) and read as failure."""
    before = {mask(line) for s in starts for line in lines(s.text)}
    return [
        line
        for line in sorted(lines(final.text))
        if mask(line) not in before
        and TEXT_LEN[0] <= len(line) <= TEXT_LEN[1]
        and FAILURE.search(line)
    ]


def fail_check(
    starts: Sequence[PageState],
    demonstration: Sequence[PageState],
    failed: Sequence[tuple[str, PageState]],
    solved: Sequence[PageState],
) -> tuple[SuccessCheck, list[str]] | None:
    """The task's fail check and the episodes (ids of `failed`) whose final page showed it;
    None when no failed episode showed a message that holds on none of the others."""
    shown: Counter[str] = Counter()
    by: dict[str, list[str]] = {}
    for episode, final in failed:
        for line in failure_lines(starts, final):
            shown[line] += 1
            by.setdefault(line, []).append(episode)
    never = [*starts, *demonstration, *solved]
    for line, _ in sorted(shown.items(), key=lambda kv: (-kv[1], kv[0])):
        check = SuccessCheck(text_present=line)
        if all(check.holds_on(s) is False for s in never):
            return check, by[line]
    return None
