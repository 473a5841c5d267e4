"""Sink: our Parquet writing against bare pyarrow writing the same rows.

Rows shaped like a shard of the demo: `--steps` step rows, each with a real 1280×800 JPEG
screenshot (a rendered page-like image, ~60-120 KB), and `--grounding` grounding rows per step.

- ours: `write_shard()` — pydantic rows → `model_dump` → Arrow with the explicit schema (HF
  image metadata) → Parquet (zstd, images stored uncompressed; steps in row groups of at most
  100 rows and 32 MB of images, grounding in groups of 256) → `LocalStorage.put` (temp file,
  fsync-free rename) → marker.
- bare: the same rows as plain dicts (dumped beforehand, not timed) → `pa.Table.from_pylist`
  (schema inferred) → `pq.write_table` with pyarrow's defaults to a local file.

Printed: MB/s of rows written by each (the rows' bytes, screenshots included, ÷ seconds; best
of `--repeats`), the Parquet sizes, and the ratio ours/bare.

    python -m bench.sink
    python -m bench.sink --steps 400 --json out.json

`--row-groups OUTPUT`: the row group size of the image tables on a real run's committed steps
(its screenshots): for each `--sizes`, one file written as the sink does, its bytes per row
group, write MB/s, and the time to the first row group (pyarrow) and to the first 10 rows
through `datasets` streaming, best of `--repeats` (docs/output.md, "Row groups").

    .venv/bin/datagen run pipelines/demo.yaml -o /tmp/rows-demo
    .venv/bin/python -m bench.sink --row-groups /tmp/rows-demo --sizes 25 50 100 256
"""

from __future__ import annotations

import io
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

from bench.harness import parser, print_columns, write_json
from datagen.records import GroundingRow, ImageData, ShardResult, StepRow
from datagen.sink.read import read_committed
from datagen.sink.schema import TABLES, compression
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import write_shard

BASE = {
    "run_id": "bench",
    "schema_version": "1",
    "task_id": "shop-01",
    "browser_version": "chromium/156",
}


def screenshot(seed: int) -> bytes:
    """A page-like image: header, text lines, buttons (JPEG compresses it like a real page)."""
    rng = random.Random(seed)
    image = Image.new("RGB", (1280, 800), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 1280, 64), fill=(30, 60, 120))
    for y in range(100, 780, 16):  # lines of "words": the high-frequency detail of text
        x = 40
        while x < rng.randint(500, 1200):
            w = rng.randint(8, 60)
            draw.rectangle((x, y, x + w, y + 9), fill=(rng.randint(20, 140),) * 3)
            x += w + rng.randint(4, 9)
    for _ in range(12):
        x, y = rng.randint(0, 1100), rng.randint(80, 740)
        draw.rectangle((x, y, x + 140, y + 36), fill=(rng.randint(0, 255), 120, 200))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=80)
    return out.getvalue()


def rows(steps: int, per_step: int) -> tuple[list[StepRow], list[GroundingRow]]:
    shots = [screenshot(i) for i in range(steps)]  # distinct: no dictionary can fold them
    step_rows, grounding = [], []
    for i in range(steps):
        episode = f"ep-{i // 10}"
        step_rows.append(
            StepRow(
                **BASE, episode_id=episode, playwright_version="1.65.2", datagen_version="bench",
                policy="explore", group_id="0123456789abcdef", sample_index=0,
                step_index=i % 10, url="http://127.0.0.1:8000/shop/",
                title="Shop", screenshot=ImageData(bytes=shots[i % len(shots)]),
                image_width=1280, image_height=800, viewport_width=1280, viewport_height=800,
                device_scale_factor=1.0, action_type="click", action_repr="click(x=640, y=400)",
                action_json='{"type":"click","x":640,"y":400}',
                action_description='Click the "Buy" button', x_px=640, y_px=400,
                x_norm=0.5, y_norm=0.5, target_selector="#buy", target_role="button",
                target_name="Buy", target_bbox_px=(600, 380, 680, 420), target_hit=True,
                n_elements=40, observe_ms=80.0, act_ms=30.0,
            )
        )  # fmt: skip
        for j in range(per_step):
            x, y = 20.0 * j % 1200, 18.0 * j % 760
            grounding.append(
                GroundingRow(
                    **BASE, episode_id=episode, step_index=i % 10, element_index=j,
                    referring_expression=f"the 'Item {j}' button", role="button", tag="button",
                    name=f"Item {j}", text=f"Item {j}", selector=f"#item-{j}",
                    bbox_px=(x, y, x + 80, y + 30), bbox_norm=(x / 1280, y / 800, (x + 80) / 1280, (y + 30) / 800),
                    bbox_css=(x, y, x + 80, y + 30), point_px=(x + 40, y + 15), image_width=1280,
                    image_height=800, hit_test=True, url="http://127.0.0.1:8000/shop/",
                )
            )  # fmt: skip
    return step_rows, grounding


def ours(folder: Path, steps: list[StepRow], grounding: list[GroundingRow]) -> tuple[float, int]:
    storage = LocalStorage(folder)
    started = time.perf_counter()
    stats = ShardResult(
        shard=0,
        tasks=0,
        episodes=0,
        steps=len(steps),
        grounding=len(grounding),
        rejects=0,
        solved=0,
        reject_reasons={},
        seconds=0.0,
    )
    marker = write_shard(storage, 0, {"steps": steps, "grounding": grounding}, stats)
    seconds = time.perf_counter() - started
    return seconds, sum(f.bytes for f in marker.files)


