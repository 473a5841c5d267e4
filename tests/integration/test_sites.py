"""Integration tests for the bundled local web apps under ``datagen/sites``.

For every task in every ``datagen/sites/<site>/tasks.jsonl`` this module loads the
site in headless Chromium, checks that the task's success check is false on the
fresh page, replays a known solution (``tests/fixtures/site_solutions.json``) and
checks that the success check has become true.  Checks are evaluated the same
way datagen evaluates them.  A check must also fail a wrong episode: each trajectory in
``tests/fixtures/site_wrong_solutions.json`` (one that looks done but is not what the
instruction asks, e.g. deleting items one by one for "clear completed") must leave it false.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from datagen.browser.launch import find_executable
from datagen.source import BUNDLED_SITES
from tests.helpers import CHROMIUM_ARGS

if TYPE_CHECKING:
    from playwright.sync_api import (
        Browser,
        ConsoleMessage,
        Dialog,
        Page,
        Request,
        Response,
        ViewportSize,
    )

playwright_sync = pytest.importorskip("playwright.sync_api")

REPO = Path(__file__).resolve().parents[2]
SITES_DIR = BUNDLED_SITES
SOLUTIONS_FILE = REPO / "tests" / "fixtures" / "site_solutions.json"
WRONG_SOLUTIONS_FILE = REPO / "tests" / "fixtures" / "site_wrong_solutions.json"
CHROMIUM = find_executable(None, None)
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
EXPECTED_SITES = {"todo", "signup", "shop", "settings", "table"}
TASK_KEYS = {"id", "start_url", "instruction", "check", "max_steps"}
CHECK_KEYS = {"js", "url_contains", "text_present"}
ACTION_TIMEOUT_MS = 5000
# How long a solved task's check may take to pass (a site's own timers, a loaded machine): the
# wait ends as soon as it passes, so only a failing check waits this long.
CHECK_SETTLE_S = 30.0
WRONG_SETTLE_MS = 300  # the apps update synchronously: what a wrong episode leaves shows at once


def _load_tasks() -> dict[str, list[dict[str, Any]]]:
    tasks: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(SITES_DIR.glob("*/tasks.jsonl")):
        site = path.parent.name
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        tasks[site] = [json.loads(ln) for ln in lines]
    return tasks


TASKS_BY_SITE = _load_tasks()
ALL_TASKS = [task for site in sorted(TASKS_BY_SITE) for task in TASKS_BY_SITE[site]]
SOLUTIONS: dict[str, list[dict[str, Any]]] = json.loads(SOLUTIONS_FILE.read_text(encoding="utf-8"))
# task id -> [{"why": what makes it wrong, "steps": [same format as SOLUTIONS]}]
WRONG_SOLUTIONS: dict[str, list[dict[str, Any]]] = json.loads(
    WRONG_SOLUTIONS_FILE.read_text(encoding="utf-8")
)
WRONG_CASES = [
    (task_id, n) for task_id in WRONG_SOLUTIONS for n in range(len(WRONG_SOLUTIONS[task_id]))
]
TASKS_BY_ID = {task["id"]: task for task in ALL_TASKS}


# --------------------------------------------------------------------------- fixtures


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site_base_url() -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(SITES_DIR))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with playwright_sync.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class _PageProbe:
    """A context + page that records console errors and foreign/failed requests."""

    def __init__(self, browser: Browser, base_url: str) -> None:
        self.base_url = base_url
        self.errors: list[str] = []
        self.context = browser.new_context(viewport=VIEWPORT)
        self.context.set_default_timeout(ACTION_TIMEOUT_MS)
        self.page = self.context.new_page()
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("dialog", self._on_dialog)
        self.page.on("popup", lambda p: self.errors.append(f"popup opened: {p.url}"))
        self.page.on("request", self._on_request)
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
        self.page.on("response", self._on_response)

    def _on_console(self, msg: ConsoleMessage) -> None:
        if msg.type == "error":
            self.errors.append(f"console error: {msg.text}")

    def _on_dialog(self, dialog: Dialog) -> None:
        self.errors.append(f"native dialog: {dialog.type} {dialog.message!r}")
        dialog.dismiss()

    def _on_request(self, request: Request) -> None:
        url = request.url
        if url.startswith(("data:", "blob:", "about:")):
            return
        if not url.startswith(self.base_url + "/"):
            self.errors.append(f"request outside the local server: {url}")

    def _on_response(self, response: Response) -> None:
        if response.status >= 400:
            self.errors.append(f"HTTP {response.status}: {response.url}")

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def shared_probe(browser: Browser, site_base_url: str) -> Iterator[_PageProbe]:
    p = _PageProbe(browser, site_base_url)
    try:
        yield p
    finally:
        p.close()


# what a site could carry from one test's load to the next on a shared page
_STORED_JS = "() => localStorage.length + sessionStorage.length + document.cookie.length"


@pytest.fixture
def probe(shared_probe: _PageProbe) -> Iterator[_PageProbe]:
    """One page for the module (a context and its renderer cost more than most tests here):
    each test starts it on a blank document with no problems recorded, and loads its site
    afresh. That is a fresh app only while the sites store nothing: checked after each test."""
    page = shared_probe.page
    page.goto("about:blank")
    shared_probe.errors.clear()
    yield shared_probe
    if page.url.startswith(shared_probe.base_url + "/"):
        assert page.evaluate(_STORED_JS) == 0, f"{page.url} stored state: a shared page leaks it"


# --------------------------------------------------------------------------- helpers


def resolve_start_url(start_url: str, base_url: str) -> str:
    assert start_url.startswith("site://"), start_url
    return base_url + "/" + start_url[len("site://") :]


def evaluate_check(page: Page, check: dict[str, str]) -> dict[str, bool]:
    """Evaluate every key of a task check the way datagen does; returns key -> passed."""
    results: dict[str, bool] = {}
    if "js" in check:
        results["js"] = bool(page.evaluate("() => Boolean(" + check["js"] + ")"))
    if "url_contains" in check:
        results["url_contains"] = check["url_contains"] in page.url
    if "text_present" in check:
        results["text_present"] = check["text_present"] in page.evaluate("document.body.innerText")
    return results


def run_step(page: Page, step: dict[str, Any]) -> None:
    assert len(step) == 1, f"a step has exactly one action: {step}"
    ((action, arg),) = step.items()
    if action == "click":
        page.locator(arg).click()
    elif action == "dblclick":
        page.locator(arg).dblclick()
    elif action == "fill":
        selector, text = arg
        page.locator(selector).fill(text)
    elif action == "press":
        if isinstance(arg, list):
            selector, key = arg
            page.locator(selector).press(key)
        else:
            page.keyboard.press(arg)
    elif action == "select":
        selector, value = arg
        page.locator(selector).select_option(value)
    else:
        raise AssertionError(f"unknown solution action {action!r} in {step}")


def wait_for_check(
    page: Page, check: dict[str, str], timeout_s: float = CHECK_SETTLE_S
) -> dict[str, bool]:
    deadline = time.monotonic() + timeout_s
    while True:
        results = evaluate_check(page, check)
        if all(results.values()) or time.monotonic() >= deadline:
            return results
        page.wait_for_timeout(100)


# JS run on each freshly loaded site: lists interactive elements without an accessible name.
_UNNAMED_CONTROLS_JS = """
() => {
  const sel = 'button, a[href], input:not([type=hidden]), select, textarea, ' +
    '[role=button], [role=tab], [role=switch], [role=checkbox], [role=link], [role=menuitem], [role=radio]';
  const textOf = (ids) => ids.split(/\\s+/).map(id => document.getElementById(id))
    .filter(Boolean).map(e => e.textContent).join(' ');
  const bad = [];
  for (const el of document.querySelectorAll(sel)) {
    let name = el.getAttribute('aria-label') || '';
    if (!name.trim() && el.getAttribute('aria-labelledby')) name = textOf(el.getAttribute('aria-labelledby'));
    if (!name.trim() && el.labels && el.labels.length) name = [...el.labels].map(l => l.textContent).join(' ');
    if (!name.trim() && !['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName)) name = el.textContent;
    if (!name.trim()) name = el.getAttribute('placeholder') || el.getAttribute('title') || '';
    if (!name.trim()) bad.push(el.outerHTML.slice(0, 120));
  }
  return bad;
}
"""


# --------------------------------------------------------------------------- tests


@pytest.mark.browser
def test_task_lists_are_well_formed() -> None:
    assert set(TASKS_BY_SITE) == EXPECTED_SITES, f"sites with tasks.jsonl: {sorted(TASKS_BY_SITE)}"
    ids = [t.get("id") for t in ALL_TASKS]
    assert len(ids) == len(set(ids)), "task ids must be unique"
    for site, tasks in TASKS_BY_SITE.items():
        assert (SITES_DIR / site / "index.html").is_file(), f"{site} has no index.html"
        assert len(tasks) >= 6, f"{site} has only {len(tasks)} tasks"
        for task in tasks:
            assert set(task) == TASK_KEYS, f"{task.get('id')}: keys {sorted(task)}"
            assert task["id"].startswith(site + "-"), task["id"]
            assert task["start_url"] == f"site://{site}/", task["id"]
            assert isinstance(task["instruction"], str) and len(task["instruction"]) > 10, task[
                "id"
            ]
            check = task["check"]
            assert isinstance(check, dict) and check, f"{task['id']}: empty check"
            assert set(check) <= CHECK_KEYS, (
                f"{task['id']}: unknown check keys {set(check) - CHECK_KEYS}"
            )
            assert all(isinstance(v, str) and v for v in check.values()), task["id"]
            steps = task["max_steps"]
            assert isinstance(steps, int) and not isinstance(steps, bool) and 8 <= steps <= 15, (
                task["id"]
            )


@pytest.mark.browser
def test_every_task_has_a_solution_and_no_solution_is_orphaned() -> None:
    task_ids = {t["id"] for t in ALL_TASKS}
    assert task_ids - set(SOLUTIONS) == set(), "tasks without a known solution"
    assert set(SOLUTIONS) - task_ids == set(), "solutions for unknown tasks"
    for task_id, steps in SOLUTIONS.items():
        assert isinstance(steps, list) and steps, f"{task_id}: empty solution"


@pytest.mark.browser
@pytest.mark.parametrize("site", sorted(EXPECTED_SITES))
def test_site_loads_cleanly(site: str, probe: _PageProbe) -> None:
    response = probe.page.goto(f"{probe.base_url}/{site}/", wait_until="load")
    assert response is not None and response.ok, f"{site}: index not served"
    probe.page.wait_for_timeout(200)
    assert probe.errors == [], f"{site}: problems while loading: {probe.errors}"
    assert probe.page.title().strip(), f"{site}: page has no title"
    unnamed = probe.page.evaluate(_UNNAMED_CONTROLS_JS)
    assert unnamed == [], f"{site}: interactive elements without an accessible name: {unnamed}"
    n_controls = probe.page.locator(
        "button:visible, input:visible, select:visible, [role=switch]:visible, [role=tab]:visible"
    ).count()
    assert n_controls >= 3, f"{site}: only {n_controls} visible controls"


@pytest.mark.browser
@pytest.mark.parametrize("task", ALL_TASKS, ids=[t["id"] for t in ALL_TASKS])
def test_task_check_false_then_true_after_solution(task: dict[str, Any], probe: _PageProbe) -> None:
    page = probe.page
    page.goto(resolve_start_url(task["start_url"], probe.base_url), wait_until="load")

    before = evaluate_check(page, task["check"])
    assert not all(before.values()), f"{task['id']}: check already passes on a fresh page: {before}"

    for i, step in enumerate(SOLUTIONS[task["id"]]):
        try:
            run_step(page, step)
        except playwright_sync.Error as exc:
            pytest.fail(f"{task['id']}: solution step {i} {step} failed: {exc}")

    after = wait_for_check(page, task["check"])
    assert all(after.values()), f"{task['id']}: check did not pass after the solution: {after}"
    assert probe.errors == [], f"{task['id']}: problems during the solution: {probe.errors}"


@pytest.mark.browser
def test_every_wrong_solution_names_a_task_and_says_why() -> None:
    assert set(WRONG_SOLUTIONS) - set(TASKS_BY_ID) == set(), "wrong solutions for unknown tasks"
    for task_id, wrongs in WRONG_SOLUTIONS.items():
        assert isinstance(wrongs, list) and wrongs, f"{task_id}: no wrong solutions listed"
        for wrong in wrongs:
            assert set(wrong) == {"why", "steps"} and wrong["why"] and wrong["steps"], task_id


@pytest.mark.browser
@pytest.mark.parametrize(("task_id", "n"), WRONG_CASES, ids=[f"{t}-{n}" for t, n in WRONG_CASES])
def test_task_check_stays_false_after_a_wrong_solution(
    task_id: str, n: int, probe: _PageProbe
) -> None:
    task, wrong = TASKS_BY_ID[task_id], WRONG_SOLUTIONS[task_id][n]
    page = probe.page
    page.goto(resolve_start_url(task["start_url"], probe.base_url), wait_until="load")
    for i, step in enumerate(wrong["steps"]):
        try:
            run_step(page, step)
        except playwright_sync.Error as exc:
            pytest.fail(f"{task_id}: wrong solution step {i} {step} failed: {exc}")
    page.wait_for_timeout(WRONG_SETTLE_MS)

    after = evaluate_check(page, task["check"])
    assert not all(after.values()), f"{task_id}: the check passes when it {wrong['why']}: {after}"
    assert probe.errors == [], f"{task_id}: problems during the wrong solution: {probe.errors}"
