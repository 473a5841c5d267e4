"""A small datagen output written without a browser, for tests of `datagen export`: rows built
from the row models and committed through the sink's own `write_shard`, with screenshots drawn
so that which of them are near-duplicates is known.

Each site has a start page shared by all its tasks (step 0) and one page per task (step 1,
the final screen too); a task's repeats see the same pages, the second repeat's with a small
mark (a near-duplicate). The first repeat solves its task (verified by replay: every step
needed), the second fails, clicking elsewhere. `twin` gives a task a near-duplicate of another
site's start page instead of its own page: the sites must land on one side.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from datagen import SCHEMA_VERSION, __version__
from datagen.records import Click, EpisodeRow, GroundingRow, ImageData, StepRow, action_json
from datagen.sink.storage import LocalStorage
from datagen.sink.writer import claim_output, write_shard
from tests.helpers import shard_stats

RUN = "synthetic"
WIDTH, HEIGHT = 320, 200
ELEMENTS = 3  # grounding rows per screenshot


@dataclass(frozen=True)
class Task:
    """One task of the synthetic run: its site, and the start page it borrows, if any."""

    site: str
    name: str
    twin: str | None = None  # a site whose start page this task's page nearly duplicates
    url: str | None = None  # a start URL of a task list (no site named): `site` is only a seed


def page(seed: str, mark: int = 0) -> bytes:
    """A page's screenshot: blocks of colour drawn from `seed` (pages of other seeds are far
    apart by phash); `mark` > 0 adds a small square (a near-duplicate of the unmarked page)."""
    rng = random.Random(seed)
    small = Image.new("RGB", (8, 5))
    small.putdata([tuple(rng.randrange(256) for _ in range(3)) for _ in range(40)])
    image = small.resize((WIDTH, HEIGHT), Image.Resampling.NEAREST)
    if mark:
        ImageDraw.Draw(image).rectangle((8 * mark, 8, 8 * mark + 10, 18), fill=(255, 255, 255))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()


def task_page(task: Task, repeat: int) -> bytes:
    """The screenshot of a task's own page (step 1, and the final screen)."""
    if task.twin:
        return page(f"start:{task.twin}", mark=1 + repeat)
    return page(f"task:{task.site}:{task.name}", mark=repeat)


def _common(task: Task, episode: str) -> dict[str, object]:
    return {
        "run_id": RUN,
        "schema_version": SCHEMA_VERSION,
        "task_id": f"{task.site}-{task.name}",
        "episode_id": episode,
        "browser_version": "chromium/1.0",
    }


def _episode(task: Task, repeat: int) -> tuple[EpisodeRow, list[StepRow], list[GroundingRow]]:
    episode = f"{task.site}-{task.name}-{repeat}"
    group = f"g-{task.site}-{task.name}"
    common = _common(task, episode)
    provenance = {"playwright_version": "1.0", "datagen_version": __version__, "policy": "explore"}
    # a task list's tasks each start on a page of their own: only their place can join them
    start = f"start:{task.site}:{task.name}" if task.url else f"start:{task.site}"
    shots = [page(start), task_page(task, repeat)]
    x, y = (40.0, 20.0) if repeat == 0 else (250.0, 150.0)  # the failed repeat clicks elsewhere
    steps = [
        StepRow(
            **common,
            **provenance,
            group_id=group,
            sample_index=repeat,
            step_index=i,
            url=f"http://127.0.0.1/{task.site}/{i}",
            title="t",
            screenshot=ImageData(bytes=shot),
            image_width=WIDTH,
            image_height=HEIGHT,
            viewport_width=WIDTH,
            viewport_height=HEIGHT,
            device_scale_factor=1.0,
            action_type="click",
            action_repr=f"click({x:g}, {y:g})",
            action_json=action_json(Click(x=x, y=y)),
            action_description='Click the "Go" button',
            x_px=x,
            y_px=y,
            target_bbox_px=(20.0, 10.0, 60.0, 30.0) if repeat == 0 else None,
            n_elements=ELEMENTS,
            observe_ms=1.0,
            act_ms=1.0,
            needed=repeat == 0,
        )
        for i, shot in enumerate(shots)
    ]
    grounding = [
        GroundingRow(
            **common,
            step_index=i,
            element_index=k,
            referring_expression=f"the button {k}",
            role="button",
            tag="button",
            name=f"b{k}",
            text=f"b{k}",
            selector=f"#b{k}",
            bbox_px=(10.0 + 50 * k, 10.0, 50.0 + 50 * k, 30.0),
            bbox_norm=((10 + 50 * k) / WIDTH, 0.05, (50 + 50 * k) / WIDTH, 0.15),
            bbox_css=(10.0 + 50 * k, 10.0, 50.0 + 50 * k, 30.0),
            point_px=(30.0 + 50 * k, 20.0),
            image_width=WIDTH,
            image_height=HEIGHT,
            hit_test=True,
            url=f"http://127.0.0.1/{task.site}/{i}",
        )
        for i in range(len(shots))
        for k in range(ELEMENTS)
    ]
    row = EpisodeRow(
        **common,
        **provenance,
        source="urls" if task.url else "sites",
        site="" if task.url else task.site,
        instruction=f"Do {task.name} on {task.site}.",
        start_url=task.url or f"site://{task.site}/",
        final_url=f"http://127.0.0.1/{task.site}/1",
        n_steps=len(steps),
        success=repeat == 0,
        status="solved" if repeat == 0 else "max_steps",
        answer="",
        seed=repeat,
        group_id=group,
        sample_index=repeat,
        duration_s=1.0,
        final_screenshot=ImageData(bytes=shots[-1]),
        viewport_width=WIDTH,
        viewport_height=HEIGHT,
        device_scale_factor=1.0,
        verification="minimal" if repeat == 0 else None,
        verified_steps=len(steps) if repeat == 0 else None,
    )
    return row, steps, grounding


def write_run(
    out: Path, shards: list[list[Task]], name: str = "synthetic", scope: object = "site"
) -> Path:
    """An output at `out` with one shard per list of tasks (two repeats each), all committed;
    `scope`: the pipeline's `run.scope`."""
    storage = LocalStorage(out)
    pipeline = {
        "name": name,
        "sources": [{"type": "sites", "dir": None}],
        "policy": {"type": "explore"},
        "run": {"scope": scope},
    }
    claim_output(storage, RUN, pipeline)
    for shard, tasks in enumerate(shards):
        add_shard(storage, shard, tasks)
    return out


def add_shard(storage: LocalStorage, shard: int, tasks: list[Task]) -> None:
    """Commit one more shard of `tasks` to the output."""
    tables: dict[str, list[object]] = {"episodes": [], "steps": [], "grounding": [], "rejects": []}
    for task in tasks:
        for repeat in (0, 1):
            episode, steps, grounding = _episode(task, repeat)
            tables["episodes"].append(episode)
            tables["steps"] += steps
            tables["grounding"] += grounding
    write_shard(storage, shard, tables, shard_stats(shard))  # type: ignore[arg-type]
