"""A control's number as a task (issue 43): the shop's "Add to cart" lasts as the cart button's
number ("Cart 0" ─► "Cart 1"), a change in digits alone, which looks like a counter that ticks
by itself. It is an effect when the episode caused it: steady between the observations of the
start, and the same on both sealed replays of the demonstration.

The page of our own (tests/fixtures/synth_count/basket) has a "Basket 0" button that counts the
presses of "Add to basket", and beside it an "Online 100" button that ticks by itself every
100 ms. The scripted task presses "Add to basket": the basket's new number is a task, worded
from the button and decided by it (checked live by bench/taskcheck's reading of an element);
the ticking button's number, which changed over the same steps, is dropped as volatile.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, sync_playwright

from bench.taskcheck import DESCRIBE
from bench.taskcheck import served as static_server
from tests.helpers import exported_tasks, synthesised, task_rows

pytestmark = pytest.mark.browser
SITES = Path(__file__).resolve().parents[1] / "fixtures" / "synth_count"
BASKET = {"element": {"role": "button", "name": "Basket 1", "state": "present"}}


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's task run scripted, synthesis on, in the run of pages of our own that
    test_synth_runwide and test_synth_transient read too; the task list exported."""
    return synthesised(tmp_path_factory)


@pytest.fixture(scope="module")
def page(chromium: str) -> Iterator[Page]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium)
        try:
            yield browser.new_page(viewport={"width": 1280, "height": 800})
        finally:
            browser.close()


def shows(page: Page, check: dict[str, Any]) -> bool:
    """An element check read as bench/taskcheck reads it: a shown element of the role with the
    name among those it is drawn or labelled by."""
    spec = check["element"]
    seen = page.get_by_role(spec["role"]).evaluate_all(DESCRIBE)
    return any(e["shown"] and spec["name"] in e["names"] for e in seen)


def test_the_baskets_number_is_a_task_the_ticking_one_is_not(output: Path, page: Page) -> None:
    found = task_rows(output, "basket-add")
    basket = found["count:button:Basket 1:present:"]
    assert basket["kept"], basket
    assert basket["instruction"] == 'Make the "Basket" button show 1'
    assert json.loads(basket["check_json"]) == BASKET
    ticking = [r for effect, r in found.items() if "Online" in effect]
    assert ticking and all(r["dropped_at"] == "volatile" for r in ticking), ticking
    exported = exported_tasks(output, "basket")
    assert [t["check"] for t in exported] == [BASKET], exported
    # decided live, by code of our own: false at the start, true after the demonstration
    with static_server(SITES) as url:
        [task] = exported
        page.goto(task["start_url"].replace("site://", url))
        page.wait_for_timeout(300)
        assert not shows(page, task["check"])
        for action in task["actions"]:
            page.mouse.click(action["x"], action["y"])
        page.wait_for_timeout(300)
        assert shows(page, task["check"])