def bare(
    folder: Path, steps: list[dict[str, object]], grounding: list[dict[str, object]]
) -> tuple[float, int]:
    started = time.perf_counter()
    size = 0
    for name, table_rows in (("steps", steps), ("grounding", grounding)):
        path = folder / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist(table_rows), path)
        size += path.stat().st_size
    return time.perf_counter() - started, size  # fmt: skip


def write(table: pa.Table, path: Path, row_group_size: int) -> float:
    """Seconds to write `table` as the sink does, at `row_group_size` rows per group."""
    started = time.perf_counter()
    codecs = compression(TABLES["steps"])
    with pq.ParquetWriter(path, table.schema, compression=codecs) as writer:
        writer.write_table(table, row_group_size=row_group_size)
    return time.perf_counter() - started


def first_group_s(path: Path) -> float:
    started = time.perf_counter()
    pq.ParquetFile(path).read_row_group(0)
    return time.perf_counter() - started


def first_rows_s(path: Path, rows: int = 10) -> float:
    """Seconds from `load_dataset(..., streaming=True)` to `rows` decoded rows."""
    from datasets import load_dataset  # type: ignore[import-untyped]

    started = time.perf_counter()
    stream = load_dataset("parquet", data_files=str(path), split="train", streaming=True)
    for index, row in enumerate(stream):
        assert row["screenshot"].size[0] > 0  # decoded to a PIL image
        if index + 1 == rows:
            break
    return time.perf_counter() - started


def row_group(table: pa.Table, folder: Path, size: int, repeats: int) -> dict[str, Any]:
    path = folder / f"steps-{size}.parquet"
    write_s = min(write(table, path, size) for _ in range(repeats))
    meta = pq.ParquetFile(path).metadata
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    on_disk = [sum(g.column(c).total_compressed_size for c in range(g.num_columns)) for g in groups]
    in_memory = [g.total_byte_size for g in groups]
    streamed = [first_rows_s(path) for _ in range(repeats)]
    return {
        "row_group_rows": size,
        "row_groups": len(groups),
        "group_mb_on_disk_mean": round(sum(on_disk) / len(on_disk) / 1e6, 2),
        "group_mb_on_disk_max": round(max(on_disk) / 1e6, 2),
        "group_mb_in_memory_max": round(max(in_memory) / 1e6, 2),
        "file_mb": round(path.stat().st_size / 1e6, 2),
        "write_mb_per_s": round(table.nbytes / 1e6 / write_s, 1),
        "first_group_ms": round(min(first_group_s(path) for _ in range(repeats)) * 1000, 1),
        "first_10_rows_streaming_ms": round(min(streamed) * 1000, 1),
    }


def row_groups(output: str, sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    table = read_committed(output, "steps").to_table()
    images = sum(len(s["bytes"]) for s in table.column("screenshot").to_pylist())
    print(
        f"{table.num_rows} step rows, {table.nbytes / 1e6:.1f} MB in Arrow "
        f"({images / table.num_rows / 1e3:.0f} KB screenshots on average)"
    )
    results = []
    first_rows_s(Path(read_committed(output, "steps").files[0]))  # imports, caches: warm
    shm = Path("/dev/shm")  # memory-backed when there is one: CPU is measured, not the disk
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        for size in sizes:
            results.append(row_group(table, Path(tmp), size, repeats))
    print_columns({f"{r['row_group_rows']} rows a group": r for r in results})
    return results


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--steps", type=int, default=300, help="step rows (one shard)")
    p.add_argument("--grounding", type=int, default=12, help="grounding rows per step")
    p.add_argument("--repeats", type=int, default=None, help="best of (default 7; --row-groups 5)")
    p.add_argument("--row-groups", metavar="OUTPUT", help="a datagen output: its steps' row groups")
    p.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 256])
    args = p.parse_args()
    if args.row_groups:
        write_json(args.json, row_groups(args.row_groups, args.sizes, args.repeats or 5))
        return
    args.repeats = args.repeats or 7
    step_rows, grounding = rows(args.steps, args.grounding)
    step_dicts = [r.model_dump() for r in step_rows]
    grounding_dicts = [r.model_dump() for r in grounding]
    best: dict[str, tuple[float, int]] = {}
    shm = Path("/dev/shm")  # memory-backed when there is one: CPU is measured, not the disk
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
        for i in range(args.repeats):  # alternate, so that slow moments fall on both
            for name in ("ours", "bare"):
                folder = Path(tmp) / f"{name}-{i}"
                folder.mkdir()
                seconds, size = (
                    ours(folder, step_rows, grounding)
                    if name == "ours"
                    else bare(folder, step_dicts, grounding_dicts)
                )
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, size)
    screenshots = sum(len(r.screenshot.bytes) for r in step_rows)
    other = sum(len(json.dumps(d, default=str)) for d in grounding_dicts) + sum(
        len(json.dumps({k: v for k, v in d.items() if k != "screenshot"})) for d in step_dicts
    )
    payload = screenshots + other  # the rows' bytes: images, and the rest as compact JSON
    print(
        f"{args.steps} steps + {args.steps * args.grounding} grounding rows, {payload / 1e6:.1f} MB"
    )
    results = {
        name: {"seconds": round(seconds, 4), "parquet_mb": round(size / 1e6, 2)}
        | {"mb_per_s": round(payload / 1e6 / seconds, 1)}
        for name, (seconds, size) in best.items()
    }
    print_columns(results)
    ratio = results["ours"]["mb_per_s"] / results["bare"]["mb_per_s"]
    print(f"ratio rows MB/s written to Parquet (ours/bare): {ratio:.2f}")
    write_json(args.json, {"results": results, "ratio": round(ratio, 3)})


if __name__ == "__main__":
    main()
