"""The whole job through the CLI, as a subprocess: real LocalCluster, real Chromium, Parquet.

One reference run is shared by the module; the resume tests compare against it.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import yaml
from PIL import Image

from tests.conftest import closed_port

pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.slow]
TABLES = ("episodes", "steps", "grounding", "rejects")


def pipeline_file(folder: Path) -> Path:
    (folder / "extra.jsonl").write_text(
        json.dumps(
            {
                "id": "dead-link",
                "start_url": f"http://127.0.0.1:{closed_port()}/",
                "instruction": "x",
            }
        )
        + "\n"
    )
    spec = {
        "name": "cli-test",
        "sources": [{"type": "jsonl", "path": "extra.jsonl"}, {"type": "sites"}],
        "browser": {"viewport": {"width": 1024, "height": 640}, "device_scale_factor": 1.5},
        "cluster": {"workers": 2, "sessions_per_worker": 3, "dashboard": ":0"},
        "run": {"max_steps": 5, "tasks_per_shard": 3, "limit": 12, "seed": 7},
        "output": {"uri": "unused"},
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def datagen(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "datagen", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


def rows(out: Path, table: str) -> list[dict]:  # type: ignore[type-arg]
    return ds.dataset(out / table, format="parquet").to_table().to_pylist()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    pipeline_file(folder)
    return folder


@pytest.fixture(scope="module")
def reference(workdir: Path) -> Path:
    out = workdir / "reference"
    result = datagen("run", str(workdir / "pipeline.yaml"), "--output", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Dask dashboard: http://127.0.0.1:" in result.stdout
    return out


def check_dataset(out: Path, width: int, height: int) -> dict[str, list[dict]]:  # type: ignore[type-arg]
    """What every run's output must satisfy; returns the tables' rows."""
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"] and not manifest["shards"]["missing"]
    tables = {t: rows(out, t) for t in TABLES}
    for table, table_rows in tables.items():
        assert manifest["tables"][table]["rows"] == len(table_rows)
        assert len({r["run_id"] for r in table_rows} | {manifest["run_id"]}) == 1
        assert all(r["browser_version"].startswith("chromium/") for r in table_rows)
    assert sum(e["n_steps"] for e in tables["episodes"]) == len(tables["steps"])
    for step in tables["steps"]:
        image = Image.open(io.BytesIO(step["screenshot"]["bytes"]))
        image.load()  # decodes the whole image, not just its header
        assert image.size == (width, height) == (step["image_width"], step["image_height"])
        if step["x_px"] is not None:
            assert 0 <= step["x_px"] < width and 0 <= step["y_px"] < height
    for g in tables["grounding"]:
        x1, y1, x2, y2 = g["bbox_px"]
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height and g["referring_expression"]
    assert "config_name: steps" in (out / "README.md").read_text()
    return tables


def test_dataset_is_complete_and_consistent(reference: Path) -> None:
    tables = check_dataset(reference, 1536, 960)
    assert len(tables["episodes"]) == 11  # 11 bundled-site tasks; the dead link became a reject
    assert [r["task_id"] for r in tables["rejects"] if r["reason"] == "navigation_failed"] == [
        "dead-link"
    ]
    assert any(e["success"] for e in tables["episodes"])


def test_demo_pipeline_meets_the_promise(tmp_path: Path) -> None:
    """The README's main job: >= 5 sites, >= 25 episodes, >= 200 steps, some solved."""
    pipeline = Path(__file__).parents[2] / "pipelines" / "demo.yaml"
    result = datagen("run", str(pipeline), "--output", str(tmp_path / "demo"))
    assert result.returncode == 0, result.stdout + result.stderr
    tables = check_dataset(tmp_path / "demo", 1280, 800)
    episodes = tables["episodes"]
    assert len({e["site"] for e in episodes}) >= 5
    assert len(episodes) >= 25 and len(tables["steps"]) >= 200
    assert sum(bool(e["success"]) for e in episodes) >= 5
    assert len(tables["grounding"]) >= len(tables["steps"])


def test_datasets_loads_images(reference: Path) -> None:
    datasets = pytest.importorskip("datasets")
    steps = datasets.load_dataset(
        "parquet", data_files=str(reference / "steps" / "*.parquet"), split="train"
    )
    assert isinstance(steps.features["screenshot"], datasets.Image)
    assert steps[0]["screenshot"].size == (1536, 960)
    episodes = datasets.load_dataset(
        "parquet", data_files=str(reference / "episodes" / "*.parquet"), split="train"
    )
    assert episodes[0]["final_screenshot"].size == (1536, 960)


def test_rerun_skips_completed_shards(reference: Path, workdir: Path) -> None:
    before = {t: len(rows(reference, t)) for t in TABLES}
    result = datagen("run", str(workdir / "pipeline.yaml"), "--output", str(reference))
    assert result.returncode == 0, result.stderr
    assert "already committed" in result.stdout
    assert {t: len(rows(reference, t)) for t in TABLES} == before


def test_killed_run_resumes_without_duplicates(reference: Path, workdir: Path) -> None:
    out = workdir / "killed"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "datagen",
            "run",
            str(workdir / "pipeline.yaml"),
            "--output",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    total = json.loads((reference / "_manifest.json").read_text())["shards"]["expected"]
    deadline = time.monotonic() + 240
    done = 0
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            done = (
                len(list((out / "_markers").glob("*.json"))) if (out / "_markers").exists() else 0
            )
            if done:
                break
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert 0 < done < total, f"kill came at {done} of {total} shards: not halfway"
    assert not (out / "_manifest.json").exists()

    result = datagen("run", str(workdir / "pipeline.yaml"), "--output", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((out / "_manifest.json").read_text())["complete"]
    for table, key in (("episodes", ("episode_id",)), ("steps", ("episode_id", "step_index"))):
        got = Counter(tuple(r[k] for k in key) for r in rows(out, table))
        want = Counter(tuple(r[k] for k in key) for r in rows(reference, table))
        assert max(got.values()) == 1, f"duplicate {table} rows"
        if table == "episodes":
            assert got == want  # exactly the reference's episodes, each once
