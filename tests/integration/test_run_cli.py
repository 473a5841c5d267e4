"""The whole job through the CLI, as a subprocess: real LocalCluster, real Chromium, Parquet.

One reference run is shared by the module; the resume tests compare against it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

from tests.helpers import TABLES, ReadyPlugin, check_dataset, closed_port, datagen, rows

# each test chains CLI runs bounded at 300 s apiece
pytestmark = [pytest.mark.browser, pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(900)]


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
        # 127.0.0.1 allowed: the dead link must fail by connection, not by the URL guard
        "browser": {
            "viewport": {"width": 1024, "height": 640},
            "device_scale_factor": 1.5,
            "allow": ["127.0.0.1"],
        },
        "cluster": {"workers": 2, "sessions_per_worker": 3, "dashboard": "127.0.0.1:0"},
        "run": {"max_steps": 5, "tasks_per_shard": 3, "limit": 12, "seed": 7},
        "output": {"uri": "unused"},
    }
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


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


def test_dataset_is_complete_and_consistent(reference: Path) -> None:
    tables = check_dataset(reference, 1536, 960)
    assert len(tables["episodes"]) == 11  # 11 bundled-site tasks; the dead link became a reject
    assert [r["task_id"] for r in tables["rejects"] if r["reason"] == "unreachable"] == [
        "dead-link"  # a refused connection: the network's answer, not a failed page
    ]
    assert any(e["success"] for e in tables["episodes"])


def test_run_report_holds_the_live_figures_and_the_latencies(reference: Path) -> None:
    html = (reference / "_report.html").read_text()
    steps = len(rows(reference, "steps"))
    # curves exist only if the workers' heartbeats carried datagen's metrics to the scheduler
    assert "browser steps per second" in html and '"worker 0"' in html and '"worker 1"' in html
    # histograms are made from the committed steps table, every step of it
    assert "observe (screenshot + DOM), ms: p50" in html and f"n {steps}" in html


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
    # the demo synthesises tasks: its card and `inspect` name their table with the others
    assert (
        "\n- `tasks`: one row per task candidate" in (tmp_path / "demo" / "README.md").read_text()
    )
    seen = datagen("inspect", str(tmp_path / "demo"))
    assert seen.returncode == 0 and "'tasks':" in seen.stdout, seen.stdout + seen.stderr


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


def test_datasets_loads_each_table_of_a_run_with_an_empty_shard(tmp_path: Path) -> None:
    """One shard whose only task is blocked (no episode: its episodes, steps and grounding
    parts have no rows) beside one with an episode: `datasets` loads every table through the
    dataset card, `steps` by default, and the files are readable by the group."""
    datasets = pytest.importorskip("datasets")
    (tmp_path / "blocked.jsonl").write_text(
        json.dumps({"id": "blocked", "start_url": "http://169.254.169.254/", "instruction": "x"})
        + "\n"
    )
    spec = {
        "name": "empty-shard",
        "sources": [{"type": "jsonl", "path": "blocked.jsonl"}, {"type": "sites"}],
        "cluster": {"workers": 1, "sessions_per_worker": 2, "dashboard": "127.0.0.1:0"},
        "run": {"max_steps": 2, "tasks_per_shard": 1, "limit": 2},
        "output": {"uri": "unused"},
    }
    (tmp_path / "pipeline.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    with umask(0o002):  # a team's: group-writable
        result = datagen("run", str(tmp_path / "pipeline.yaml"), "--output", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    markers = [json.loads(p.read_text()) for p in (out / "_markers").glob("*.json")]
    empty = [m for m in markers if not m["stats"].get("episodes")]
    assert len(markers) == 2 and len(empty) == 1  # one shard with no episode
    assert {p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()} == {0o664}
    manifest = json.loads((out / "_manifest.json").read_text())
    cache = str(tmp_path / "cache")
    for table in TABLES:
        loaded = datasets.load_dataset(str(out), table, split="train", cache_dir=cache)
        assert loaded.num_rows == manifest["tables"][table]["rows"] > 0, table
    default = datasets.load_dataset(str(out), split="train", cache_dir=cache)
    assert default.num_rows == manifest["tables"]["steps"]["rows"]
    assert default[0]["screenshot"].size == (1280, 800)


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


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


# a page's timers decide these between two captures: the shop's "Added ✓" reverts after 1.2 s
# (a box mid-change: unstable_box) and its toast hides after 2.2 s (what lay under it: occluded)
TIMED = {"grounding", "unstable_box", "occluded"}


def assert_same_rows(got: dict[str, list[dict[str, Any]]], reference: Path) -> None:
    """The same episodes and steps as the reference run, and every element it saw accounted for
    once, as the same row: a grounding row or a reject with the same reason. On a loaded machine
    a capture can meet a bundled page's timer at another moment, so an element may move between
    grounding, `unstable_box` and `occluded`, at most two of them; nothing else may differ."""
    for table, key in (("episodes", ("episode_id",)), ("steps", ("episode_id", "step_index"))):
        assert Counter(tuple(r[k] for k in key) for r in got[table]) == Counter(
            tuple(r[k] for k in key) for r in rows(reference, table)
        ), table

    def verdicts(tables: dict[str, list[dict[str, Any]]]) -> tuple[dict[Any, str], Counter[str]]:
        """Each element's verdict by (episode, step, element), and the rejects of no element."""
        by_element: dict[Any, str] = {}
        for row in tables["grounding"]:
            key = (row["episode_id"], row["step_index"], row["element_index"])
            assert key not in by_element, f"element {key} twice"
            by_element[key] = "grounding"
        others: Counter[str] = Counter()
        for row in tables["rejects"]:
            if row["element_index"] is None:
                others[row["reason"]] += 1
                continue
            key = (row["episode_id"], row["step_index"], row["element_index"])
            assert key not in by_element, f"element {key} twice"
            by_element[key] = row["reason"]
        return by_element, others

    mine, mine_others = verdicts(got)
    want, want_others = verdicts({t: rows(reference, t) for t in ("grounding", "rejects")})
    assert mine.keys() == want.keys()  # every element, once
    assert mine_others == want_others
    moved = {k: (want[k], mine[k]) for k in want if mine[k] != want[k]}
    assert all({a, b} <= TIMED for a, b in moved.values()), moved
    assert len(moved) <= 2, moved


