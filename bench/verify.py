"""What replay verification costs: its share of session time, replays per verified episode, and
the whole pipeline's CPU per recorded step ÷ a bare Playwright loop's, all measured in one run.
Method and results: docs/benchmarks.md, "Verification".

- `demo`: `pipelines/demo.yaml` as shipped (verification on), the same with `annotation.verify:
  null`, and two bare Playwright loops on the verified run's own episodes (each start URL, as
  many steps): bench/browser_loop.py's (a click on a random control each step), and the same
  loop doing the episode's own recorded actions (its clicks, keys and typing, so it reaches
  the pages the pipeline reached and types what it typed: the same work, with nothing of the
  pipeline's around it). CPU: every process of the run (workers, browsers, driver, scheduler)
  from browsers up to exit, ÷ the steps the run recorded (replays record none: their CPU is
  spread over the recorded steps, amortised). Two ratios: the whole run's (the demo's CPU ÷ its
  steps, fixed costs included: the end's report, cluster and browsers closing) and the marginal
  one, per step of steady state: a second verified run with `run.repeats` 1 (half the demo's
  episodes), then (CPU of the demo − CPU of the half) ÷ (their steps' difference), against the
  same difference of the bare loop on each run's episodes: what a step costs once fixed costs
  are spread over a production run of thousands of steps.
- `list`: the bundled todo app only (a list app: explore takes 10+ steps there), its tasks
  repeated, explore with `max_steps` 16: verification's share of session time where episodes
  are long.

    python bench/verify.py --part demo --rounds 1 [--no-unverified]
    python bench/verify.py --part list --repeats 4
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from bench import browser_loop
from bench.e2e import bare_rounds
from bench.harness import (
    DEMO,
    Conditions,
    Run,
    conditions_line,
    parser,
    run_datagen,
    table,
    write_json,
    write_pipeline,
)
from bench.taskcheck import do
from datagen.browser.launch import find_executable
from datagen.source.readers import BUNDLED_SITES
from datagen.source.serve import SiteServer

Row = dict[str, Any]
EPISODE_COLUMNS = ["duration_s", "verify_ms", "verify_replays", "verification", "n_steps"]


class ActionsSide(browser_loop.BareSide):
    """The bare loop doing recorded actions: job seed i plays `episodes[i]` (action_json of
    each step, in order): a screenshot and the small evaluate each step, as the bare loop."""

    name = "bare-actions"

    def __init__(self, config: Any, episodes: list[list[Row]]) -> None:
        super().__init__(config)
        self.episodes = episodes

    async def episode(self, url: str, seed: int, steps: int) -> browser_loop.EpisodeResult:
        assert self._browser is not None, "start() first"
        result, cfg = browser_loop.EpisodeResult(), self.config
        context = await self._browser.new_context(
            viewport={"width": cfg.viewport.width, "height": cfg.viewport.height},
            device_scale_factor=cfg.device_scale_factor,
        )
        try:
            page = await context.new_page()
            await page.goto(url, wait_until="load")
            for action in self.episodes[seed][:steps]:
                await page.screenshot(type="jpeg", quality=cfg.image_quality)
                await page.evaluate(browser_loop.BARE_ELEMENTS_JS)
                try:
                    await do(page, action)
                except Exception:  # as the pipeline's step: an error, the episode goes on
                    result.action_errors += 1
                await page.wait_for_load_state("load")
                result.steps += 1
        except Exception as exc:  # recorded in the result, never aborts the round
            result.failure = f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            await context.close()
        return result


async def bare_actions(out: Path, sessions: int) -> browser_loop.RoundResult:
    """The bare loop on the run's own episodes, each doing its recorded actions."""
    steps = table(out, "steps", ["episode_id", "step_index", "action_json"])
    by_episode: dict[str, list[Row]] = {}
    for s in sorted(steps, key=lambda s: (s["episode_id"], s["step_index"])):
        by_episode.setdefault(s["episode_id"], []).append(json.loads(s["action_json"]))
    episodes = table(out, "episodes", ["episode_id", "start_url"])
    config = browser_loop.bench_config(find_executable(None, None))
    with SiteServer(BUNDLED_SITES) as server:
        played = [by_episode.get(e["episode_id"], []) for e in episodes]
        jobs = [(server.resolve(e["start_url"]), i) for i, e in enumerate(episodes)]
        side = ActionsSide(config, played)
        try:
            await side.start()
            await browser_loop.run_jobs(side, jobs[:3], 2, sessions)  # warm up
            return await browser_loop.run_round(side, 0, jobs, [len(p) for p in played], sessions)
        finally:
            await side.close()


