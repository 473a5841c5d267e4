"""Typed records that cross stage boundaries, and the output rows derived from them.

Stage packages (source, browser, policy, annotate, validate, sink) talk to each other only
through these frozen models. The output tables' Arrow schemas and the JSON Schemas in
`schemas/` are generated from the `*Row` models (`rows.py`, see `sink/schema.py`), so the
output schema is defined exactly once.

    tasks.py         SuccessCheck, TaskSpec                    source ─► pipeline
    state.py         PageState, ElementCheck: checks decided offline and live alike
    actions.py       the action vocabulary, action_repr/json   policy ─► browser, rows
    observations.py  Box, Element, Observation, ModelTrace, Decision   browser ─► policy
    rows.py          StepRow, EpisodeRow, GroundingRow, RejectRow, RejectReason   ─► sink
    shards.py        ShardResult, Resumed                      worker ─► driver

Coordinate conventions:
- `Box` and `Element.box` are CSS pixels in viewport space (what `getBoundingClientRect` says).
- Actions and every `*_px` column are **screenshot pixels** (CSS px × device_scale_factor),
  what a pure-vision agent sees; `*_norm` columns are the same divided by the image size, in [0, 1].
- Boxes in rows are `[x1, y1, x2, y2]`.
"""

from datagen.records.actions import (
    Action,
    Back,
    Click,
    Done,
    Goto,
    Key,
    Scroll,
    TypeText,
    Wait,
    action_json,
    action_repr,
)
from datagen.records.base import Frozen
from datagen.records.observations import Box, Decision, Element, ModelTrace, Observation
from datagen.records.rows import (
    BoxPx,
    EpisodeRow,
    GroundingRow,
    ImageData,
    Provenance,
    RejectReason,
    RejectRow,
    RowBase,
    StepRow,
)
from datagen.records.shards import Resumed, ShardResult
from datagen.records.state import ElementCheck, ElementState, PageState
from datagen.records.taskrow import TaskRow
from datagen.records.tasks import SuccessCheck, TaskSpec

__all__ = [
    "Action",
    "Back",
    "Box",
    "BoxPx",
    "Click",
    "Decision",
    "Done",
    "Element",
    "ElementCheck",
    "ElementState",
    "EpisodeRow",
    "Frozen",
    "Goto",
    "GroundingRow",
    "ImageData",
    "Key",
    "ModelTrace",
    "Observation",
    "PageState",
    "Provenance",
    "RejectReason",
    "RejectRow",
    "Resumed",
    "RowBase",
    "Scroll",
    "ShardResult",
    "StepRow",
    "SuccessCheck",
    "TaskRow",
    "TaskSpec",
    "TypeText",
    "Wait",
    "action_json",
    "action_repr",
]
