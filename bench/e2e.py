"""End-to-end benchmarks: the whole job with real browsers, as `datagen run` runs it, through its
CLI and output only (tables, shard markers, manifest). Each part is a ratio of two things
measured in the same run, printed with its conditions (load, busy cores, the stand-in's speed
and calibration, workers × sessions, tasks per shard). Method and results: docs/benchmarks.md,
"End to end" (and "Scale-out", "CPU-aware admission").

- `utilisation`: the vlm policy against the stand-in, small and large shards: engine req/s ÷
  the stand-in's maximum for the same request mix (`bench.engine.client_alone_max`), and mean
  in flight (its /metrics) ÷ configured.
- `naive`: datagen's episodes/s at 1 and 2 workers ÷ `bench/naive.py`'s (one browser, one
  episode after another, no datagen code), with the gain the engine model allows.
- `pipeline`: `pipelines/demo.yaml` steps/s ÷ bench/browser_loop.py's bare loop, and where the
  session time goes.
- `admission` (not by default): explore runs, session limit static then adaptive.
- `scale_out` (not by default): `pipelines/demo.yaml` on 1 Dask worker, then 2.

    python bench/e2e.py --part utilisation --quick     # ~3 minutes on 2 cores
    python bench/e2e.py --part naive --quick
    python bench/e2e.py --part pipeline --quick
    python bench/e2e.py --json out.json                # the first three, full size
    python bench/e2e.py --part admission --sessions 32 --tasks 128
    python bench/e2e.py --part scale_out --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil
import yaml

from bench import browser_loop
from bench.engine import (
    PREFERRED,
    Sampler,
    client_alone_max,
    describe,
    mix_of,
    model_gain,
    shape_of,
)
from bench.harness import (
    DEMO,
    Conditions,
    ProcessCpu,
    Run,
    StandIn,
    conditions_line,
    parser,
    print_columns,
    run_datagen,
    table,
    write_json,
    write_pipeline,
    write_tasks,
)
from bench.naive import NaiveTask, run_naive
from datagen.browser.launch import find_executable, launch_options
from datagen.source.readers import BUNDLED_SITES, list_sites, read_sites
from datagen.source.serve import SiteServer

Row = dict[str, Any]


# ----------------------------------------------------------------------- settings


def sites_pipeline(folder: Path, a: argparse.Namespace, name: str, **spec: Any) -> Path:
    """A pipeline of `a.tasks` bundled-site tasks on `a.workers` × `a.sessions` (dashboard on a
    free port), with `spec`'s sections (`policy`, `run`, `admission`, ...) over these."""
    cluster = {"workers": a.workers, "sessions_per_worker": a.sessions, "dashboard": "127.0.0.1:0"}
    cluster["admission"] = {"control": spec.pop("admission")}
    sources = [{"type": "jsonl", "path": str(write_tasks(folder, a.tasks))}]
    spec = {
        "name": name,
        "sources": sources,
        "cluster": cluster,
        "output": {"uri": "unused"},
    } | spec
    return write_pipeline(folder, name, spec)


def vlm_pipeline(folder: Path, url: str, a: argparse.Namespace, per_shard: int) -> Path:
    """The vlm policy (its defaults: localizer on, no judge); no grounding rows, so the model
    work per step is what the naive loop does too."""
    return sites_pipeline(
        folder, a, f"vlm-{per_shard}", policy={"type": "vlm"}, admission=a.admission,
        annotation={"grounding": False}, engine={"url": url, "max_in_flight": 4 * a.workers * a.sessions},
        run={"max_steps": a.max_steps, "tasks_per_shard": per_shard, "repeats": 1},
    )  # fmt: skip


def engine_slots(a: argparse.Namespace) -> int:
    """The stand-in's max_num_seqs: `--slots`, else one a session (workers × sessions)."""
    return int(a.slots or a.workers * a.sessions)


def engine_setting(a: argparse.Namespace) -> str:
    return (
        f"stand-in speed ×{a.speed:g}, {describe(a.calibration)}, max_num_seqs "
        f"{engine_slots(a)}; {a.workers} workers × {a.sessions} sessions, "
        f"{a.tasks} tasks × max_steps {a.max_steps}; admission {a.admission}"
    )


