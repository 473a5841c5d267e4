"""Motion: was the moment the oracle judged the settled page, and is a row about a target
that moves?

Part of the independent grounding oracle (`oracle/`): no `datagen` import.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from playwright.async_api import Page

from oracle.targets import Box, Target, _fmt, _intersect, _moved, ground_truth


async def settled_changes(
    page: Page, judged: list[Target], *, discover: bool = False, wait_s: float = 1.5
) -> list[str]:
    """What the page still did after the judged moment: after `wait_s`, the targets that are
    counted now but were not then (not rendered yet, or moving), and static targets that moved.
    Empty: the observation was of the settled page."""
    await asyncio.sleep(wait_s)
    then = {t.id: t for t in judged}
    changes = []
    now = await ground_truth(page, discover=discover)
    if any(then[t.id].moving for t in now if t.counts and t.id in then):
        # A target that moves for ever (a bouncing button) can look still in one motion sample
        # (two samples either side of its turning point): it counts as settled only if it looks
        # still in a second sample too.
        again = {t.id: t for t in await ground_truth(page, discover=discover)}
        now = [t for t in now if not (t.id in again and again[t.id].moving)]
    for t in now:
        old = then.get(t.id)
        if t.counts and (old is None or not old.counts):
            why = "absent" if old is None else ("moving" if old.moving else "not reachable")
            changes.append(f"{t.description} appeared (was {why})")
        elif old is not None and t.counts and _moved(old.box, t.box, 2.0):
            changes.append(f"{t.description} moved {_fmt(old.box)} -> {_fmt(t.box)}")
    return changes


def moving_match(names: set[str], box: Box, targets: Iterable[Target]) -> Target | None:
    """A moving target a row is about: its box overlaps where the target was sampled, or the
    row names it (`names`: the row's name and text, lower-cased)."""
    moving = [t for t in targets if t.moving]
    named = [t for t in moving if t.label.strip().lower() in names]
    overlapping = [t for t in moving if _intersect(box, t.box) is not None]
    found = named or overlapping
    return found[0] if found else None