def test_s3_output_with_transient_failures_reads_back_everywhere(
    reference: Path, workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full run to s3:// (moto's server over HTTP) through a proxy that throttles every 3rd
    upload: the committed rows equal the reference run's, once each, readable by pyarrow,
    DuckDB and `datasets` with images intact; no secret reaches the output."""
    import boto3

    from datagen import read_committed
    from tests.s3server import CREDENTIALS, FlakyProxy, moto_s3

    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    with moto_s3() as endpoint, FlakyProxy(endpoint, every=3) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.url)  # boto3's own variable
        result = datagen(
            "run", str(workdir / "pipeline.yaml"), "--output", "s3://datagen-test/runs/one"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert proxy.failed >= 3  # uploads really failed on the way, and were retried
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
        uri = "s3://datagen-test/runs/one"
        got = {t: read_committed(uri, t).to_table() for t in TABLES}
        # exactly what the run committed, every table: its manifest's counts, read back
        s3 = boto3.client("s3", endpoint_url=endpoint)
        body = s3.get_object(Bucket="datagen-test", Key="runs/one/_manifest.json")["Body"]
        manifest = json.loads(body.read())
        assert {t: table.num_rows for t, table in got.items()} == {
            t: manifest["tables"][t]["rows"] for t in TABLES
        }
        assert_same_rows({t: table.to_pylist() for t, table in got.items()}, reference)
        episode_ids = got["episodes"].column("episode_id").to_pylist()
        assert sorted(episode_ids) == sorted(r["episode_id"] for r in rows(reference, "episodes"))
        want = {t: len(rows(reference, t)) for t in TABLES}
        step = got["steps"].slice(0, 1).to_pylist()[0]
        assert Image.open(io.BytesIO(step["screenshot"]["bytes"])).size == (1536, 960)

        duckdb = pytest.importorskip("duckdb")
        steps_arrow = got["steps"]  # noqa: F841 - DuckDB finds it by name
        counted = duckdb.sql("select count(distinct episode_id) from steps_arrow").fetchall()[0][0]
        assert counted == len(episode_ids)

        keys = [
            o["Key"]
            for o in s3.list_objects_v2(Bucket="datagen-test", Prefix="runs/one/")["Contents"]
        ]
        for key in keys:
            body = s3.get_object(Bucket="datagen-test", Key=key)["Body"].read()
            assert CREDENTIALS["AWS_SECRET_ACCESS_KEY"].encode() not in body
            if key.startswith("runs/one/steps/"):
                (tmp_path / key.rsplit("/", 1)[-1]).write_bytes(body)
        assert "runs/one/_manifest.json" in keys and "runs/one/README.md" in keys
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "*.parquet"), split="train")
    assert loaded.num_rows == want["steps"] and loaded[0]["screenshot"].size == (1536, 960)


def test_worker_killed_mid_shard_leaves_each_row_once(reference: Path, workdir: Path) -> None:
    """SIGKILL one Dask worker while shards run: the nanny restarts it, the shard runs again,
    and the committed rows are the reference's, each once."""
    import psutil

    out = workdir / "worker-killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "datagen", "run", str(workdir / "pipeline.yaml"), "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # a full pipe would block the run
    )  # fmt: skip
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        steps_started = (out / "_run.json").exists()
        workers = [
            p for p in psutil.Process(proc.pid).children() if "spawn_main" in " ".join(p.cmdline())
        ]
        browsers_busy = steps_started and any(len(w.children(recursive=True)) > 3 for w in workers)
        if (
            browsers_busy
            and len(list((out / "_markers").glob("*.json")) if (out / "_markers").exists() else [])
            >= 1
        ):
            killed = workers[0]
            killed.kill()
        time.sleep(0.2)
    proc.wait(timeout=300)
    assert killed is not None, "no worker was killed: the run ended first"
    if proc.returncode != 0:  # a shard may exhaust its retries; a rerun finishes it
        rerun = datagen("run", str(workdir / "pipeline.yaml"), "--output", str(out))
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["complete"]
    for table in ("episodes", "steps"):
        got = Counter(r["episode_id"] for r in rows(out, table))
        want = Counter(r["episode_id"] for r in rows(reference, table))
        assert set(got) == set(want)
        if table == "episodes":
            assert got == want  # one row per episode, none duplicated by the retry