RUN_KEYS = ("steps", "ended", "shards", "phase_s", "startup_s", "busy_cores", "code")


def print_runs(runs: dict[str, Row]) -> None:
    """Runs side by side: each one's figures, its `datagen run`'s RUN_KEYS, and then which limit
    held its sessions in flight, each shard's peak sessions and the reject reasons."""
    columns = {
        name: {k: v for k, v in r.items() if not isinstance(v, dict | list)}
        | {k: r["run"][k] for k in RUN_KEYS if "run" in r}
        for name, r in runs.items()
    }
    print_columns(columns)
    for name, r in runs.items():
        if "run" in r:
            run = r["run"]
            held_by = run["held_by"] or "no binding-limit line printed"
            print(
                f"  {name}: {held_by}; peak sessions {run['peak_sessions']}, rejects {run['rejects'] or 'none'}"
            )


# ----------------------------------------------------------------------- part 1


def part_utilisation(a: argparse.Namespace) -> dict[str, Any]:
    capacity = engine_slots(a)
    runs: list[dict[str, Any]] = []
    indices: list[int] = []
    localized = 0
    cond = Conditions()
    with StandIn(capacity, a.speed, a.calibration, a.sim_arg) as sim, tempfile.TemporaryDirectory() as tmp:  # fmt: skip
        for per_shard in a.per_shard:
            folder = Path(tmp) / f"s{per_shard}"
            folder.mkdir()
            with Sampler(sim.url) as sampler:
                run = run_datagen(vlm_pipeline(folder, sim.url, a, per_shard), folder / "out")
            span, flight, rps, done = sampler.window()
            steps = table(
                folder / "out", "steps", ["step_index", "engine_roles", "engine_latency_ms"]
            )
            indices += [s["step_index"] for s in steps]
            localized += sum("localizer" in (s["engine_roles"] or "") for s in steps)
            # the most in flight can be: the share of the episodes' time spent waiting for the
            # model (datagen's own rows; the rest is browser work with nothing at the engine)
            waited = sum(s["engine_latency_ms"] or 0.0 for s in steps) / 1000
            durations = [e["duration_s"] for e in table(folder / "out", "episodes", ["duration_s"])]
            lived = sum(durations)
            steady = sampler.before_tail(lived / len(durations) if durations else 0.0)
            runs.append({"tasks_per_shard": per_shard, "run": asdict(run), "window_s": round(span, 2),
                         "mean_in_flight": round(flight, 2), "in_flight_before_tail": round(steady, 2),
                         "achieved_rps": round(rps, 3), "completed": done,
                         "model_share": round(waited / lived, 3) if lived else 0.0})  # fmt: skip
        maximum = client_alone_max(sim.url, mix_of(indices, localized), capacity, a.max_seconds)
        modelled, _ = model_gain(sim.config(), maximum.shapes, capacity)
    # The stand-in's maximum: measured with the client alone, or its engine model's rate for
    # the same mix, whichever is higher (a short window at a slow stand-in can cut a wave).
    ceiling = max(maximum.rps, modelled)
    for r in runs:
        r["utilisation"] = round(r["achieved_rps"] / ceiling, 3) if ceiling else 0.0
        r["in_flight_ratio"] = round(r["mean_in_flight"] / capacity, 3)
        r["in_flight_ratio_before_tail"] = round(r["in_flight_before_tail"] / capacity, 3)
    result: dict[str, Any] = {"setting": engine_setting(a), "capacity": capacity, "runs": runs,
              "maximum": asdict(maximum), "model_rps": round(modelled, 3), "conditions": cond.end()}  # fmt: skip
    print(f"utilisation: {engine_setting(a)}")
    print(
        f"  maximum (EngineClient alone, {maximum.sessions} sessions, {maximum.seconds:g} s): "
        f"{maximum.rps:.2f} req/s (engine model: {modelled:.2f}); P {maximum.prompt_tokens:.0f}, "
        f"O {maximum.completion_tokens:.0f} tokens a request, errors {maximum.errors}; "
        f"utilisation is against the higher, {ceiling:.2f}"
    )
    print_runs({f"{r['tasks_per_shard']} tasks/shard": r for r in runs})
    print(f"  {conditions_line(result['conditions'])}")
    return result