def verification_figures(episodes: list[Row]) -> Row:
    """From episode rows: verification's share of session time (Σ verify ÷ Σ (episode +
    verify)), replays per verified episode, and episodes by verification status."""
    verify_s = sum((e["verify_ms"] or 0.0) for e in episodes) / 1000
    session_s = sum(e["duration_s"] for e in episodes) + verify_s
    verified = [e for e in episodes if e["verification"]]  # some need no replay (one action)
    replays = sum(e["verify_replays"] or 0 for e in verified)
    return {
        "session_s": round(session_s, 2),
        "verify_s": round(verify_s, 2),
        "share": round(verify_s / session_s, 4) if session_s else 0.0,
        "verified": len(verified),
        "replays": replays,
        "replays_per_verified": round(replays / len(verified), 2) if verified else 0.0,
        "status": dict(Counter(e["verification"] or "null" for e in episodes)),
        "episodes": len(episodes),
        "mean_steps": round(sum(e["n_steps"] for e in episodes) / max(len(episodes), 1), 1),
    }


def cpu_ms_per_step(run: Run) -> float:
    """Every process's CPU over the shard phase ÷ the steps the run recorded."""
    return 1000 * sum(run.cpu.values()) / max(run.steps, 1)


def demo_spec(verify: bool, repeats: int | None = None) -> Row:
    spec: Row = yaml.safe_load(DEMO.read_text())
    spec["cluster"]["dashboard"] = "127.0.0.1:0"  # a free port: 8787 may be taken
    spec["annotation"]["tasks"] = None  # task synthesis is measured apart (bench/synth.py)
    if not verify:
        spec["annotation"]["verify"] = None
    if repeats is not None:
        spec["run"]["repeats"] = repeats
    return spec


def marginal_ms(big: tuple[float, int], small: tuple[float, int]) -> float:
    """CPU ms per step of steady state: (CPU-s, steps) of a big and a small run, differenced,
    so what both pay once (starting, ending) drops out."""
    return 1000 * (big[0] - small[0]) / max(big[1] - small[1], 1)


def part_demo(a: argparse.Namespace) -> Row:
    """The demo with verification, without it, half of it, and the bare loop on its episodes."""
    sessions = demo_spec(True)["cluster"]
    sessions = sessions["workers"] * sessions["sessions_per_worker"]
    cond, rounds = Conditions(), list[Row]()
    sides = [("verified", True, None), ("half", True, 1)]
    if a.unverified:
        sides.insert(1, ("unverified", False, None))
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            runs: dict[str, Run] = {}
            for name, verify, repeats in sides:
                pipeline = write_pipeline(Path(tmp), f"{name}-{i}", demo_spec(verify, repeats))
                runs[name] = run_datagen(pipeline, Path(tmp) / f"{name}-{i}")
            bare = {
                name: asyncio.run(
                    bare_rounds(sessions, i, (1, 1), episode_shape(Path(tmp), name, i))
                )["matched"][0]
                for name in ("verified", "half")
            }
            same = asyncio.run(bare_actions(Path(tmp) / f"verified-{i}", sessions))
            figures = verification_figures(
                table(Path(tmp) / f"verified-{i}", "episodes", EPISODE_COLUMNS)
            )
            cpu = {k: round(cpu_ms_per_step(r), 1) for k, r in runs.items()}
            cpu |= {"bare": round(bare["verified"].cpu_ms_per_step, 1)}
            cpu |= {"bare_actions": round(same.cpu_ms_per_step, 1)}
            v, h = runs["verified"], runs["half"]
            bv, bh = bare["verified"], bare["half"]
            marginal = {
                "verified": round(marginal_ms((sum(v.cpu.values()), v.steps), (sum(h.cpu.values()), h.steps)), 1),
                "bare": round(marginal_ms((bv.cpu.total, bv.steps), (bh.cpu.total, bh.steps)), 1),
            }  # fmt: skip
            rounds.append(
                {
                    "verification": figures,
                    "cpu_ms_per_step": cpu,
                    "marginal_cpu_ms_per_step": marginal,
                    "steps": {k: r.steps for k, r in runs.items()}
                    | {"bare": bv.steps, "bare_half": bh.steps, "bare_actions": same.steps},
                    "cpu_s_by_process": {k: r.cpu for k, r in runs.items()},
                    "bare_actions_errors": same.action_errors,
                }
            )
    conditions = cond.end()
    result: Row = {"rounds": rounds, "conditions": conditions}
    for i, r in enumerate(rounds):
        print_demo_round(i, r)
    print(f"  {conditions_line(conditions)}")
    return result


