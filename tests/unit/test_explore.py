import asyncio

import pytest

from datagen.config import ExplorePolicyConfig
from datagen.policy import Policy, make_policy
from datagen.policy.targets import COMPLETING
from datagen.records import (
    Click,
    Decision,
    Done,
    Element,
    Key,
    Observation,
    Scroll,
    TaskSpec,
    TypeText,
)
from tests.helpers import observation as make_observation

TASK = TaskSpec(id="t", start_url="http://127.0.0.1/", instruction="x")


def element(index: int, role: str = "button", hit: bool = True, **kw: object) -> Element:
    return Element.model_validate(
        {
            "index": index,
            "tag": "button",
            "role": role,
            "name": f"e{index}",
            "selector": f"#e{index}",
            "box": {"x": 10 * index, "y": 20, "width": 8, "height": 6},
            "hit": hit,
            **kw,
        }
    )


def observation(elements: list[Element], scale: float = 1.0) -> Observation:
    return make_observation(elements, scale=scale, url="http://127.0.0.1/page")


def decide_all(policy: Policy, obs: Observation, n: int) -> list[Decision]:
    return [asyncio.run(policy.decide(obs, TASK)) for _ in range(n)]


def test_covers_every_reachable_element_before_repeating() -> None:
    elements = [element(i) for i in range(5)] + [element(9, hit=False)]
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=1)
    picks = [d.target.index for d in decide_all(policy, observation(elements), 5)]
    assert sorted(picks) == [0, 1, 2, 3, 4]  # each once, never the occluded one


def test_clicks_box_centre_in_screenshot_pixels() -> None:
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    decision = asyncio.run(policy.decide(observation([element(3)], scale=2.0), TASK))
    assert decision.action == Click(x=(30 + 4) * 2, y=(20 + 3) * 2)


def test_types_a_plausible_value_after_focusing_a_field() -> None:
    field = element(1, role="textbox", tag="input", input_type="email", editable=True)
    config = ExplorePolicyConfig(type="explore", type_probability=1.0, submit_probability=1.0)
    policy = make_policy(config, TASK, seed=0)
    actions = [d.action for d in decide_all(policy, observation([field]), 3)]
    assert isinstance(actions[0], Click)
    assert isinstance(actions[1], TypeText) and "@" in actions[1].text
    assert actions[2] == Key(combo="Enter")


def test_same_seed_same_walk_other_seed_other_walk() -> None:
    elements = [element(i) for i in range(12)]

    def walk(seed: int) -> list[int]:
        policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=seed)
        return [d.target.index for d in decide_all(policy, observation(elements), 6)]

    assert walk(5) == walk(5)
    assert walk(5) != walk(6)


def test_scrolls_when_nothing_is_reachable() -> None:
    kinds = set()
    for seed in range(20):
        policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=seed)
        decision = asyncio.run(policy.decide(observation([element(0, hit=False)]), TASK))
        assert decision.target is None
        kinds.add(decision.action.type)
    assert kinds == {"scroll", "back"}  # mostly scrolls, sometimes goes back


# ----------------------------------------------------------------- it does not repeat itself

EMAILS = ["alex.morgan@example.com", "sam.lee@example.org"]  # explore's values for type=email
TYPING = ExplorePolicyConfig(type="explore", type_probability=1.0, submit_probability=1.0)


def email_field(text: str = "") -> Element:
    return element(1, role="textbox", tag="input", input_type="email", editable=True, text=text)


def test_never_types_a_value_the_field_already_holds() -> None:
    for seed in range(20):
        policy = make_policy(TYPING, TASK, seed=seed)
        field = email_field(text="Alex.Morgan@example.com")  # the value as the scan read it
        select, typed = [d.action for d in decide_all(policy, observation([field]), 3)[1:]]
        # what the field holds is selected first, so the typing replaces it rather than
        # landing at the click's caret inside it
        assert select == Key(combo="Control+A")
        assert typed == TypeText(text="sam.lee@example.org")


def test_an_empty_field_is_typed_into_without_selecting_first() -> None:
    policy = make_policy(TYPING, TASK, seed=0)
    typed = decide_all(policy, observation([email_field()]), 2)[1].action
    assert isinstance(typed, TypeText)


def test_a_field_holding_every_value_is_clicked_and_left_alone() -> None:
    policy = make_policy(TYPING, TASK, seed=0)
    field = email_field(text=" ".join(EMAILS))
    click, then = decide_all(policy, observation([field]), 2)
    assert isinstance(click.action, Click) and click.target == field
    assert isinstance(then.action, Done) and then.note.startswith("nothing new")


def test_a_field_filled_in_before_the_typing_is_neither_typed_into_nor_submitted() -> None:
    policy = make_policy(TYPING, TASK, seed=0)
    assert isinstance(asyncio.run(policy.decide(observation([email_field()]), TASK)).action, Click)
    filled = observation([email_field(text=" ".join(EMAILS)), element(2)])  # e.g. autofill
    after = asyncio.run(policy.decide(filled, TASK))
    assert isinstance(after.action, Click) and after.target is not None
    assert after.target.index == 2 and after.note == "new"