# ----------------------------------------------------------------------- part 2


def naive_tasks(server: SiteServer) -> list[NaiveTask]:
    """The bundled sites' tasks as plain data for bench/naive.py (which imports no datagen)."""
    return [
        NaiveTask(t.instruction, server.resolve(t.start_url), t.check.js if t.check else None)
        for t in read_sites(BUNDLED_SITES)
    ]


def datagen_against_naive(a: argparse.Namespace, sim: StandIn, folder: Path, workers: int) -> Row:
    """One `datagen run` of the vlm policy with `workers` × `a.sessions` and `a.naive_per_shard`
    tasks a shard: episodes/s over the shard phase and mean in flight at the stand-in (sampled
    from its /metrics) ÷ the sessions configured."""
    folder.mkdir()
    setting = argparse.Namespace(**{**vars(a), "workers": workers})
    with Sampler(sim.url) as sampler:
        run = run_datagen(vlm_pipeline(folder, sim.url, setting, a.naive_per_shard), folder / "out")
    _, flight, _, _ = sampler.window()
    sessions = workers * a.sessions
    ended_eps = run.ended / run.phase_s
    return {"workers": workers, "sessions": sessions, "run": asdict(run),
            "episodes_per_s": round(ended_eps, 4), "steps_per_s": round(run.steps / run.phase_s, 3),
            "mean_in_flight": round(flight, 2), "in_flight_ratio": round(flight / sessions, 3)}  # fmt: skip


def part_naive(a: argparse.Namespace) -> dict[str, Any]:
    """datagen at 1 and 2 workers (`--naive-workers`) ÷ bench/naive.py, on one stand-in at the
    published calibration; the naive loop runs last, alone, on the same stand-in."""
    capacity = max(a.naive_workers) * a.sessions
    cond = Conditions()
    with StandIn(capacity, a.speed, a.calibration, a.sim_arg) as sim, tempfile.TemporaryDirectory() as tmp:  # fmt: skip
        runs = [datagen_against_naive(a, sim, Path(tmp) / f"w{w}", w) for w in a.naive_workers]
        with SiteServer(BUNDLED_SITES) as server:
            naive_cond = Conditions()
            exe = find_executable(None, None)
            switches = list(launch_options(exe, True, [])["args"])  # type: ignore[call-overload]
            naive = run_naive(sim.url, naive_tasks(server), a.max_steps, a.naive_seconds, exe, switches)  # fmt: skip
            naive_conditions = naive_cond.end()
        shapes = [shape_of(u, float(len(u))) for u in naive.usage.values() if u]
        config = sim.config()
    naive_eps = naive.episodes / naive.seconds if naive.seconds else 0.0
    naive_steps = naive.steps / naive.seconds if naive.seconds else 0.0
    cores = psutil.cpu_count() or 1
    naive_cpu = naive_conditions["busy_cores"] * naive.seconds / max(1, naive.episodes)
    for r in runs:
        many, one = model_gain(config, shapes, r["sessions"])
        run = r["run"]
        ours_cpu = run["busy_cores"] * run["phase_s"] / max(1, run["ended"])
        r["ratio_episodes"] = round(r["episodes_per_s"] / naive_eps, 3) if naive_eps else 0.0
        r["ratio_steps"] = round(r["steps_per_s"] / naive_steps, 3) if naive_steps else 0.0
        r["ideal_gain"] = round(many / one, 2)
        r["share_of_ideal"] = round(r["ratio_episodes"] / r["ideal_gain"], 3)
        r["cpu_per_episode"] = round(ours_cpu, 3)
        r["cores_gain"] = round(cores / ours_cpu / naive_eps, 2) if ours_cpu and naive_eps else 0.0
    best = max(runs, key=lambda r: r["ratio_episodes"])
    result: dict[str, Any] = {
        "setting": engine_setting(a) + f"; {a.naive_per_shard} tasks a shard", "runs": runs,
        "naive": asdict(naive) | {"usage": {k: len(v) for k, v in naive.usage.items()}},
        "naive_cpu_per_episode": round(naive_cpu, 3), "naive_conditions": naive_conditions,
        # the summary's figures: the configured cluster (the most workers)
        "ratio_episodes": runs[-1]["ratio_episodes"], "ideal_gain": runs[-1]["ideal_gain"],
        "share_of_ideal": runs[-1]["share_of_ideal"], "best_ratio": best["ratio_episodes"],
        "conditions": cond.end(),
    }  # fmt: skip
    print(f"naive: {result['setting']}")
    naive_column = result["naive"] | {"episodes_per_s": naive_eps, "steps_per_s": naive_steps}
    naive_column["engine_share"] = naive.engine_s / max(naive.seconds, 1e-9)
    print_runs({"naive": naive_column} | {f"{r['workers']} worker(s)": r for r in runs})
    print(f"  naive loop: {conditions_line(naive_conditions)}")
    print(f"  whole part: {conditions_line(result['conditions'])}")
    return result


