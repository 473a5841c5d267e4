"""An independent check of a run's synthesised tasks (issue 43): our own code, a live Chromium
through Playwright, no datagen import. For every task of `OUT/exports/tasks/tasks.jsonl`
(`datagen export OUT --format tasks`), on a fresh context each time (bench/taskpage.py):

- its check is false at the start (after the cookie banner is answered as datagen's default
  `browser.consent: reject` answers it), and so is our reading of its words: the instruction
  is not carried out there (bench/taskwords.py reads the words, bench/taskread.py decides
  them on the live page with its own queries, never with the check);
- both are true after the task's demonstration (its `actions`, real mouse and keyboard);
- after other episodes' action sets from the same start (the run's explore episodes, from
  the `steps` table read with pyarrow, not the task's own; then other tasks'
  demonstrations), replayed one by one: where our reading says the episode did what the words
  ask (another way: another product's "Add to cart" for `Make the "Cart" button show 1`), it
  is set aside (the check is right to hold there; a check false there is too narrow, counted
  apart); on every other the check must be false. Episodes are replayed until three were not
  set aside, or none is left (said).

Words our grammar cannot read fail their task, never pass it. The bundled sites are served by
a static server of our own on 127.0.0.1 (`site://shop/` → `http://127.0.0.1:PORT/shop/`).

    datagen run pipelines/demo.yaml -o /tmp/demo && datagen export /tmp/demo --format tasks
    python bench/taskcheck.py /tmp/demo          # figures; exit 1 when a task fails
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository's root is where bench is
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.dataset as ds
from playwright.async_api import Page, async_playwright

from bench.taskpage import CHROMIUM, DESCRIBE, SITES, act, do, holds, served, start, steady
from bench.taskread import Seen, Start, done, record, seen_at, start_of
from bench.taskwords import Reading, parse

__all__ = ["DESCRIBE", "check_all", "do", "episodes", "served"]
OTHERS = 3  # other episodes that did not do the task, each task's check must be false after


@dataclass
class Episode:
    """An action set from a task's start: a run's explore episode or a task's demonstration."""

    episode_id: str
    start_url: str
    actions: list[dict[str, Any]]


def episodes(out: Path) -> dict[str, Episode]:
    """The run's episodes with their recorded actions, by id (pyarrow, not datagen)."""
    starts = ds.dataset(out / "episodes").to_table(columns=["episode_id", "start_url"])
    found = {
        e: Episode(e, s, [])
        for e, s in zip(
            starts["episode_id"].to_pylist(), starts["start_url"].to_pylist(), strict=True
        )
    }
    columns = ["episode_id", "step_index", "action_json"]
    rows = ds.dataset(out / "steps").to_table(columns=columns).to_pylist()
    for row in sorted(rows, key=lambda r: (r["episode_id"], r["step_index"])):
        action = json.loads(row["action_json"])
        if action["type"] != "done":
            found[row["episode_id"]].actions.append(action)
    return found


def words_of(task: dict[str, Any]) -> str:
    """The words datagen wrote: its own where a model reworded them (provenance `ours`)."""
    return str(task.get("provenance", {}).get("ours") or task["instruction"])


def pool(
    task: dict[str, Any], tasks: list[dict[str, Any]], runs: dict[str, Episode]
) -> list[Episode]:
    """Every other action set from the task's start, in the order they are read: the run's
    explore episodes but the task's own, then other tasks' demonstrations."""
    own = task.get("provenance", {}).get("episode_id")
    found = [
        e
        for e in sorted(runs.values(), key=lambda e: e.episode_id)
        if e.start_url == task["start_url"] and e.episode_id != own and e.actions
    ]
    found += [
        Episode(f"task:{t['id']}", t["start_url"], t["actions"])
        for t in tasks
        if t is not task and t["start_url"] == task["start_url"]
    ]
    return found


@dataclass
class Other:
    """Another action set replayed for a task: the check after it, and our reading's answer
    (None: no reading), with the acts we saw it do."""

    episode: Episode
    check: bool
    words: bool | None
    seen: list[Seen]

    def clicked(self) -> str:
        return ", ".join(s.said() for s in self.seen) or "nothing"


