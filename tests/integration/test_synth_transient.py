"""A toast is no task (issue 43): a synthesised task's check must still hold a moment after its
demonstration, where the page says it in a message that goes by itself.

The page of our own (tests/fixtures/synth_toast/draft) answers "Save draft" twice: a line that
stays ("Your draft is saved") and a toast in a live region (role=status) that goes 1.5 s later
("Draft saved ✓"). Both hold after the demonstration on two sealed replays and both have words
(`Press "Save draft"`): without a look a moment later, the toast's check was kept (and, first
by its effect's name, was the one exported for those words). It is dropped as `transient`; the
line is the task.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import synthesised, task_rows

pytestmark = pytest.mark.browser
SITES = Path(__file__).resolve().parents[1] / "fixtures" / "synth_toast"


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's task run scripted, synthesis on; the task list exported."""
    return synthesised(tmp_path_factory.mktemp("toast"), SITES)


def test_the_toast_is_dropped_as_transient_and_the_line_that_stays_is_the_task(
    output: Path,
) -> None:
    found = task_rows(output)
    toast, line = found["text:Draft saved ✓"], found["text:Your draft is saved"]
    assert (toast["kept"], toast["dropped_at"]) == (False, "transient"), toast
    assert line["kept"] and line["instruction"] == 'Press "Save draft"', line
    listed = (output / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    assert [json.loads(t)["check"] for t in listed] == [{"text_present": "Your draft is saved"}]
    card = (output / "exports" / "tasks" / "README.md").read_text()
    assert "| transient | 1 |" in card, card