# ----------------------------------------------------------------------- part 3


# Where the sessions' time goes: measured from the rows, or (last two) by difference.
PARTS_OF_TIME = {
    "settle": "measured: observations waiting for a quiet page (steps.settle_ms)",
    "observe": "measured: element scan + screenshot + stability check (observe_ms − settle_ms)",
    "sleep": "configured: the sleep after each action (browser.settle_ms × actions)",
    "act": "measured: click/type and wait for load (act_ms − that sleep)",
    "rest": "remainder in episodes: context, start page, final observation, checks, policy, "
    "grounding, rows (duration_s − the above)",
    "idle": "remainder of the slots: shard tails, Parquet writes, scheduling, admission "
    "(workers × sessions × phase − duration_s)",
}


def breakdown(out: Path, run: Run) -> dict[str, float]:
    """Where the sessions' time went, in session-seconds (PARTS_OF_TIME), and `slots`: every
    session of every worker over the shard phase."""
    manifest = json.loads((out / "_manifest.json").read_text())["pipeline"]
    workers, sessions = manifest["cluster"]["workers"], manifest["cluster"]["sessions_per_worker"]
    steps = table(out, "steps", ["observe_ms", "settle_ms", "act_ms", "action_type"])
    episodes = table(out, "episodes", ["duration_s"])
    settle = sum(s["settle_ms"] or 0.0 for s in steps) / 1000
    observe = sum(s["observe_ms"] for s in steps) / 1000 - settle
    act = sum(s["act_ms"] for s in steps) / 1000
    sleep = manifest["browser"]["settle_ms"] / 1000 * sum(s["action_type"] != "done" for s in steps)
    lived = sum(e["duration_s"] for e in episodes)
    slots = workers * sessions * run.phase_s
    return {
        "slots": slots, "settle": settle, "observe": observe, "sleep": sleep, "act": act - sleep,
        "rest": lived - settle - observe - act, "idle": slots - lived,
    }  # fmt: skip


async def bare_rounds(
    sessions: int, index: int, fixed: tuple[int, int], matched: list[tuple[str, int]]
) -> dict[str, tuple[browser_loop.RoundResult, dict[str, float]]]:
    """Two rounds of bench/browser_loop.py's bare Playwright loop (its own browser):
    `matched`, the pipeline's own episodes (each start URL, as many steps as the pipeline's
    episode took: a browser context costs ~8 steps' CPU, so episode length matters), and
    `fixed`, the browser-loop bench's shape (episodes per site, steps each); with the matched
    round's CPU seconds by kind of process."""
    config = browser_loop.bench_config(find_executable(None, None))
    sites = list_sites(BUNDLED_SITES)
    with SiteServer(BUNDLED_SITES) as server:
        side = browser_loop.BareSide(config)
        try:
            await side.start()
            episodes, steps = fixed
            jobs = browser_loop.make_jobs(server, sites, episodes, 0)
            await browser_loop.run_jobs(
                side, jobs[: len(sites)], browser_loop.WARMUP_STEPS, sessions
            )
            same = [(server.resolve(url), 1000 * index + i) for i, (url, _) in enumerate(matched)]
            lengths = [n for _, n in matched]
            with ProcessCpu() as cpu:
                mine = await browser_loop.run_round(side, index, same, lengths, sessions)
            return {
                "matched": (mine, dict(cpu.by_kind)),
                "fixed": (await browser_loop.run_round(side, index, jobs, steps, sessions), {}),
            }
        finally:
            await side.close()


