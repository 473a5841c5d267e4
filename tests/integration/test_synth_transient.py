"""A toast is no task (issue 43): a synthesised task's check must still hold a moment after its
demonstration, where the page says it in a message that goes by itself.

The page of our own (tests/fixtures/synth_toast/draft) answers "Save draft" twice: a line that
stays ("Your draft is saved") and a toast in a live region (role=status) that goes 2.5 s later
("Draft saved ✓"). Both hold after the demonstration on two sealed replays and both have words
(`Press "Save draft"`): without a look a moment later, the toast's check was kept (and, first
by its effect's name, was the one exported for those words). It is dropped as `transient`; the
line is the task.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import exported_tasks, synthesised, task_rows

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's task run scripted, synthesis on, in the run of pages of our own that
    test_synth_runwide and test_synth_count read too; the task list exported."""
    return synthesised(tmp_path_factory)


def test_the_toast_is_dropped_as_transient_and_the_line_that_stays_is_the_task(
    output: Path,
) -> None:
    found = task_rows(output, "draft-save")
    toast, line = found["text:Draft saved ✓"], found["text:Your draft is saved"]
    assert (toast["kept"], toast["dropped_at"]) == (False, "transient"), toast
    assert line["kept"] and line["instruction"] == 'Press "Save draft"', line
    listed = exported_tasks(output, "draft")
    assert [t["check"] for t in listed] == [{"text_present": "Your draft is saved"}]
    card = (output / "exports" / "tasks" / "README.md").read_text()
    assert "| transient | 1 |" in card, card  # the other pages' tasks have none
