"""An independent check of a run's synthesised tasks (issue 43): our own code, a live Chromium
through Playwright, no datagen import. For every task of `OUT/exports/tasks/tasks.jsonl`
(`datagen export OUT --format tasks`), on a fresh context each time:

- its check is false at the start (after the cookie banner is answered as datagen's default
  `browser.consent: reject` answers it);
- it is true after the task's demonstration (its `actions`, with real mouse and keyboard);
- it is false after each of three other episodes' action sets from the same start: the run's
  explore episodes (the `steps` table, read with pyarrow), not the task's own and not one that
  clicked where the demonstration's last click did on an element of the same name (that one
  may well have done the task); where fewer than three, other tasks' demonstrations. A task
  true after one of them is printed with what that episode clicked, to be read: another way
  of doing what the instruction asks, or a check that does not decide it.

The bundled sites are served by a static server of our own on 127.0.0.1 (`site://shop/` →
`http://127.0.0.1:PORT/shop/`). A check is read the way a trainer's reward would read it:
`url_contains` in the page's URL, `text_present` in the body's text, `element`: an element of
that role (Playwright's role engine) that is visible and called `name` as drawn (its text,
its label's, its row's) or by its accessible name, in the state asked.

    datagen run pipelines/demo.yaml -o /tmp/demo && datagen export /tmp/demo --format tasks
    python bench/taskcheck.py /tmp/demo          # figures; exit 1 when a task fails
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import http.server
import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
from playwright.async_api import Browser, Page, async_playwright

SITES = Path(__file__).resolve().parents[1] / "datagen" / "sites"
CHROMIUM = "/usr/bin/chromium"
OTHERS = 3  # other episodes' action sets each task's check must be false after
NEAR_PX = 6  # clicks this close on a like-named element: the same element (without a box)
SETTLE_MS = 500  # after a load and after each action: the bundled sites answer at once
REJECT = re.compile(r"^(essential only|reject( all)?|decline|necessary only)$", re.IGNORECASE)


@contextmanager
def served(root: Path) -> Iterator[str]:
    """A static file server over `root` on 127.0.0.1; yields its base URL."""
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


# What the page shows of every element of one role: is it drawn (and enabled), what is it called (its own
# text as drawn, aria-label, title, value, its <label>s, aria-labelledby, the text of the row
# or label around it), and is it on (checked, aria-checked, aria-pressed).
DESCRIBE = """(els) => els.map((el) => {
  const box = el.getBoundingClientRect();
  const style = getComputedStyle(el);
  // a disabled control is none to act on: datagen's `element` kind reads it as absent
  const shown = box.width > 0 && box.height > 0 && style.visibility !== 'hidden' &&
    !el.disabled && el.getAttribute('aria-disabled') !== 'true';
  const flat = (t) => (t || '').replace(/\\s+/g, ' ').trim();
  const names = [el.innerText, el.getAttribute('aria-label'), el.getAttribute('title'),
    el.value, el.getAttribute('alt')];
  for (const l of el.labels || []) {
    // a label around its control: its own words, without the control's (a select's options)
    const own = l.cloneNode(true);
    own.querySelectorAll('select, input, textarea, button').forEach((c) => c.remove());
    names.push(l.innerText, own.textContent);
  }
  for (const id of (el.getAttribute('aria-labelledby') || '').split(/\\s+/)) {
    const l = id && document.getElementById(id); if (l) names.push(l.innerText);
  }
  const row = el.closest('li, label, tr, [role=row], [role=listitem]');
  if (row) names.push(row.innerText);
  const option = el.tagName === 'SELECT' && el.selectedOptions[0];
  const on = el.checked === true || el.getAttribute('aria-checked') === 'true' ||
    el.getAttribute('aria-pressed') === 'true';
  const off = el.checked === false || el.getAttribute('aria-checked') === 'false' ||
    el.getAttribute('aria-pressed') === 'false';
  return { shown, names: names.map(flat).filter(Boolean),
           value: option ? flat(option.textContent) : flat(el.value || el.innerText),
           on, off };
})"""


async def holds(page: Page, check: dict[str, Any]) -> bool:
    """Is the check true on the live page (every part of it)?"""
    if "url_contains" in check and check["url_contains"] not in page.url:
        return False
    if "text_present" in check:
        body = await page.evaluate("() => document.body ? document.body.innerText : ''")
        if check["text_present"] not in body:
            return False
    if "element" in check:
        spec = check["element"]
        seen = await page.get_by_role(spec["role"]).evaluate_all(DESCRIBE)
        same = [e for e in seen if e["shown"] and spec["name"] in e["names"]]
        if "value" in spec:
            same = [e for e in same if e["value"] == spec["value"]]
        state = spec.get("state", "present")
        if state == "absent":
            return not same
        if state == "checked":
            return any(e["on"] for e in same)
        if state == "unchecked":
            return any(e["off"] for e in same)
        return bool(same)
    if not {"url_contains", "text_present", "element"} & set(check):
        raise ValueError(f"a check this checker cannot read: {check}")
    return True


async def settle(page: Page) -> None:
    with contextlib.suppress(Exception):  # a page still loading is read as it is
        await page.wait_for_load_state("load", timeout=10_000)
    await page.wait_for_timeout(SETTLE_MS)


async def start(browser: Browser, url: str) -> Page:
    """A fresh context on `url`, its cookie banner answered with the essential choice."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    await page.goto(url)
    await settle(page)
    banner = page.locator("[aria-label*=cookie i], [id*=cookie i], [id*=consent i]")
    buttons = banner.get_by_role("button", name=REJECT)
    if await buttons.count() and await buttons.first.is_visible():
        await buttons.first.click()
        await settle(page)
    return page