def part_pipeline(a: argparse.Namespace) -> dict[str, Any]:
    demo = yaml.safe_load(DEMO.read_text())
    sessions = demo["cluster"]["workers"] * demo["cluster"]["sessions_per_worker"]
    cond = Conditions()
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        demo["cluster"]["dashboard"] = "127.0.0.1:0"  # a free port: 8787 may be taken
        pipeline = Path(tmp) / "demo.yaml"
        pipeline.write_text(yaml.safe_dump(demo))
        for i in range(a.rounds):
            out = Path(tmp) / f"demo-{i}"
            run = run_datagen(pipeline, out)
            parts = breakdown(out, run)
            shape = [(e["start_url"], e["n_steps"]) for e in table(out, "episodes", ["start_url", "n_steps"])]  # fmt: skip
            fixed = (a.bare_episodes, demo["run"]["max_steps"])
            bare = asyncio.run(bare_rounds(sessions, i, fixed, shape))
            rate = run.steps / run.phase_s
            rounds.append({"run": asdict(run), "breakdown": parts, "bare": {
                k: {"steps": b.steps, "episodes": len(shape) if k == "matched" else a.bare_episodes * 5,
                    "steps_per_s": b.steps_per_s, "cpu_ms_per_step": round(b.cpu_ms_per_step, 1),
                    "others_cores": round(b.others_cores, 2), "ratio": round(rate / b.steps_per_s, 3),
                    "cpu": {name: round(v, 2) for name, v in cpu.items()}}
                for k, (b, cpu) in bare.items()}})  # fmt: skip
    ours = sum(r["run"]["steps"] for r in rounds) / sum(r["run"]["phase_s"] for r in rounds)

    def bare_rate(kind: str) -> float:
        steps = sum(r["bare"][kind]["steps"] for r in rounds)
        seconds = sum(r["bare"][kind]["steps"] / r["bare"][kind]["steps_per_s"] for r in rounds)
        return float(steps / seconds)

    result: dict[str, Any] = {"rounds": rounds, "ratio": round(ours / bare_rate("matched"), 3),
              "ratio_fixed": round(ours / bare_rate("fixed"), 3), "conditions": cond.end(),
              "setting": f"pipelines/demo.yaml; bare loop {sessions} sessions on one browser, settle_ms 0"}  # fmt: skip
    print(f"pipeline: {result['setting']}")
    for i, r in enumerate(rounds):
        run, bare, parts = r["run"], r["bare"], r["breakdown"]
        mine = {"steps_per_s": run["steps"] / run["phase_s"], "run": run}
        print_runs({f"round {i} pipeline": mine} | {f"bare, {k}": b for k, b in bare.items()})
        # CPU ms a step by process (pipeline: browsers up → exit; bare: its matched round): on
        # a machine whose cores are all busy, this is the gap
        matched = bare["matched"]
        cpu = {"pipeline": (run["cpu"], run["steps"]), "bare": (matched["cpu"], matched["steps"])}
        per_step = {
            n: {k: 1000 * v / n_steps for k, v in c.items()} for n, (c, n_steps) in cpu.items()
        }
        print_columns(
            {f"CPU ms a step, {n}": c | {"in all": sum(c.values())} for n, c in per_step.items()}
        )
        slots, steps = parts["slots"], run["steps"]
        print(f"  session time: {slots:.1f} session-s = {1000 * slots / steps:.0f} ms per step")
        share = {"share": {k: parts[k] / slots for k in PARTS_OF_TIME}}
        print_columns(share | {"ms a step": {k: 1000 * parts[k] / steps for k in PARTS_OF_TIME}})
    print("\n".join(f"  {key}: {what}" for key, what in PARTS_OF_TIME.items()))
    print(
        f"  ratio steps/s (pipeline ÷ bare on the pipeline's episodes): {result['ratio']:.2f}; "
        f"÷ bare on {a.bare_episodes} × 5 episodes of {demo['run']['max_steps']} steps: {result['ratio_fixed']:.2f}"
    )
    print(f"  {conditions_line(result['conditions'])}")
    return result


