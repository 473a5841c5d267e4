"""An independent judge of grounding rows: its own Playwright code, never datagen's element scan.

    targets = await ground_truth(page)                     # what a person could click, now
    verdict = await judge(page, rows, screenshot, scale)   # datagen's rows for that moment
    later = await settled_changes(page, verdict.targets)   # was that moment the settled page?
    gaps = await annotation_gaps(page)                     # is the page's annotation complete?

This package must not import `datagen` (nor anything that does): it is the independent check
of datagen's scan, and a shared bug would pass it. Benches (`bench/grounding.py`,
`bench/episodes.py`) and integration tests import it alike; it does not ship in the wheel.

    targets.py   ground truth: the page author's `data-gt` annotation (or discovery by role
                 queries and CDP listeners), boxes, visibility, the real-click hit test
    motion.py    was the judged moment the settled page; rows of moving targets
    judge.py     each row correct | wrong | moving | unjudged; precision, recall, disagreement
    anchors.py   is a quoted anchor the drawn text nearest its element (or group) on its side
"""

from oracle.judge import (
    BOX_SLACK,
    MIN_COLOUR_SHARE,
    PageVerdict,
    RowLike,
    RowVerdict,
    judge,
    outside_row,
    shown_text,
)
from oracle.motion import moving_match, settled_changes
from oracle.targets import (
    KINDS,
    Box,
    Gaps,
    Hit,
    Point,
    Rgb,
    Target,
    annotation_gaps,
    click,
    ground_truth,
    put_pointer_back,
)

__all__ = [
    "BOX_SLACK",
    "KINDS",
    "MIN_COLOUR_SHARE",
    "Box",
    "Gaps",
    "Hit",
    "PageVerdict",
    "Point",
    "Rgb",
    "RowLike",
    "RowVerdict",
    "Target",
    "annotation_gaps",
    "click",
    "ground_truth",
    "judge",
    "moving_match",
    "outside_row",
    "put_pointer_back",
    "settled_changes",
    "shown_text",
]
