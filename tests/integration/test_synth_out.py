"""Synthesised tasks out (issue 43) on a page of our own: the contact form (tests/fixtures/
synth/form) refuses to send before its terms are agreed ("You must agree to the terms") and
POSTs the message once they are. Explored with synthesis on, the form's "Thanks" task gets that
message as its `fail` check and the POST as its demonstration's write; its demonstration
becomes `sft` samples and an `rl` group carrying the check. A checker of our own (Playwright,
no datagen import for the check) decides the fail check on the live page.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import sync_playwright

from bench.taskcheck import served as static_server

pytestmark = pytest.mark.browser
FORM = Path(__file__).resolve().parents[1] / "fixtures" / "synth" / "form"
ROOT = Path(__file__).resolve().parents[2]
THANKS = "Thanks, your message was sent"


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Explore the form with synthesis on; export tasks, sft and rl."""
    folder = tmp_path_factory.mktemp("synth_out")
    shutil.copytree(FORM, folder / "sites" / "form")
    (folder / "p.yaml").write_text(
        "name: synth-out\n"
        f"sources: [{{type: sites, dir: {folder / 'sites'}}}]\n"
        "browser: {viewport: {width: 1280, height: 800}, device_scale_factor: 1}\n"
        "policy: {type: explore}\n"
        "annotation: {grounding: false, verify: {max_replays: 12}, tasks: {per_episode: 4}}\n"
        "cluster: {workers: 1, sessions_per_worker: 4}\n"
        "run: {seed: 0, max_steps: 6, tasks_per_shard: 4, repeats: 6}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = folder / "out"
    for args in (
        ["run", "p.yaml", "-o", str(out)],
        ["export", str(out), "-f", "tasks"],
        ["export", str(out), "-f", "sft"],
        ["export", str(out), "-f", "rl"],
    ):
        done = subprocess.run([sys.executable, "-m", "datagen", *args], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The form over HTTP on loopback, for the checker (a POST is answered 501: the page
    thanks once the request is answered, whatever the answer)."""
    with static_server(FORM.parent) as url:
        yield url


def tasks(output: Path) -> list[dict[str, Any]]:
    lines = (output / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def rows(folder: Path) -> list[dict[str, Any]]:
    return [r for f in sorted(folder.glob("data/*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_the_send_task_has_the_refusal_as_fail_and_the_post_as_its_write(
    output: Path, served: str, chromium: str
) -> None:
    [sent] = [t for t in tasks(output) if t["check"].get("text_present") == THANKS]
    assert sent["fail"] == {"text_present": "You must agree to the terms"}, sent
    assert sent["provenance"]["writes"].endswith("POST /form/send"), sent["provenance"]
    assert sent["provenance"]["fail_from"]
    with sync_playwright() as p:  # the fail check, decided on the live page by our own code
        browser = p.chromium.launch(executable_path=chromium)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})

            def fails() -> bool:
                return sent["fail"]["text_present"] in page.inner_text("body")

            page.goto(sent["start_url"].replace("site://", served))
            assert not fails()
            page.get_by_role("button", name="Send message").click()
            page.wait_for_timeout(300)
            assert fails()  # sent before agreeing: the page says it failed
            page.reload()
            for action in sent["actions"]:  # the demonstration: never through the failure
                page.mouse.click(action["x"], action["y"])
                page.wait_for_timeout(300)
                assert not fails()
            page.wait_for_function(f"document.body.innerText.includes({json.dumps(THANKS)})")
        finally:
            browser.close()


def test_each_exported_task_is_sft_samples_and_an_rl_group_with_its_check(output: Path) -> None:
    exported = {t["id"]: t for t in tasks(output)}
    samples = [r for r in rows(output / "exports" / "sft") if r["synth_task_id"]]
    assert {r["synth_task_id"] for r in samples} == set(exported)
    for r in samples:
        task = exported[r["synth_task_id"]]
        assert r["instruction"] == task["instruction"]
        assert r["instruction_source"] == "synthesised"
    for task_id, task in exported.items():  # its demonstration's steps, then done
        mine = [r for r in samples if r["synth_task_id"] == task_id]
        assert len(mine) == len(task["actions"]) + 1
    groups = [r for r in rows(output / "exports" / "rl") if r["synth_task_id"]]
    assert {r["synth_task_id"] for r in groups} == set(exported)
    for r in groups:
        task = exported[r["synth_task_id"]]
        assert json.loads(r["check"]) == task["check"]
        assert r["reward"] == (1.0 if r["sample_index"] == 0 else 0.0)
        assert r["instruction"] == task["instruction"]
    [send] = {r["group_id"] for r in groups if THANKS in r["check"]}
    rollouts = [r for r in groups if r["group_id"] == send]
    assert len(rollouts) >= 2 and all(r["fail"] for r in rollouts)  # a failed rollout: 0.0
    card = (output / "exports" / "sft" / "README.md").read_text()
    assert f"`synth_task_id` names each): {len(exported)}, giving {len(samples)} samples" in card
