"""Task synthesis end to end (issue 43): explore pages of our own, export the tasks, and check
each exported task with a checker of our own (its own Playwright code, no datagen import for
the check): false at the start, true after its demonstration.

The fixture sites (tests/fixtures/synth/) imitate a todo app, a form with a success message, a
settings page with toggles and a paged table; each page has a clock and a visitor counter that
move by themselves, which no task may use.

Synthesised tasks out (issue 43), on the form: it refuses to send before its terms are agreed
("You must agree to the terms") and POSTs the message once they are. Its "Thanks" task gets
that message as its `fail` check and the POST as its demonstration's write; every exported
task's demonstration becomes `sft` samples and an `rl` group carrying its check. The checker
decides the fail check on the live page too.

One run serves both: it was two runs, the form alone and all four sites, for the suite's time
(issue 44). Three repeats per task (explore's seeds are per task and repeat): with seed 0 the
form's first episode sends before agreeing (the refusal, and the send task's failed rollout to
group), its second and third send after it; every site gives a task from its first two. It was
six repeats: twice the episodes for the same claims.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from bench.taskcheck import served as static_server
from tests.helpers import datagen_calls

pytestmark = pytest.mark.browser
SITES = Path(__file__).resolve().parents[1] / "fixtures" / "synth"
ROOT = Path(__file__).resolve().parents[2]
THANKS = "Thanks, your message was sent"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The fixture sites over HTTP on loopback, for the checker (datagen serves its own; a
    POST is answered 501: the form thanks once the request is answered, whatever the answer)."""
    with static_server(SITES) as url:
        yield url


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Explore the fixture sites with synthesis on; export tasks, sft and rl."""
    folder = tmp_path_factory.mktemp("synth")
    pipeline = folder / "p.yaml"
    pipeline.write_text(
        "name: synth\n"
        f"sources: [{{type: sites, dir: {SITES}}}]\n"
        "browser: {viewport: {width: 1280, height: 800}, device_scale_factor: 1}\n"
        "policy: {type: explore}\n"
        "annotation: {grounding: false, verify: {max_replays: 12}, tasks: {per_episode: 4}}\n"
        "cluster: {workers: 1, sessions_per_worker: 4}\n"
        "run: {seed: 0, max_steps: 6, tasks_per_shard: 4, repeats: 3}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = folder / "out"
    done = subprocess.run([sys.executable, "-m", "datagen", "run", str(pipeline), "-o", str(out)],
                          env=env, cwd=folder, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # the three exports in one interpreter (tests/helpers.py datagen_calls), not one each
    for done in datagen_calls([["export", str(out), "-f", fmt] for fmt in ("tasks", "sft", "rl")]):
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def exported(output: Path) -> list[dict[str, Any]]:
    lines = (output / "exports" / "tasks" / "tasks.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def checker(chromium: str) -> Iterator[Browser]:
    """The checker's own Chromium (Playwright, launched here), a fresh page per task."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium)
        try:
            yield browser
        finally:
            browser.close()


def rows(folder: Path) -> list[dict[str, Any]]:
    return [r for f in sorted(folder.glob("data/*.parquet")) for r in pq.read_table(f).to_pylist()]


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


def comes_to_hold(page: Page, check: dict[str, Any], seconds: float = 10) -> bool:
    """Does the check hold once the demonstration's effect has landed? A click on a link
    starts a navigation that a loaded machine commits after the 300 ms `act` waits (CI, three
    test workers on two cores: the page was still on /paged/), so it is read again until it
    holds or `seconds` pass; a read cut short by the navigation is read again too."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(PlaywrightError):  # the context went with a navigation
            if holds(page, check):
                return True
        if time.monotonic() > deadline:
            return False
        page.wait_for_timeout(100)


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
    exported: list[dict[str, Any]], served: str, checker: Browser
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
    for task in exported:
        url = task["start_url"].replace("site://", served)
        page = checker.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url)
        page.wait_for_timeout(300)
        assert not holds(page, task["check"]), ("holds at the start", task)
        for action in task["actions"]:
            act(page, action)
        assert comes_to_hold(page, task["check"]), ("not after the demonstration", task)
        page.close()


def test_the_send_task_has_the_refusal_as_fail_and_the_post_as_its_write(
    exported: list[dict[str, Any]], served: str, checker: Browser
) -> None:
    [sent] = [t for t in exported if t["check"].get("text_present") == THANKS]
    assert sent["fail"] == {"text_present": "You must agree to the terms"}, sent
    assert sent["provenance"]["writes"].endswith("POST /form/send"), sent["provenance"]
    assert sent["provenance"]["fail_from"]
    # the fail check, decided on the live page by our own code
    page = checker.new_page(viewport={"width": 1280, "height": 800})

    def fails() -> bool:
        return sent["fail"]["text_present"] in page.inner_text("body")

    try:
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
        page.close()


def test_each_exported_task_is_sft_samples_and_an_rl_group_with_its_check(
    output: Path, exported: list[dict[str, Any]]
) -> None:
    by_id = {t["id"]: t for t in exported}
    samples = [r for r in rows(output / "exports" / "sft") if r["synth_task_id"]]
    assert {r["synth_task_id"] for r in samples} == set(by_id)
    for r in samples:
        task = by_id[r["synth_task_id"]]
        assert r["instruction"] == task["instruction"]
        assert r["instruction_source"] == "synthesised"
    for task_id, task in by_id.items():  # its demonstration's steps, then done
        mine = [r for r in samples if r["synth_task_id"] == task_id]
        assert len(mine) == len(task["actions"]) + 1
    groups = [r for r in rows(output / "exports" / "rl") if r["synth_task_id"]]
    assert {r["synth_task_id"] for r in groups} == set(by_id)
    for r in groups:
        task = by_id[r["synth_task_id"]]
        assert json.loads(r["check"]) == task["check"]
        assert r["reward"] == (1.0 if r["sample_index"] == 0 else 0.0)
        assert r["instruction"] == task["instruction"]
    [send] = {r["group_id"] for r in groups if THANKS in r["check"]}
    rollouts = [r for r in groups if r["group_id"] == send]
    assert len(rollouts) >= 2 and all(r["fail"] for r in rollouts)  # a failed rollout: 0.0
    card = (output / "exports" / "sft" / "README.md").read_text()
    assert f"`synth_task_id` names each): {len(by_id)}, giving {len(samples)} samples" in card
