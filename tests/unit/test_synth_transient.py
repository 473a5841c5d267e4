"""A toast is no task (issue 43): synthesis._transient on a second replay's live regions and
its later look (replay.Screens.live, Screens.later)."""

from __future__ import annotations

from datagen.annotate.tasks import Effect
from datagen.pipeline.replay import Screens
from datagen.pipeline.synthesis import Candidate, _transient
from datagen.records import PageState, SuccessCheck

START = PageState(url="http://a/", text="Save draft")
AFTER = PageState(url="http://a/", text="Save draft\nYour draft is saved\nDraft saved ✓")
LATER = PageState(url="http://a/", text="Save draft\nYour draft is saved")


def said(line: str) -> Candidate:
    return Candidate(1, Effect("text", f"text:{line}", SuccessCheck(text_present=line), line))


def test_a_live_regions_message_gone_later_is_transient_a_line_that_stays_is_not() -> None:
    again = Screens(states=[START, AFTER], live=[set(), {"Draft saved ✓"}], later=LATER)
    assert _transient(said("Draft saved ✓"), again)
    assert not _transient(said("Your draft is saved"), again)  # not in a live region


def test_a_message_that_stays_or_was_not_looked_at_again_is_kept() -> None:
    stays = Screens(states=[START, AFTER], live=[set(), {"Draft saved ✓"}], later=AFTER)
    assert not _transient(said("Draft saved ✓"), stays)
    unwatched = Screens(states=[START, AFTER])  # no live regions followed: nothing to say
    assert not _transient(said("Draft saved ✓"), unwatched)


def test_the_last_steps_effect_gone_a_moment_later_is_transient_on_no_live_region() -> None:
    """The shop's "Added ✓" on the clicked button for 1.2 s (no live region): gone once the
    replay looked again, so no reward; an earlier step's effect gone then is not judged (a
    later step of the demonstration may have undone it)."""
    added = PageState(url="http://a/", text="Save draft\nAdded ✓")
    again = Screens(states=[START, added], live=[set(), set()], later=START)
    assert _transient(said("Added ✓"), again)
    stays = Screens(states=[START, added], live=[set(), set()], later=added)
    assert not _transient(said("Added ✓"), stays)
    longer = Screens(states=[START, added, START], live=[set(), set(), set()], later=START)
    assert not _transient(said("Added ✓"), longer)  # k=1 of 2 steps
