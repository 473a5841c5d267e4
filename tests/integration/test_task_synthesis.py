"""Task synthesis end to end (issue 43): explore pages of our own, export the tasks, and check
each exported task with a checker of our own (its own Playwright code, no datagen import for
the check): false at the start, true after its demonstration.

The fixture sites (tests/fixtures/synth/) imitate a todo app, a form with a success message, a
settings page with toggles and a paged table; each page has a clock and a visitor counter that
move by themselves, which no task may use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, sync_playwright

from bench.taskcheck import served as static_server

pytestmark = pytest.mark.browser
SITES = Path(__file__).resolve().parents[1] / "fixtures" / "synth"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The fixture sites over HTTP on loopback, for the checker (datagen serves its own)."""
    with static_server(SITES) as url:
        yield url


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Explore the fixture sites with synthesis on, export the task list, read it."""
    folder = tmp_path_factory.mktemp("synth")
    pipeline = folder / "p.yaml"
    pipeline.write_text(
        "name: synth\n"
        f"sources: [{{type: sites, dir: {SITES}}}]\n"
        "browser: {viewport: {width: 1280, height: 800}, device_scale_factor: 1}\n"
        "policy: {type: explore}\n"
        "annotation: {grounding: false, verify: {max_replays: 12}, tasks: {per_episode: 4}}\n"
        "cluster: {workers: 1, sessions_per_worker: 4}\n"
        "run: {seed: 0, max_steps: 6, tasks_per_shard: 4, repeats: 4}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = folder / "out"
    for args in (["run", str(pipeline), "-o", str(out)], ["export", str(out), "-f", "tasks"]):
        done = subprocess.run([sys.executable, "-m", "datagen", *args], env=env, cwd=folder,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = (out / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def holds(page: Page, check: dict[str, Any]) -> bool:
    """The check, read the way a trainer's reward would read it, on a live page."""
    if "url_contains" in check and check["url_contains"] not in page.url:
        return False
    if "text_present" in check and check["text_present"] not in page.inner_text("body"):
        return False
    if "element" in check:
        spec = check["element"]
        found = page.get_by_role(spec["role"], name=spec["name"], exact=True)
        state = spec.get("state", "present")
        if state == "absent":
            return found.count() == 0
        if found.count() == 0:
            return False
        if state in ("checked", "unchecked"):
            wanted = state == "checked"
            return any(
                (found.nth(i).get_attribute("aria-checked") == "true" or found.nth(i).is_checked())
                == wanted
                for i in range(found.count())
            )
    return True


def act(page: Page, action: dict[str, Any]) -> None:
    if action["type"] == "click":
        page.mouse.click(action["x"], action["y"])
    elif action["type"] == "type":
        page.keyboard.type(action["text"])
    elif action["type"] == "key":
        page.keyboard.press(action["combo"])
    page.wait_for_load_state()
    page.wait_for_timeout(300)


def test_tasks_of_each_kind_none_at_the_start_none_on_what_moves(
    exported: list[dict[str, Any]], served: str, chromium: str
) -> None:
    kinds = {t["provenance"]["effect_kind"] for t in exported}
    sites = {t["site"] for t in exported}
    assert sites == {"todo", "form", "settings", "paged"}, sites
    assert {"state", "text", "url"} <= kinds, kinds
    for task in exported:  # nothing from the clock or the counter
        assert "Time " not in json.dumps(task["check"]) and "Visitors" not in json.dumps(
            task["check"]
        ), task
        assert task["instruction"] and task["actions"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium)
        try:
            for task in exported:
                url = task["start_url"].replace("site://", served)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(url)
                page.wait_for_timeout(300)
                assert not holds(page, task["check"]), ("holds at the start", task)
                for action in task["actions"]:
                    act(page, action)
                assert holds(page, task["check"]), ("not after the demonstration", task)
                page.close()
        finally:
            browser.close()