def test_inspect_summary_and_gallery_drawn_where_the_data_says(
    reference: Path, tmp_path: Path, browser_plugin: ReadyPlugin
) -> None:
    page_file = tmp_path / "gallery.html"
    result = datagen("inspect", str(reference), "--html", str(page_file), "--episodes", "3")
    assert result.returncode == 0, result.stderr
    assert (
        "success rate" in result.stdout and "1536x960" in result.stdout and "rows" in result.stdout
    )

    async def look() -> tuple[Any, dict[str, Any], bytes]:  # figures: what the page's JS says
        async with browser_plugin.host.session() as session:
            # set_content: the page is self-contained, and file: URLs are the URL guard's to refuse
            await session.page.set_content(page_file.read_text(encoding="utf-8"))
            figures = await session.page.evaluate(
                """() => [...document.querySelectorAll('figure.step')].map(f => {
                    const r = f.querySelector('.shot').getBoundingClientRect();
                    const c = f.querySelector('circle.click');
                    return {step: +f.dataset.step, box: [r.x, r.y, r.width, r.height],
                            click: c ? [+c.getAttribute('cx'), +c.getAttribute('cy')] : null,
                            episode: f.closest('section').id};
                })"""
            )
            clicked = next(f for f in figures if f["click"] and f["box"][1] + f["box"][3] < 800)
            await session.page.set_viewport_size({"width": 1280, "height": 1000})
            shot = await session.page.screenshot(
                clip={"x": 0, "y": 0, "width": 1280, "height": 1000}
            )
            return figures, clicked, shot

    figures, clicked, shot = browser_plugin.run(look())
    steps = {(s["episode_id"], s["step_index"]): s for s in rows(reference, "steps")}
    step = steps[(clicked["episode"], clicked["step"])]
    assert clicked["click"] == [
        pytest.approx(step["x_px"]),
        pytest.approx(step["y_px"]),
    ]  # from the data
    x0, y0, width, height = clicked["box"]
    px = x0 + step["x_px"] * width / step["image_width"]
    py = y0 + step["y_px"] * height / step["image_height"]
    image = Image.open(io.BytesIO(shot)).convert("RGB")
    pixel = image.getpixel((round(px), round(py)))
    assert isinstance(pixel, tuple)  # an RGB image's pixel
    r, g, b = pixel
    assert r > 200 and g < 80 and b > 200, (r, g, b)  # magenta where the click was
    assert len({f["episode"] for f in figures}) == 3