def test_stops_once_every_element_was_tried_and_nothing_new_appeared() -> None:
    elements = [element(i) for i in range(3)]
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    decisions = decide_all(policy, observation(elements), 5)
    assert sorted(d.target.index for d in decisions[:3] if d.target) == [0, 1, 2]
    assert [d.action for d in decisions[3:]] == [Done(), Done()]
    assert decisions[3].target is None
    assert decisions[3].note == "nothing new: each of the 3 elements in view tried in this state"


def test_goes_on_while_the_page_offers_something_new() -> None:
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    decide_all(policy, observation([element(0), element(1)]), 2)
    # a new element appeared: it is tried, not the old ones
    grown = decide_all(policy, observation([element(0), element(1), element(2)]), 1)[0]
    assert grown.target is not None and grown.target.index == 2 and grown.note == "new"
    # the same elements in a new state (a label changed): each is tried again there
    relabelled = [element(0, name="e0 (on)"), element(1), element(2)]
    again = decide_all(policy, observation(relabelled), 4)
    assert sorted(d.target.index for d in again[:3] if d.target) == [0, 1, 2]
    assert {d.note for d in again[:3]} == {"new-state"} and isinstance(again[3].action, Done)


def test_a_new_element_out_of_reach_is_a_new_page_state_not_a_stop() -> None:
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    assert decide_all(policy, observation([element(0)]), 1)[0].target is not None
    moving = observation([element(0), element(5, stable=False)])  # new, but not clickable yet
    first, second = decide_all(policy, moving, 2)
    assert isinstance(first.action, Click) and first.note == "new-state"
    assert isinstance(second.action, Done)


def test_stops_where_nothing_is_in_view_after_one_scroll_showed_nothing() -> None:
    nothing = make_observation([element(0, hit=False)], url="http://127.0.0.1/")  # the start
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    scroll, stop = decide_all(policy, nothing, 2)
    assert isinstance(scroll.action, Scroll) and scroll.note == "no target"
    assert isinstance(stop.action, Done) and "nothing to act on" in stop.note


# ----------------------------------------------------------------- it finishes what it starts

NO_ENTER_FIRST = ExplorePolicyConfig(type="explore", type_probability=1.0, submit_probability=0.0)


def text_field(text: str = "") -> Element:
    return element(1, role="textbox", tag="input", input_type="text", editable=True, text=text)


def test_a_typed_value_is_completed_before_anything_else_and_never_left_on_a_stop() -> None:
    """One field, no button: the draw that once made Enter rare (submit_probability 0) no
    longer leaves the value typed and unsubmitted; `nothing new` only after the Enter."""
    for seed in range(10):
        policy = make_policy(NO_ENTER_FIRST, TASK, seed=seed)
        click, typed, enter, stop = decide_all(policy, observation([text_field()]), 4)
        assert isinstance(click.action, Click) and isinstance(typed.action, TypeText)
        assert enter.action == Key(combo="Enter") and enter.note == "complete: Enter"
        assert enter.target is not None and enter.target.selector == "#e1"
        assert isinstance(stop.action, Done) and stop.note.startswith("nothing new")


def test_a_value_the_field_still_holds_after_enter_goes_to_the_add_button_beside_it() -> None:
    add = element(2, name="Add", box={"x": 200, "y": 20, "width": 40, "height": 20})
    far = element(3, name="Add", box={"x": 200, "y": 600, "width": 40, "height": 20})
    other = element(4, name="Help", box={"x": 260, "y": 20, "width": 40, "height": 20})
    field = element(
        1,
        role="textbox",
        tag="input",
        editable=True,
        box={"x": 10, "y": 20, "width": 150, "height": 20},
    )
    config = ExplorePolicyConfig(type="explore", type_probability=1.0, submit_probability=1.0)
    policy = make_policy(config, TASK, seed=0)
    first = asyncio.run(policy.decide(observation([field, add, far, other]), TASK))
    while first.target is None or first.target.index != 1:  # walk until the field is clicked
        first = asyncio.run(policy.decide(observation([field, add, far, other]), TASK))
    typed = asyncio.run(policy.decide(observation([field, add, far, other]), TASK))
    assert isinstance(typed.action, TypeText)
    holding = field.model_copy(update={"text": typed.action.text})
    after = observation([holding, add, far, other])
    enter, button = decide_all(policy, after, 2)
    assert enter.action == Key(combo="Enter")
    assert button.target is not None and button.target.index == 2  # beside it, not far below
    assert button.note == "complete: button"
    walk_on = asyncio.run(policy.decide(after, TASK))  # each way tried: the walk goes on
    assert walk_on.note != "complete: button" and not isinstance(walk_on.action, Key)


