"""Model-written referring expressions with the round-trip check, on real Chromium, against
the stand-in over HTTP (its localizer is pinned to a point, so the outcome is known)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from datagen.cli import app
from datagen.config import SimConfig
from datagen.engine.sim import SimServer
from datagen.records import Click, TaskSpec
from datagen.source.serve import SiteServer
from tests.helpers import Local, make_config, read

pytestmark = pytest.mark.browser


def test_round_trip_keeps_only_expressions_that_ground_back(
    local: Local, pages: SiteServer, tmp_path: Path
) -> None:
    # "#front" is at CSS (20, 20)-(140, 60) in a 1280×800 viewport: its centre in [0,1000] units
    centre = (round(80 / 1280 * 1000), round(40 / 800 * 1000))
    with SimServer(SimConfig(speed_factor=50, fixed_point=centre)) as sim:
        config = make_config(
            tmp_path,
            policy={"type": "scripted"},
            annotation={"model_expressions": {"per_step": 2}},
            engine={"url": sim.url},
        )
        task = TaskSpec(
            id="t",
            start_url=pages.base_url + "occluded.html",
            instruction="x",
            actions=(Click(x=80, y=40),),
        )
        result = local.run(config, 3, [task]).result
    assert result.episodes == 1
    grounding = {g["selector"]: g for g in read(tmp_path / "out", "grounding")}
    front, email = grounding["#front"], grounding["#email"]
    assert front["round_trip_ok"] is True and front["model_expression"]  # kept
    assert email["round_trip_ok"] is False and email["model_expression"] is None  # dropped...
    misses = [r for r in read(tmp_path / "out", "rejects") if r["reason"] == "round_trip_miss"]
    assert misses and all(
        r["element_index"] == email["element_index"] for r in misses
    )  # ...and recorded
    x, y = front["round_trip_point_px"]
    assert (
        front["bbox_px"][0] <= x <= front["bbox_px"][2]
        and front["bbox_px"][1] <= y <= front["bbox_px"][3]
    )


def test_engine_check_and_serve_commands() -> None:
    runner = CliRunner()
    with SimServer(SimConfig(speed_factor=50)) as sim:
        result = runner.invoke(app, ["engine", "check", sim.url])
    assert result.exit_code == 0, result.output
    assert (
        "datagen-sim" in result.output
        and "max_model_len" in result.output
        and "stand-in" in result.output
    )
    down = runner.invoke(app, ["engine", "check", "http://127.0.0.1:9", "--timeout", "1"])
    assert down.exit_code == 1 and "not ready" in down.output
    serve = runner.invoke(app, ["engine", "serve", "--max-num-seqs", "96"])
    assert serve.exit_code == 0
    for flag in (
        "vllm serve Hcompany/Holotron-12B",
        "--trust-remote-code",
        "--max-num-seqs 96",
        "--limit-mm-per-prompt",
        "--mamba-ssm-cache-dtype float32",
    ):
        assert flag in serve.output
