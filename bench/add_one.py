"""The demo's add-one tasks, solved by explore episodes as `pipelines/demo.yaml` runs them.

What it measures: each bundled task that asks to add one thing (`todo-add-item`: a new item on
the todo list; `shop-add-any`: any product in the cart) is run as explore episodes with the
demo's policy, browser and run settings (`pipelines/demo.yaml`: seed, max_steps, the task's
own step budget) through `datagen.pipeline.run_episode`, one episode per repeat index (each a
seed of its own). Solved: the task's own success check (its `check.js`, on the live page)
passed. Also counted: episodes that typed a value and ended without completing it (no Enter
or completing click after the last typing: the issue-34 regression), and steps whose
description places an element target by coordinates.

    .venv/bin/python -m bench.add_one [--episodes N] [--tasks ID ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path

from datagen.browser.host import BrowserHost
from datagen.config import load_pipeline
from datagen.pipeline import EpisodeOutcome, ShardContext, run_episode
from datagen.sink.storage import LocalStorage
from datagen.source.readers import BUNDLED_SITES, read_sites
from datagen.source.serve import SiteServer

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "pipelines" / "demo.yaml"
ADD_ONE = ("todo-add-item", "shop-add-any")
COORDINATES = re.compile(r"\bat \(\d+, \d+\)")


def unsubmitted(outcome: EpisodeOutcome) -> bool:
    """Did the episode end with a typed value it never completed (no Enter, no click after
    the last typing)?"""
    kinds = [s.action_type for s in outcome.steps]
    if "type" not in kinds:
        return False
    last = len(kinds) - 1 - kinds[::-1].index("type")
    after = outcome.steps[last + 1 :]
    return not any(s.action_type in ("key", "click") for s in after)


async def run_bench(episodes: int, task_ids: list[str]) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp, SiteServer(BUNDLED_SITES) as sites:
        config = load_pipeline(DEMO, output=str(Path(tmp) / "out"))
        tasks = [t for t in read_sites(BUNDLED_SITES) if t.id in task_ids]
        host = BrowserHost(config.browser, allow=[sites.origin])
        await host.start()
        ctx = ShardContext(
            config=config,
            run_id="bench-add-one",
            host=host,
            storage=LocalStorage(Path(tmp) / "out"),
            resolve_url=sites.resolve,
        )
        out: dict[str, dict[str, float]] = {}
        try:
            for task in tasks:
                solved = left_typed = coords = steps = 0
                started = time.perf_counter()
                for repeat in range(episodes):
                    outcome = await run_episode(task, repeat, ctx)
                    ok = bool(outcome.episode and outcome.episode.success)
                    solved += ok
                    left_typed += unsubmitted(outcome)
                    steps += len(outcome.steps)
                    coords += sum(
                        bool(s.target_selector and COORDINATES.search(s.action_description))
                        for s in outcome.steps
                    )
                    print(
                        f"{task.id} #{repeat}: {'solved' if ok else 'not solved'}, "
                        f"{len(outcome.steps)} steps",
                        file=sys.stderr,
                    )
                out[task.id] = {
                    "episodes": episodes,
                    "solved": solved,
                    "solved_share": round(solved / episodes, 3),
                    "typed_not_completed": left_typed,
                    "steps": steps,
                    "coordinate_descriptions": coords,
                    "seconds": round(time.perf_counter() - started, 1),
                }
        finally:
            await host.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=20, help="episodes per task (default 20)")
    p.add_argument("--tasks", nargs="*", default=list(ADD_ONE), help="task ids")
    p.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = p.parse_args(argv)
    if args.episodes < 1:
        p.error("--episodes must be at least 1")
    figures = asyncio.run(run_bench(args.episodes, args.tasks))
    solved = sum(int(f["solved"]) for f in figures.values())
    total = sum(int(f["episodes"]) for f in figures.values())
    for task_id, f in figures.items():
        print(
            f"{task_id}: solved {f['solved']:.0f}/{f['episodes']:.0f} "
            f"({f['solved_share']:.1%}); typed and not completed {f['typed_not_completed']:.0f}; "
            f"coordinate descriptions {f['coordinate_descriptions']:.0f}/{f['steps']:.0f} steps"
        )
    print(f"all add-one tasks: solved {solved}/{total} ({solved / total:.1%})")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