def test_a_taken_value_ends_the_completion() -> None:
    policy = make_policy(NO_ENTER_FIRST, TASK, seed=0)
    decide_all(policy, observation([text_field()]), 2)  # click, type
    enter = asyncio.run(policy.decide(observation([text_field(text="Buy groceries")]), TASK))
    assert enter.action == Key(combo="Enter")
    cleared = [text_field(), element(7, name="Buy groceries")]  # the app took it: a new item
    nxt = asyncio.run(policy.decide(observation(cleared), TASK))
    assert isinstance(nxt.action, Click) and nxt.target is not None and nxt.target.index == 7


def test_a_field_the_typing_draw_passed_over_gets_a_second_draw() -> None:
    config = ExplorePolicyConfig(type="explore", type_probability=0.5, submit_probability=1.0)
    for seed in range(30):
        policy = make_policy(config, TASK, seed=seed)
        decisions = decide_all(policy, observation([text_field()]), 6)
        clicks = [d for d in decisions if isinstance(d.action, Click)]
        assert 1 <= len(clicks) <= 2  # at most one more draw, never a loop
        if len(clicks) == 2:
            assert decisions[1].target is not None and decisions[1].note == "new"
    never = ExplorePolicyConfig(type="explore", type_probability=0.0)
    click, stop = decide_all(make_policy(never, TASK, seed=0), observation([text_field()]), 2)
    assert isinstance(click.action, Click) and isinstance(stop.action, Done)


def test_a_field_not_typed_into_is_drawn_before_most_of_a_dozen_other_controls() -> None:
    """On a list app the one field sits among a dozen rows' controls; it is weighted so an
    episode reaches it early enough in its step budget to add something (issue 34)."""
    others = [element(i) for i in range(2, 14)]
    early = 0
    for seed in range(40):
        policy = make_policy(ExplorePolicyConfig(type="explore", type_probability=0.0), TASK, seed)
        picks = [
            d.target.index for d in decide_all(policy, observation([text_field(), *others]), 6)
        ]
        early += 1 in picks
    assert early >= 30  # an unweighted draw of 6 of 13 reaches it about 18 times in 40


@pytest.mark.parametrize(
    ("words", "completes"),
    [("+", True), ("+ Add", True), ("Add item", True), ("Save", True), ("Addition", False)],
)
def test_the_words_of_a_completing_button(words: str, completes: bool) -> None:
    """A lone "+" is an add button too (the `\\b` after it never matched at the end)."""
    assert bool(COMPLETING.search(words)) is completes


# ------------------------------------------------- a screen seen before is no reason to stop


def test_a_list_emptied_by_its_delete_button_is_where_the_next_add_starts() -> None:
    """Issue 44: the empty list comes back after its only item is deleted; reached from the
    one-item list (a way in it was never reached by), it is a place to go on from: explore
    adds again instead of stopping on `nothing new`."""
    item = element(7, name="Buy groceries", box={"x": 10, "y": 60, "width": 150, "height": 20})
    delete = element(8, name="Delete", box={"x": 170, "y": 60, "width": 40, "height": 20})
    empty, one = observation([text_field()]), observation([text_field(), item, delete])
    policy = make_policy(NO_ENTER_FIRST, TASK, seed=0)
    _click, typed = decide_all(policy, empty, 2)
    assert isinstance(typed.action, TypeText)
    holding = observation([text_field(text=typed.action.text)])
    assert asyncio.run(policy.decide(holding, TASK)).action == Key(combo="Enter")
    picks = []
    for _ in range(3):  # the new item and its delete button, in some order
        decision = asyncio.run(policy.decide(one, TASK))
        picks.append(decision.target.index if decision.target else None)
        if picks[-1] == 8:
            break
    assert picks[-1] == 8, picks
    again = decide_all(policy, empty, 2)  # back on the first screen, by another way in
    assert isinstance(again[0].action, Click) and again[0].target is not None
    assert again[0].target.index == 1 and isinstance(again[1].action, TypeText)


def test_an_action_that_changes_nothing_reopens_nothing() -> None:
    """Staying on a state is no new way into it: a page whose clicks change nothing still
    stops once each element was tried."""
    elements = [element(i) for i in range(2)]
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    decisions = decide_all(policy, observation(elements), 3)
    assert isinstance(decisions[2].action, Done)


def test_each_way_into_a_state_reopens_it_once() -> None:
    """Two screens a link apart: each is reopened once per new way in, so the walk ends."""
    home, other = observation([element(0), element(1)]), observation([element(2)])
    policy = make_policy(ExplorePolicyConfig(type="explore"), TASK, seed=0)
    decisions = []
    for _ in range(30):
        decision = asyncio.run(policy.decide(home, TASK))
        decisions.append(decision)
        if isinstance(decision.action, Done):
            break
        decisions.append(asyncio.run(policy.decide(other, TASK)))
        if isinstance(decisions[-1].action, Done):
            break
    assert isinstance(decisions[-1].action, Done) and len(decisions) < 12