def episode_shape(tmp: Path, name: str, i: int) -> list[tuple[str, int]]:
    """A run's episodes as (start URL, steps), for the bare loop to do as many."""
    rows = table(tmp / f"{name}-{i}", "episodes", ["start_url", "n_steps"])
    return [(e["start_url"], e["n_steps"]) for e in rows]


def print_demo_round(i: int, r: Row) -> None:
    cpu, v, m = r["cpu_ms_per_step"], r["verification"], r["marginal_cpu_ms_per_step"]
    print(f"demo round {i}: steps {r['steps']}")
    unverified = (
        f", unverified {cpu['unverified']} ({cpu['unverified'] / cpu['bare']:.2f} × bare)"
        if "unverified" in cpu
        else ""
    )
    print(
        f"  whole run, CPU ms per recorded step: verified {cpu['verified']}{unverified}, bare "
        f"{cpu['bare']}; ratio verified ÷ bare {cpu['verified'] / cpu['bare']:.2f}"
    )
    print(
        f"  the bare loop doing the episodes' own actions: {cpu['bare_actions']} CPU ms per "
        f"step; ratio verified ÷ it {cpu['verified'] / cpu['bare_actions']:.2f}"
    )
    print(
        f"  steady state (demo − half ÷ their steps' difference): verified {m['verified']}, bare "
        f"{m['bare']} CPU ms per step; ratio {m['verified'] / m['bare']:.2f}"
    )
    print(
        f"  verification: {v['share']:.1%} of session time ({v['verify_s']} of "
        f"{v['session_s']} s), {v['replays']} replays for {v['verified']} verified "
        f"episodes ({v['replays_per_verified']} each); statuses {v['status']}"
    )


def part_list(a: argparse.Namespace) -> Row:
    """The todo app's tasks, explored 16 steps deep: verification's share on long episodes."""
    spec = demo_spec(True)
    todo = Path(__file__).resolve().parents[1] / "datagen" / "sites" / "todo" / "tasks.jsonl"
    spec["sources"] = [{"type": "jsonl", "path": str(todo)}]
    spec["run"] |= {"max_steps": 16, "repeats": a.repeats}
    cond = Conditions()
    with tempfile.TemporaryDirectory() as tmp:
        run = run_datagen(write_pipeline(Path(tmp), "list", spec), Path(tmp) / "out")
        figures = verification_figures(table(Path(tmp) / "out", "episodes", EPISODE_COLUMNS))
    conditions = cond.end()
    result: Row = {"verification": figures, "steps": run.steps, "conditions": conditions}
    v = figures
    print(
        f"list (todo app, explore, max_steps 16, {a.repeats} repeats): {v['episodes']} "
        f"episodes of {v['mean_steps']} steps on average"
    )
    print(
        f"  verification: {v['share']:.1%} of session time ({v['verify_s']} of {v['session_s']} "
        f"s), {v['replays']} replays for {v['verified']} verified episodes "
        f"({v['replays_per_verified']} each); statuses {v['status']}"
    )
    print(f"  {conditions_line(conditions)}")
    return result


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--part", choices=("demo", "list", "all"), default="all")
    p.add_argument("--rounds", type=int, default=1, help="demo: rounds of the runs")
    p.add_argument(
        "--no-unverified", dest="unverified", action="store_false",
        help="demo: leave out the run with `verify: null`",
    )  # fmt: skip
    p.add_argument("--repeats", type=int, default=4, help="list: each todo task's repeats")
    a = p.parse_args(argv)
    report: Row = {}
    if a.part in ("demo", "all"):
        report["demo"] = part_demo(a)
    if a.part in ("list", "all"):
        report["list"] = part_list(a)
    write_json(a.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