# ----------------------------------------------------------------------- part 4


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def part_admission(a: argparse.Namespace) -> dict[str, Any]:
    """CPU-aware admission, before and after: explore runs of the bundled sites (no model: the
    CPU is what the sessions share) with the session limit fixed (`cluster.admission.control:
    static`, what datagen did before) and adaptive, in the same run. Observation latency
    p50/p95 (whole, and its own work without the wait for a quiet page) from the steps table."""
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench-admission-") as tmp:
        for control in ("static", "adaptive"):
            deadline = time.monotonic() + a.quiet_wait_s  # else a round inherits the last's load
            while os.getloadavg()[0] >= a.quiet_load and time.monotonic() < deadline:
                time.sleep(5)
            folder = Path(tmp) / control
            folder.mkdir()
            sizes = {"max_steps": a.admission_steps, "tasks_per_shard": a.admission_per_shard, "repeats": 1}  # fmt: skip
            pipeline = sites_pipeline(folder, a, f"admission-{control}", policy={"type": "explore"}, admission=control, run=sizes)  # fmt: skip
            cond = Conditions()
            run = run_datagen(pipeline, folder / "out")
            steps = table(folder / "out", "steps", ["observe_ms", "settle_ms"])
            whole = [float(s["observe_ms"]) for s in steps]
            work = [float(s["observe_ms"]) - float(s["settle_ms"] or 0.0) for s in steps]
            r: dict[str, Any] = {"control": control, "run": asdict(run), "episodes_per_s": round(run.episodes / run.phase_s, 3),
                 "steps_per_s": round(len(steps) / run.phase_s, 2),
                 "observe_p50_ms": round(percentile(whole, 0.5)), "observe_p95_ms": round(percentile(whole, 0.95)),
                 "observe_work_p50_ms": round(statistics.median(work)) if work else 0,
                 "observe_work_p95_ms": round(percentile(work, 0.95)), "conditions": cond.end()}  # fmt: skip
            rounds.append(r)
    print_runs({r["control"]: r for r in rounds})
    print("\n".join(f"  {r['control']}: {conditions_line(r['conditions'])}" for r in rounds))
    return {"rounds": rounds}


# ----------------------------------------------------------------------- part 5


def part_scale_out(a: argparse.Namespace) -> dict[str, Any]:
    """`pipelines/demo.yaml` (explore, grounding, no model) on 1 worker, then 2, alternating
    (`--rounds` of each): steps/s over the shard phase, 2 workers ÷ 1, and steps per busy
    core-second (does a second worker turn extra cores into steps as well as the first?)."""
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            for workers in (1, 2):
                spec = yaml.safe_load(DEMO.read_text())
                spec["cluster"] |= {"workers": workers, "dashboard": "127.0.0.1:0"}
                folder = Path(tmp) / f"w{workers}-{i}"
                folder.mkdir()
                run = run_datagen(write_pipeline(folder, "demo", spec), folder / "out")
                if run.code != 0:
                    raise SystemExit(f"datagen run failed (exit {run.code})")
                rate = run.steps / run.phase_s
                runs.append({"workers": workers, "steps": run.steps, "startup_s": run.startup_s,
                             "shard_phase_s": run.phase_s, "steps_per_s": round(rate, 2), "cores_busy": run.busy_cores,
                             "steps_per_core_s": round(rate / max(run.busy_cores, 1e-6), 2)})  # fmt: skip
    print_columns({f"{r['workers']} worker(s), round {i // 2}": r for i, r in enumerate(runs)})
    by = {w: statistics.mean(r["steps_per_s"] for r in runs if r["workers"] == w) for w in (1, 2)}
    ratio = by[2] / by[1]
    print(f"ratio steps/s (2 workers / 1 worker): {ratio:.2f} on {os.cpu_count()} cores")
    return {"runs": runs, "ratio": round(ratio, 3), "cores": os.cpu_count()}


