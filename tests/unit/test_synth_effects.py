"""Task synthesis's pure parts (issue 43): effects between page states, and the proof's rule
for what moves by itself (annotate/tasks.py, pipeline/synthesis.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from datagen.annotate.tasks import effects, volatile
from datagen.config import TasksConfig
from datagen.config.stages import AnnotationConfig
from datagen.observe.summary import synthesis_line
from datagen.pipeline.replay import Screens
from datagen.pipeline.synthesis import Candidate, _candidates, _prove
from datagen.records import ElementState, PageState


def state(text: str, *elements: ElementState, url: str = "http://a/") -> PageState:
    return PageState(url=url, text=text, elements=elements)


BOX = ElementState(role="checkbox", name="Buy milk", checked=False)
TICKED = ElementState(role="checkbox", name="Buy milk", checked=True)


def test_a_line_that_changed_in_digits_alone_is_no_effect_a_controls_number_is() -> None:
    start = state("Visitors 100\nTodo", BOX, ElementState(role="button", name="Cart (2)"))
    after = state(
        "Visitors 198\nTodo\nSaved",
        TICKED,
        ElementState(role="button", name="Cart (3)"),
    )
    found = {e.key: e for e in effects(start, start, after)}
    assert set(found) == {
        "state:checkbox:Buy milk:checked:",
        "count:button:Cart (3):present:",
        "text:Saved",
    }
    cart = found["count:button:Cart (3):present:"]
    assert (cart.subject, cart.was) == ("Cart (3)", "Cart (2)")
    assert cart.check.holds_on(after) and not cart.check.holds_on(start)


def test_a_controls_number_that_moved_between_the_start_observations_is_no_effect() -> None:
    start = state("Todo", ElementState(role="button", name="Online 100"))
    again = state("Todo", ElementState(role="button", name="Online 107"))
    after = state("Todo", ElementState(role="button", name="Online 121"))
    assert effects(start, start, after) != []  # it looks like one from two states alone
    assert effects(start, again, after) == []
    # nor through the proof: the gap observation of the start saw it move
    moved = volatile(start, again)
    found = _candidates([start, after], TasksConfig(), set())
    _prove(found, Screens(states=[start, after]), Screens(states=[start, after]), moved)
    assert [c.dropped for c in found] == ["volatile"]
    # or the second replay read another number after the same steps
    found = _candidates([start, after], TasksConfig(), set())
    later = Screens(states=[start, state("Todo", ElementState(role="button", name="Online 128"))])
    _prove(found, Screens(states=[start, after]), later, set())
    assert [c.dropped for c in found] == ["volatile"]


def test_a_count_needs_one_control_of_its_name_on_both_pages_and_on_screen() -> None:
    two = state("", *[ElementState(role="button", name="Like 0")] * 2)
    liked = state(
        "", ElementState(role="button", name="Like 1"), ElementState(role="button", name="Like 0")
    )
    assert effects(two, two, liked) == []  # which one went up, its name does not say
    covered = state("", ElementState(role="button", name="Cart 0", hit=False))
    assert effects(covered, covered, state("", ElementState(role="button", name="Cart 1"))) == []
    # a number that is the whole name is a count too (a pager's "5" is the pager's url)
    one = state("", ElementState(role="spinbutton", name="Qty 1"))
    two_ = state("", ElementState(role="spinbutton", name="Qty 2"))
    assert [e.kind for e in effects(one, one, two_)] == ["count"]


def test_what_moved_between_observations_or_replays_is_dropped() -> None:
    start = state("Time 10:00:01\nTodo", BOX)
    after = state("Time 10:00:02\nTodo\nNext tick 4", TICKED)
    found = _candidates([start, after], TasksConfig(), set())
    assert {c.effect.key for c in found} == {"state:checkbox:Buy milk:checked:", "text:Next tick 4"}
    # the second replay reads another tick after the same step: that line is not the effect
    again = Screens(states=[start, state("Time 10:00:02\nTodo\nNext tick 5", TICKED)])
    again.again = state("Time 10:00:03\nTodo", BOX)
    starts = _prove(found, Screens(states=[start, after]), again, set())
    assert starts == 3
    assert {c.effect.key: c.dropped for c in found} == {
        "state:checkbox:Buy milk:checked:": None,
        "text:Next tick 4": "volatile",
    }


def test_an_effect_proven_by_another_episode_is_not_a_candidate_again() -> None:
    start, after = state("Todo", BOX), state("Todo\nSaved", TICKED)
    proven = {"state:checkbox:Buy milk:checked:"}
    assert [c.effect.key for c in _candidates([start, after], TasksConfig(), proven)] == [
        "text:Saved"
    ]
    lost = Candidate(1, effects(start, start, after)[0])
    _prove([lost], Screens(states=[start, after]), None, set())
    assert lost.dropped == "not_again"  # one replay is no proof


def test_tasks_need_verification_a_clear_error() -> None:
    with pytest.raises(ValidationError, match=r"annotation.tasks needs annotation.verify.*fix:"):
        AnnotationConfig.model_validate({"verify": None, "tasks": {}})
    assert AnnotationConfig.model_validate({"tasks": {}}).tasks is not None


def test_the_summary_line_counts_kept_and_dropped_by_proof_step() -> None:
    assert synthesis_line(100.0, 0.0, 0, {}) == ""
    line = synthesis_line(200.0, 12.0, 5, {"holds_at_start": 2, "volatile": 3})
    assert line.startswith("task synthesis: 10 tasks synthesised, 5 kept, dropped by proof ")
    assert "volatile 3, holds_at_start 2" in line and "5.7% of session time with it" in line
    # its replays run apart from the sessions' time: a share of both, never over 100%
    # (a small run said "114.6% of session time": 7.9 s of synthesis beside 6.9 s)
    assert "53.4% of session time with it, 7.9 s" in synthesis_line(6.9, 7.9, 7, {"no_words": 14})
    # the task list gives fewer than the kept (one effect kept by two shards): the line says so
    listed = synthesis_line(200.0, 12.0, 11, {"volatile": 68}, listed=9)
    assert "11 kept" in listed and "9 tasks once duplicates are left out" in listed
    assert "left out" not in synthesis_line(200.0, 12.0, 11, {"volatile": 68}, listed=11)