async def do(page: Page, action: dict[str, Any]) -> None:
    """The recorded action, with plain Playwright (no wait after it)."""
    kind = action["type"]
    if kind == "click":
        await page.mouse.click(action["x"], action["y"])
    elif kind == "type":
        await page.keyboard.type(action["text"])
    elif kind == "key":
        await page.keyboard.press(action["combo"])
    elif kind == "scroll":
        await page.mouse.move(640, 400)
        await page.mouse.wheel(action.get("dx", 0), action.get("dy", 0))
    elif kind == "wait":
        await page.wait_for_timeout(1000 * action.get("seconds", 0.5))
    elif kind in ("done",):
        return
    else:
        raise ValueError(f"an action this checker does not replay: {action}")


async def act(page: Page, action: dict[str, Any]) -> None:
    """The recorded action, then the page settles (a done: nothing)."""
    if action["type"] == "done":
        return
    await do(page, action)
    await settle(page)


@dataclass
class Episode:
    """An explore episode of the run: its start, its actions, where it clicked on what."""

    episode_id: str
    start_url: str
    actions: list[dict[str, Any]]
    # by step: the role and name a click acted on, and where
    targets: dict[int, tuple[Any, ...]] = field(default_factory=dict)


def episodes(out: Path) -> dict[str, Episode]:
    """The run's episodes with their recorded actions, by id (pyarrow, not datagen)."""
    starts = ds.dataset(out / "episodes").to_table(columns=["episode_id", "start_url"])
    found = {
        e: Episode(e, s, [])
        for e, s in zip(
            starts["episode_id"].to_pylist(), starts["start_url"].to_pylist(), strict=True
        )
    }
    columns = ["episode_id", "step_index", "action_json", "target_role", "target_name"]
    columns += ["target_bbox_px"]
    rows = ds.dataset(out / "steps").to_table(columns=columns).to_pylist()
    for row in sorted(rows, key=lambda r: (r["episode_id"], r["step_index"])):
        action = json.loads(row["action_json"])
        episode = found[row["episode_id"]]
        if action["type"] != "done":
            episode.actions.append(action)
        if action["type"] == "click":
            box = tuple(row["target_bbox_px"] or ())
            where = (row["target_role"], row["target_name"], action["x"], action["y"], *box)
            episode.targets[row["step_index"]] = where
    return found


def same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """One element: the same role and name, each click inside the other's recorded box (one
    of several like elements, "Add to cart" ×12, is told apart by where it is); without a
    box, within NEAR_PX of the same point."""
    if a[:2] != b[:2]:
        return False

    def inside(click: tuple[Any, ...], box: tuple[Any, ...]) -> bool:
        x, y = float(click[2]), float(click[3])
        return (
            len(box) == 4
            and float(box[0]) <= x <= float(box[2])
            and float(box[1]) <= y <= float(box[3])
        )

    if len(a) == len(b) == 8:
        return inside(a, b[4:]) and inside(b, a[4:])
    return abs(float(a[2]) - float(b[2])) <= NEAR_PX and abs(float(a[3]) - float(b[3])) <= NEAR_PX


def others(
    task: dict[str, Any], tasks: list[dict[str, Any]], runs: dict[str, Episode]
) -> list[Episode]:
    """Up to OTHERS action sets from the task's start that never clicked the element its
    demonstration's last click acted on (`same`): the run's explore episodes but the task's
    own, then, where fewer, other tasks' demonstrations."""

    def clicked(t: dict[str, Any]) -> list[tuple[Any, ...]]:
        source = runs.get(t["provenance"]["episode_id"])
        steps = [int(i) for i in t["provenance"]["steps"].split(",")]
        return [source.targets[i] for i in steps if source and i in source.targets]

    own = runs.get(task["provenance"]["episode_id"])
    last_step = int(task["provenance"]["steps"].split(",")[-1])
    last = own.targets.get(last_step) if own is not None else None
    pool = [
        e
        for e in sorted(runs.values(), key=lambda e: e.episode_id)
        if e.start_url == task["start_url"] and e is not own and e.actions
    ]
    pool += [
        Episode(f"task:{t['id']}", t["start_url"], t["actions"], dict(enumerate(clicked(t))))
        for t in tasks
        if t is not task and t["start_url"] == task["start_url"]
    ]
    return [e for e in pool if not (last and any(same(last, t) for t in e.targets.values()))][
        :OTHERS
    ]


