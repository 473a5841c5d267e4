"""Issue 34 on real Chromium: explore finishes what it starts. On a list page whose one input
adds an item on Enter only (no button; a link out of scope beside it:
tests/fixtures/pages/explore/enter-list.html), explore episodes with the default settings
type a value and press Enter before anything new, so the item is added; none ends on
`nothing new` with the value typed and unsubmitted. Whether the item was added is read from
the page itself (its title counts the items, recorded on each step row), not from datagen's
element scan.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datagen.pipeline import run_episode
from datagen.records import TaskSpec
from datagen.source.serve import SiteServer
from tests.helpers import Local, ReadyPlugin, make_config

pytestmark = pytest.mark.browser
EPISODES = 8


def test_explore_adds_the_item_on_an_enter_only_list(
    browser_plugin: ReadyPlugin, pages: SiteServer, tmp_path: Path
) -> None:
    config = make_config(tmp_path, run={"max_steps": 6, "seed": 11})
    ctx = Local(browser_plugin).context(config, run_id="enter")
    task = TaskSpec(
        id="enter-list", start_url=pages.base_url + "explore/enter-list.html", instruction="x"
    )
    outcomes = [browser_plugin.run(run_episode(task, r, ctx)) for r in range(EPISODES)]
    added = 0
    for outcome in outcomes:
        titles = [s.title for s in outcome.steps]
        said = [s.action_description for s in outcome.steps]
        print(titles, said)
        typed = [i for i, s in enumerate(outcome.steps) if s.action_type == "type"]
        # after a typing, Enter in that field is the very next step (when the budget allows)
        for i in typed:
            if i + 1 < len(outcome.steps):
                assert outcome.steps[i + 1].action_description.startswith("Press Enter in"), said
        added += any(t != "List (0)" for t in titles[1:])
        # the field is said as it shows itself (its placeholder), never by its aria-label
        assert not [d for d in said if "New Todo Input" in d], said
    assert added >= EPISODES - 1, f"{added} of {EPISODES} episodes added the item"
