"""`grounding`: (screenshot, referring expression) → point and box samples, one per grounding
row, for SeeClick / UGround / OS-Atlas style grounding SFT.

    ShardData ─► grounding_rows(shard, options) ─► data/part-<shard>.parquet

The image is the screenshot of the step the element was seen on (the `steps` row with the same
episode and step). `expression` is the DOM-derived referring expression (`expression_kind` says
what singles the element out); `model_expression` is a model-written one kept only when it
grounded back inside the box (null otherwise). `point` (the element's hit-tested centre) and
`bbox` (`[x1, y1, x2, y2]`) are in the export's convention (`coords`). Every grounding row of a
committed shard is exported, whatever its episode's outcome: the annotation is about the page,
not the task.
"""

from __future__ import annotations

import pyarrow as pa

from datagen.export.coords import to_box, to_point
from datagen.export.options import ExportOptions
from datagen.export.parquet import IMAGE
from datagen.export.source import Row, ShardData

SCHEMA = pa.schema(
    [
        ("image", IMAGE),
        ("expression", pa.string()),
        ("expression_kind", pa.string()),
        ("model_expression", pa.string()),
        ("point", pa.list_(pa.float64(), 2)),
        ("bbox", pa.list_(pa.float64(), 4)),
        ("coords", pa.string()),
        ("image_width", pa.int64()),
        ("image_height", pa.int64()),
        ("role", pa.string()),
        ("tag", pa.string()),
        ("name", pa.string()),
        ("hit_test", pa.bool_()),
        ("url", pa.string()),
        ("run_id", pa.string()),
        ("task_id", pa.string()),
        ("episode_id", pa.string()),
        ("step_index", pa.int64()),
        ("element_index", pa.int64()),
    ]
)


def grounding_rows(shard: ShardData, options: ExportOptions) -> list[Row]:
    """One sample per grounding row whose step's screenshot is in the shard."""
    screenshots = {(s["episode_id"], s["step_index"]): s["screenshot"] for s in shard.steps}
    out: list[Row] = []
    for g in shard.grounding:
        image = screenshots.get((g["episode_id"], g["step_index"]))
        if image is None:  # a grounding row always has its step; guard against a hand-made part
            continue
        w, h = g["image_width"], g["image_height"]
        out.append(
            {
                "image": image,
                "expression": g["referring_expression"],
                "expression_kind": g.get("expression_kind") or "",
                "model_expression": g.get("model_expression"),
                "point": to_point(g["point_px"][0], g["point_px"][1], w, h, options.coords),
                "bbox": to_box(g["bbox_px"], w, h, options.coords),
                "coords": options.coords,
                "image_width": w,
                "image_height": h,
                **{k: g[k] for k in ("role", "tag", "name", "hit_test", "url", "run_id")},
                **{k: g[k] for k in ("task_id", "episode_id", "step_index", "element_index")},
            }
        )
    return out