@dataclass
class Verdict:
    task: dict[str, Any]
    at_start: bool | None = None
    after_demo: bool | None = None
    after_others: dict[str, bool] = field(default_factory=dict)
    read: list[Episode] = field(default_factory=list)  # the other episodes chosen
    error: str = ""

    @property
    def passed(self) -> bool:
        return (
            not self.error
            and self.at_start is False
            and self.after_demo is True
            and len(self.after_others) == OTHERS
            and not any(self.after_others.values())
        )


async def final_page(browser: Browser, base: str, start_url: str, actions: list[Any]) -> Page:
    page = await start(browser, start_url.replace("site://", base, 1))
    for action in actions:
        await act(page, action)
    return page


async def check_all(
    tasks: list[dict[str, Any]],
    runs: dict[str, Episode],
    base: str,
    parallel: int = 3,
    executable: str = CHROMIUM,
    shots: Path | None = None,
) -> list[Verdict]:
    """Every task's verdict; each other episode is replayed once and read by every task of
    its start that chose it."""
    verdicts = [Verdict(t) for t in tasks]
    for v in verdicts:
        v.read = others(v.task, tasks, runs)
    by_episode: dict[str, list[Verdict]] = {}
    chosen_by_id: dict[str, Episode] = {}
    for v in verdicts:
        for e in v.read:
            by_episode.setdefault(e.episode_id, []).append(v)
            chosen_by_id[e.episode_id] = e
    gate = asyncio.Semaphore(parallel)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable)

        async def own(v: Verdict) -> None:
            async with gate:
                try:
                    page = await start(browser, v.task["start_url"].replace("site://", base, 1))
                    v.at_start = await holds(page, v.task["check"])
                    if shots:
                        await page.screenshot(path=shots / f"{v.task['id']}-0.png")
                    for i, action in enumerate(v.task["actions"], 1):
                        await act(page, action)
                        if shots:
                            await page.screenshot(path=shots / f"{v.task['id']}-{i}.png")
                    v.after_demo = await holds(page, v.task["check"])
                    await page.context.close()
                except Exception as exc:
                    v.error = f"{type(exc).__name__}: {exc}"

        async def other(episode: Episode, readers: list[Verdict]) -> None:
            async with gate:
                try:
                    page = await final_page(browser, base, episode.start_url, episode.actions)
                    for v in readers:
                        v.after_others[episode.episode_id] = await holds(page, v.task["check"])
                    await page.context.close()
                except Exception as exc:
                    for v in readers:
                        v.error = f"{episode.episode_id}: {type(exc).__name__}: {exc}"

        try:
            await asyncio.gather(
                *[own(v) for v in verdicts],
                *[other(chosen_by_id[e], readers) for e, readers in by_episode.items()],
            )
        finally:
            await browser.close()
    return verdicts


def report(verdicts: list[Verdict]) -> list[str]:
    """The figures, then one line per task that did not pass."""
    n = len(verdicts)
    start_false = sum(v.at_start is False for v in verdicts)
    demo_true = sum(v.after_demo is True for v in verdicts)
    three = sum(len(v.after_others) == OTHERS for v in verdicts)
    clean = sum(
        len(v.after_others) == OTHERS and not any(v.after_others.values()) for v in verdicts
    )
    lines = [
        f"tasks {n}; passed {sum(v.passed for v in verdicts)}",
        f"false at the start: {start_false} of {n}; true after the demonstration: {demo_true} "
        f"of {n}; false after {OTHERS} other episodes' actions: {clean} of {n} "
        f"({three} had {OTHERS} other episodes to read)",
    ]
    for v in verdicts:
        if not v.passed:
            t = v.task
            lines.append(
                f"FAIL {t['id']} {t['instruction']!r} {json.dumps(t['check'])}: "
                f"start={v.at_start} demo={v.after_demo} others={v.after_others} {v.error}"
            )
            for e in v.read:
                if v.after_others.get(e.episode_id):
                    did = ", ".join(f"{t[0]} {t[1]!r}" for t in e.targets.values())
                    lines.append(f"  true after {e.episode_id}, which clicked: {did}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="a run's output folder, its tasks exported")
    parser.add_argument("--tasks", type=Path, help="default: OUT/exports/tasks/tasks.jsonl")
    parser.add_argument("--parallel", type=int, default=3, help="pages at once")
    parser.add_argument("--sites", type=Path, default=SITES, help="what site:// URLs serve")
    parser.add_argument("--chromium", default=CHROMIUM, help="the browser to check with")
    parser.add_argument("--shots", type=Path, help="save each task's screens here: ID-N.png")
    args = parser.parse_args()
    path = args.tasks or args.output / "exports" / "tasks" / "tasks.jsonl"
    tasks = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    runs = episodes(args.output)
    with served(args.sites) as base:
        if args.shots:
            args.shots.mkdir(parents=True, exist_ok=True)
        checked = check_all(tasks, runs, base, args.parallel, args.chromium, args.shots)
        verdicts = asyncio.run(checked)
    for line in report(verdicts):
        print(line)
    sys.exit(0 if all(v.passed for v in verdicts) else 1)


if __name__ == "__main__":
    main()
