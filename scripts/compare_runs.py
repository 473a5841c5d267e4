"""Compare two datagen outputs row by row, timing columns left out.

    python scripts/compare_runs.py OUT_A OUT_B

Used to prove a refactor changes no output: run the demo (fixed seed) before and after, then
compare. Rows are keyed by (episode_id, step_index, element_index) where the table has them;
timing columns (``*_ms``, ``duration_s``) and the run id are not compared. Screenshots are
compared by their decoded pixels' digest. Prints per table: rows in each, rows only in one,
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
from PIL import Image

TABLES = ("episodes", "steps", "grounding", "rejects")
KEYS = ("episode_id", "step_index", "element_index", "stage", "reason", "detail")
SKIPPED = {"run_id", "duration_s"}
LOOPBACK = re.compile(r"127\.0\.0\.1:\d+")  # the bundled sites' server port varies per run


def _plain(value: object) -> object:
    return LOOPBACK.sub("127.0.0.1:PORT", value) if isinstance(value, str) else value


def _image_digest(blob: bytes | None) -> str | None:
    if blob is None:
        return None
    pixels = Image.open(io.BytesIO(blob)).convert("RGB").tobytes()
    return hashlib.sha256(pixels).hexdigest()[:16]


def _rows(out: Path, table: str) -> dict[tuple[object, ...], dict[str, object]]:
    parts = sorted((out / table).glob("*.parquet"))
    if not parts:
        return {}
    data = pa.concat_tables([pq.read_table(p) for p in parts]).to_pylist()
    rows: dict[tuple[object, ...], dict[str, object]] = {}
    for row in data:
        kept = {k: _plain(v) for k, v in row.items() if k not in SKIPPED and not k.endswith("_ms")}
        for name in ("screenshot", "final_screenshot"):
            if name in kept:
                blob = kept[name]
                kept[name] = _image_digest(blob if isinstance(blob, bytes) else None)
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
        changed = [k for k in ra.keys() & rb.keys() if ra[k] != rb[k]]
        differences += len(only_a) + len(only_b) + len(changed)
        print(
            f"{table:10} rows {len(ra):5} vs {len(rb):5} · only in A {len(only_a)} · "
            f"only in B {len(only_b)} · differ {len(changed)}"
        )
        for key in sorted(changed, key=str)[:5]:
            cols = [c for c in ra[key] if ra[key][c] != rb[key].get(c)]
            print(f"    {key}: {cols[:6]}")
        for key in sorted(only_a | only_b, key=str)[:5]:
            print(f"    only in {'A' if key in only_a else 'B'}: {key}")
    print("identical" if not differences else f"{differences} rows differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(compare(Path(sys.argv[1]), Path(sys.argv[2])))