@dataclass
class Verdict:
    task: dict[str, Any]
    reading: Reading | None = None
    start: Start | None = None
    at_start: bool | None = None
    after_demo: bool | None = None
    words_start: bool | None = None
    words_demo: bool | None = None
    others: list[Other] = field(default_factory=list)  # replayed, in order
    error: str = ""

    @property
    def set_aside(self) -> list[Other]:
        """The other episodes that did the task another way, as we read the words."""
        return [o for o in self.others if o.words]

    @property
    def counted(self) -> list[Other]:
        return [o for o in self.others if not o.words]

    @property
    def wrong(self) -> list[Other]:
        """The check true after an episode that did not do the task: not specific."""
        return [o for o in self.counted if o.check]

    @property
    def narrow(self) -> list[Other]:
        """The check false after an episode whose final page shows the task done (our reading
        of an end state): a check too narrow. (Words of acts are read from the acts: a later
        act may have undone them, `undone`.)"""
        steps = self.reading is not None and self.reading.kind == "steps"
        return [o for o in self.set_aside if not o.check and not steps]

    @property
    def undone(self) -> list[Other]:
        """The check false after an episode that did the acts the words ask, and more."""
        steps = self.reading is not None and self.reading.kind == "steps"
        return [o for o in self.set_aside if not o.check and steps]

    @property
    def after_others(self) -> dict[str, bool]:
        """The check after each other episode that did not do the task, by id."""
        return {o.episode.episode_id: o.check for o in self.counted}

    @property
    def passed(self) -> bool:
        return (
            not self.error
            and self.reading is not None
            and self.at_start is False
            and self.after_demo is True
            and self.words_start is False
            and self.words_demo is True
            and len(self.counted) >= OTHERS
            and not self.wrong
        )


async def replay(page: Page, actions: list[dict[str, Any]]) -> list[Seen]:
    """The actions done on `page`, with what we saw each act on."""
    seen: list[Seen] = []
    for action in actions:
        record(seen, await steady(page, functools.partial(seen_at, page, action)))
        await act(page, action)
    return seen


async def reads(page: Page, v: Verdict, seen: list[Seen]) -> tuple[bool, bool | None]:
    """The check, and our reading of the words (None: none), on the page after `seen`."""
    check = await steady(page, lambda: holds(page, v.task["check"]))
    reading, start = v.reading, v.start
    if reading is None or start is None:
        return check, None
    return check, await steady(page, lambda: done(page, reading, start, seen))


async def check_all(
    tasks: list[dict[str, Any]],
    runs: dict[str, Episode],
    base: str,
    parallel: int = 3,
    executable: str = CHROMIUM,
    shots: Path | None = None,
) -> list[Verdict]:
    """Every task's verdict. Each other action set is replayed once and read by every task of
    its start; a task reads them in order until OTHERS did not do it (or none is left)."""
    verdicts = [Verdict(t, parse(words_of(t))) for t in tasks]
    gate = asyncio.Semaphore(parallel)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=executable)

        async def own(v: Verdict) -> None:
            async with gate:
                try:
                    page = await start(browser, v.task["start_url"].replace("site://", base, 1))
                    v.start = await steady(page, lambda: start_of(page))
                    v.at_start, v.words_start = await reads(page, v, [])
                    if shots:
                        await page.screenshot(path=shots / f"{v.task['id']}-0.png")
                    seen: list[Seen] = []
                    for i, action in enumerate(v.task["actions"], 1):
                        record(seen, await steady(page, functools.partial(seen_at, page, action)))
                        await act(page, action)
                        if shots:
                            await page.screenshot(path=shots / f"{v.task['id']}-{i}.png")
                    v.after_demo, v.words_demo = await reads(page, v, seen)
                    await page.context.close()
                except Exception as exc:
                    v.error = f"{type(exc).__name__}: {exc}"

        replays: dict[str, asyncio.Task[dict[int, Other]]] = {}

        async def read_by_all(episode: Episode) -> dict[int, Other]:
            """The episode replayed once, read for every task of its start (by index)."""
            async with gate:
                page = await start(browser, episode.start_url.replace("site://", base, 1))
                try:
                    seen = await replay(page, episode.actions)
                    found = {}
                    for i, v in enumerate(verdicts):
                        if v.task["start_url"] == episode.start_url and not v.error:
                            check, words = await reads(page, v, seen)
                            found[i] = Other(episode, check, words, seen)
                    return found
                finally:
                    await page.context.close()

        async def others(i: int, v: Verdict) -> None:
            waiting = pool(v.task, tasks, runs)
            try:
                while waiting and len(v.counted) < OTHERS:
                    batch, waiting = (
                        waiting[: OTHERS - len(v.counted)],
                        waiting[OTHERS - len(v.counted) :],
                    )
                    for e in batch:
                        if e.episode_id not in replays:
                            replays[e.episode_id] = asyncio.ensure_future(read_by_all(e))
                    for e in batch:
                        v.others.append((await replays[e.episode_id])[i])
            except Exception as exc:
                v.error = f"{type(exc).__name__}: {exc}"

        try:
            await asyncio.gather(*[own(v) for v in verdicts])
            await asyncio.gather(*[others(i, v) for i, v in enumerate(verdicts) if not v.error])
        finally:
            await browser.close()
    return verdicts