# ----------------------------------------------------------------------- main

PARTS = {"utilisation": part_utilisation, "naive": part_naive, "pipeline": part_pipeline,
         "admission": part_admission, "scale_out": part_scale_out}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--part", choices=list(PARTS), nargs="*", default=list(PARTS)[:3])
    p.add_argument(
        "--quick", action="store_true", help="small sizes: ~2-3 minutes a part on 2 cores"
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sessions", type=int, help="sessions per worker (quick 16, full 32)")
    p.add_argument("--slots", type=int, help="the stand-in's max_num_seqs (default: workers × sessions); more sessions than slots keep the engine fuller (`datagen plan`)")  # fmt: skip
    p.add_argument("--tasks", type=int, help="tasks of the vlm runs (quick 128, full 256)")
    p.add_argument("--max-steps", type=int, help="steps per vlm episode (quick 2, full 3)")
    p.add_argument("--per-shard", type=int, nargs="*", default=[8, 64], help="tasks per shard, small and large")  # fmt: skip
    p.add_argument("--speed", type=float, default=10.0, help="stand-in speed factor (default 10)")
    p.add_argument(
        "--calibration",
        default="auto",
        help="linear | standin (applied by the bench) | a name the stand-in knows (`datagen engine "
        f"sim --calibration`); auto: {PREFERRED}",
    )
    p.add_argument("--sim-arg", action="append", default=[], help="extra `datagen engine sim` argument (repeat)")  # fmt: skip
    p.add_argument("--max-seconds", type=float, help="client-alone maximum run (quick 15, full 30)")
    p.add_argument("--naive-seconds", type=float, help="naive loop's run (quick 60, full 180)")
    p.add_argument("--naive-workers", type=int, nargs="*", default=[1, 2], help="naive part: datagen's workers, one run each")  # fmt: skip
    p.add_argument("--naive-per-shard", type=int, default=2, help="naive part: tasks a shard of datagen's runs")  # fmt: skip
    p.add_argument("--rounds", type=int, help="pipeline and scale_out parts: rounds (quick 1, full 2)")  # fmt: skip
    p.add_argument("--bare-episodes", type=int, default=4, help="bare loop: episodes per site")
    p.add_argument(
        "--admission", choices=["adaptive", "static"], default="adaptive",
        help="cluster.admission.control of the vlm runs (static: sessions_per_worker always)",
    )  # fmt: skip
    p.add_argument("--admission-steps", type=int, default=6, help="admission part: max_steps")
    p.add_argument("--admission-per-shard", type=int, default=32, help="admission part: tasks a shard")  # fmt: skip
    p.add_argument("--quiet-load", type=float, default=3.0, help="admission part: wait for the load below this")  # fmt: skip
    p.add_argument("--quiet-wait-s", type=float, default=150.0, help="…at most this long")
    a = p.parse_args(argv)
    quick = {"sessions": 16, "tasks": 128, "max_steps": 2, "max_seconds": 15, "naive_seconds": 60, "rounds": 1}  # fmt: skip
    full = {"sessions": 32, "tasks": 256, "max_steps": 3, "max_seconds": 30, "naive_seconds": 180, "rounds": 2}  # fmt: skip
    for key, value in (quick if a.quick else full).items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    if a.calibration == "auto" and set(a.part) & {"utilisation", "naive"}:
        a.calibration = PREFERRED
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    results = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "quick": a.quick}
    for name in a.part:
        results[name] = PARTS[name](a)
    write_json(a.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
