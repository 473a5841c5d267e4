"""A covered control is no effect (issue 43, a trainer's read): a drawer opened over a grid
covers its "Add to cart" buttons, which the scan then names by their aria-label ("Add Yoga
Mat to cart"), a name no one sees; a check on it would read the page's accessible names, true
at the start for anyone reading them so."""

from __future__ import annotations

from datagen.annotate.tasks import effects
from datagen.records import PageState
from datagen.records.state import ElementState

GRID = ElementState(role="button", name="Add to cart")
START = PageState(url="http://shop/", elements=(GRID, ElementState(role="button", name="Cart")))


def test_a_control_that_a_drawer_covers_is_no_appeared_effect_what_the_drawer_shows_is() -> None:
    after = PageState(
        url="http://shop/",
        elements=(
            ElementState(role="button", name="Add Yoga Mat to cart", hit=False),
            ElementState(role="button", name="Cart"),
            ElementState(role="button", name="Decrease quantity of Yoga Mat"),
        ),
    )
    found = {f.key for f in effects(START, START, after)}
    assert "appeared:button:Decrease quantity of Yoga Mat:present:" in found
    assert not any("Add Yoga Mat to cart" in key for key in found)
    uncovered = after.model_copy(
        update={"elements": (ElementState(role="button", name="Add Yoga Mat to cart"),)}
    )
    assert any("Add Yoga Mat to cart" in f.key for f in effects(START, START, uncovered))
