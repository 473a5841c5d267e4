"""Compare two datagen outputs row by row, timing columns left out.

    python scripts/compare_runs.py OUT_A OUT_B

Used to prove a refactor changes no output: run the demo (fixed seed) before and after, then
compare. Rows are keyed by (episode, step_index, element_index) where the table has them, the
episode named by its task and repeat (its id is derived from the run id, which changes whenever
the set of settings that make up the run id changes); timing columns (``*_ms``, ``duration_s``)
and the run id are not compared. Screenshots are
compared by their pixels, a blinking caret's worth of difference (0.1%) allowed. Prints per table: rows in each, rows only in one,
rows that differ (with the first differing columns). Exit 1 on any difference.
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageChops

TABLES = ("episodes", "steps", "grounding", "rejects")
KEYS = ("episode_id", "step_index", "element_index", "stage", "reason", "detail")
SKIPPED = {"run_id", "duration_s"}
IMAGES = ("screenshot", "final_screenshot")
LOOPBACK = re.compile(r"127\.0\.0\.1:\d+")  # the bundled sites' server port varies per run


def _plain(value: object) -> object:
    return LOOPBACK.sub("127.0.0.1:PORT", value) if isinstance(value, str) else value


def _pixels_differ(a: object, b: object) -> bool:
    """Two screenshots differ in more than a blinking caret's worth of pixels (0.1%)."""
    if a == b:
        return False
    if not isinstance(a, bytes) or not isinstance(b, bytes):
        return True
    ia, ib = (Image.open(io.BytesIO(x)).convert("L") for x in (a, b))
    if ia.size != ib.size:
        return True
    diff = ImageChops.difference(ia, ib).point(lambda v: 255 if v > 24 else 0)
    changed = diff.histogram()[255]
    return changed > 0.001 * ia.size[0] * ia.size[1]


def _differs(ra: dict[str, object], rb: dict[str, object]) -> list[str]:
    """The columns of two rows that differ (screenshots by their pixels)."""
    cols = []
    for col, value in ra.items():
        other = rb.get(col)
        if col in IMAGES:
            if _pixels_differ(value, other):
                cols.append(col)
        elif value != other:
            cols.append(col)
    return cols


def _episode_names(out: Path) -> dict[str, str]:
    """episode_id → "task_id#repeat", from the run id and task ids in the rows."""
    pairs = set()
    for table in TABLES:
        for part in (out / table).glob("*.parquet"):
            t = pq.read_table(part, columns=["run_id", "task_id"])
            pairs |= set(zip(t["run_id"].to_pylist(), t["task_id"].to_pylist(), strict=True))
    names = {}
    for run_id, task_id in pairs:
        for repeat in range(100):
            digest = hashlib.sha256(f"{run_id}:{task_id}:{repeat}".encode()).hexdigest()
            names[digest[:16]] = f"{task_id}#{repeat}"
    return names


def _rows(out: Path, table: str) -> dict[tuple[object, ...], dict[str, object]]:
    parts = sorted((out / table).glob("*.parquet"))
    if not parts:
        return {}
    data = pa.concat_tables([pq.read_table(p) for p in parts]).to_pylist()
    names = _episode_names(out)
    rows: dict[tuple[object, ...], dict[str, object]] = {}
    for row in data:
        episode = str(row["episode_id"])
        for name in IMAGES:  # compared by their pixels; their paths carry the episode id
            if isinstance(row.get(name), dict):
                row[name] = row[name].get("bytes")
        row["episode_id"] = names.get(episode, episode)
        kept = {k: _plain(v) for k, v in row.items() if k not in SKIPPED and not k.endswith("_ms")}
        key = tuple(_plain(row.get(k)) for k in KEYS if k in row)
        while key in rows:  # identical keys (e.g. two equal rejects): keep both
            key = (*key, "dup")
        rows[key] = kept
    return rows


def compare(a: Path, b: Path) -> int:
    differences = 0
    for table in TABLES:
        ra, rb = _rows(a, table), _rows(b, table)
        only_a, only_b = ra.keys() - rb.keys(), rb.keys() - ra.keys()
        changed = [k for k in ra.keys() & rb.keys() if _differs(ra[k], rb[k])]
        differences += len(only_a) + len(only_b) + len(changed)
        print(
            f"{table:10} rows {len(ra):5} vs {len(rb):5} · only in A {len(only_a)} · "
            f"only in B {len(only_b)} · differ {len(changed)}"
        )
        for key in sorted(changed, key=str)[:5]:
            cols = _differs(ra[key], rb[key])
            print(f"    {key}: {cols[:6]}")
        for key in sorted(only_a | only_b, key=str)[:5]:
            print(f"    only in {'A' if key in only_a else 'B'}: {key}")
    print("identical" if not differences else f"{differences} rows differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(compare(Path(sys.argv[1]), Path(sys.argv[2])))
