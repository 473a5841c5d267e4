"""The grounding oracle (`oracle/`) is the independent check of datagen's element scan: it
must not import datagen, or a bug they share would pass it."""

import subprocess
import sys
from pathlib import Path

from oracle.anchors import DrawnText, gap, nearest_is, placed

REPO = Path(__file__).resolve().parents[2]


def test_the_oracle_imports_no_datagen() -> None:
    probe = (
        "import sys, oracle, oracle.anchors, oracle.judge, oracle.motion, oracle.targets; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'datagen'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


# The oracle's own rule for anchors quoted from outside a row (oracle/anchors.py): a quote is
# fine where it is the drawn text nearest the element, or its group, on the side stated.

FIELD = (20.0, 100.0, 260.0, 124.0)
CAPTION = DrawnText("Your nickname", (20.0, 126.0, 120.0, 142.0))  # drawn under the field
HEADING = DrawnText("Profile", (20.0, 60.0, 80.0, 80.0))  # above it, farther
FAR_BELOW = DrawnText("Terms", (20.0, 200.0, 70.0, 214.0))


def test_a_caption_drawn_below_its_field_places_it_above_not_below() -> None:
    texts = [CAPTION, HEADING, FAR_BELOW]
    assert placed("Your nickname", 'the empty text field above "Your nickname"', FIELD, [], texts)
    assert not placed(
        "Your nickname", 'the empty text field below "Your nickname"', FIELD, [], texts
    )
    assert placed("Profile", 'the empty text field below "Profile"', FIELD, [], texts)
    # on the stated side, but not the nearest text there
    assert not placed("Terms", 'the empty text field above "Terms"', FIELD, [], texts)
    # a quote that is no anchor (a name) is never placed
    assert not placed("Your nickname", 'the "Your nickname" text field', FIELD, [], texts)


def test_a_group_anchor_is_nearest_the_group_not_the_member() -> None:
    boxes = [(20.0, 100.0 + 30 * i, 33.0, 113.0 + 30 * i) for i in range(3)]  # a column
    tasks = DrawnText("Tasks", (20.0, 70.0, 70.0, 90.0))
    note = DrawnText("Note", (40.0, 132.0, 80.0, 144.0))  # right of the second box only
    said = 'the third of three checkboxes in the list below "Tasks"'
    assert placed("Tasks", said, boxes[2], boxes, [tasks, note])
    for wrong in ('in the list below "Note"', 'in the list above "Tasks"'):
        said = f"the third of three checkboxes {wrong}"
        assert not placed(said.split('"')[1], said, boxes[2], boxes, [tasks, note]), said
    # the group's box, not the member's: "Note" lies right of the list (beside its second box)
    assert placed("Note", 'the third of three checkboxes in the list left of "Note"',
                  boxes[2], boxes, [tasks, note])  # fmt: skip
    assert not placed("Note", 'the checkbox left of "Note"', boxes[2], boxes, [tasks, note])
    assert gap(boxes[1], note.box, "right") == 7.0
    assert nearest_is("Note", boxes[1], "right", [tasks, note])