def task_lines(v: Verdict, available: int) -> list[str]:
    """One task's line, then its other episodes that did it another way or that its check
    was wrongly true after."""
    t = v.task
    said = (
        v.reading.describe() if v.reading else "UNREAD: words this checker's grammar does not know"
    )
    few = (
        f" (only {len(v.counted)} of {available} other action sets did not do it)"
        if len(v.counted) < OTHERS
        else ""
    )
    lines = [
        f"{'PASS' if v.passed else 'FAIL'} {t['id']} {words_of(t)!r} {json.dumps(t['check'])}",
        f"  words read as: {said}",
        f"  check: start={v.at_start} demo={v.after_demo}; words done: start={v.words_start} "
        f"demo={v.words_demo}; others: replayed {len(v.others)}, set aside {len(v.set_aside)} "
        f"(task done another way), check wrongly true {len(v.wrong)} of {len(v.counted)}{few}"
        + (f"; ERROR {v.error}" if v.error else ""),
    ]
    for o in v.set_aside:
        verdict = (
            "check true"
            if o.check
            else "check FALSE: too narrow"
            if o in v.narrow
            else "check false: the acts done, then others (undone?)"
        )
        lines.append(f"  set aside {o.episode.episode_id} ({verdict}), which did: {o.clicked()}")
    for o in v.wrong:
        lines.append(f"  WRONGLY TRUE after {o.episode.episode_id}, which did: {o.clicked()}")
    return lines


def report(verdicts: list[Verdict], available: dict[str, int]) -> list[str]:
    """Per task lines, then the totals."""
    n = len(verdicts)
    lines = [line for v in verdicts for line in task_lines(v, available[v.task["id"]])]
    replayed = sum(len(v.others) for v in verdicts)
    aside = sum(len(v.set_aside) for v in verdicts)
    narrow = sum(len(v.narrow) for v in verdicts)
    undone = sum(len(v.undone) for v in verdicts)
    wrong = sum(len(v.wrong) for v in verdicts)
    clean = sum(len(v.counted) >= OTHERS and not v.wrong for v in verdicts)
    few = sum(len(v.counted) < OTHERS for v in verdicts)
    lines += [
        f"tasks {n}; passed {sum(v.passed for v in verdicts)}",
        f"check false at the start: {sum(v.at_start is False for v in verdicts)} of {n}; "
        f"true after the demonstration: {sum(v.after_demo is True for v in verdicts)} of {n}",
        f"words read: {sum(v.reading is not None for v in verdicts)} of {n}; not done at the "
        f"start: {sum(v.words_start is False for v in verdicts)} of {n}; done after the "
        f"demonstration: {sum(v.words_demo is True for v in verdicts)} of {n}",
        f"other episodes: {replayed} replayed; {aside} set aside as the task done another way "
        f"({aside - narrow - undone} check true; check false: {narrow} too narrow, {undone} "
        f"the acts asked done, then others); the check wrongly true after {wrong}",
        f"check false after {OTHERS} other episodes that did not do the task: {clean} of {n}"
        f" ({few} with fewer than {OTHERS} such episodes from their start)",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
    available = {t["id"]: len(pool(t, tasks, runs)) for t in tasks}
    for line in report(verdicts, available):
        print(line)
    sys.exit(0 if all(v.passed for v in verdicts) else 1)


if __name__ == "__main__":
    main()
