"""All benchmarks, one after another, then their ratios against the targets in one table.

    .venv/bin/python -m bench                 # everything, ~40 minutes on 2 cores
    .venv/bin/python -m bench --only engine adaptive
    .venv/bin/python -m bench --out bench-results

Each benchmark runs in its own process (a fresh interpreter, browser and stand-in) and writes
JSON into `--out`; nothing else should run on the machine meanwhile (the browser benchmark
reports how busy the machine was with other work, as `others`). Method and recorded results:
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.harness import Row, print_table

BENCHES: dict[str, list[str]] = {
    "browser": ["bench.browser_loop", "--rounds", "5"],
    "browser8": ["bench.browser_loop", "--rounds", "5", "--sessions", "8"],
    "loop_soak": ["bench.browser_loop", "--soak", "1000"],
    "engine": ["bench.engine", "util"],
    "adaptive": ["bench.engine", "adaptive"],
    "sink": ["bench.sink"],
    "scale_out": ["bench.e2e", "--part", "scale_out", "--rounds", "2"],
    "memory": ["bench.memory"],
    "grounding": ["bench.grounding", "--quiet"],
    "episodes": ["bench.episodes", "--quiet", "--seeds", "2"],
    "e2e": ["bench.e2e"],
}


def browser(r: dict[str, Any]) -> list[Row]:
    ratio, sessions = r["ratio"], r["settings"]["sessions"]
    cpu, speed = ratio["cpu_per_step"], ratio["steps_per_s"]
    return [
        (f"browser CPU/step, ours ÷ bare Playwright ({sessions} sessions)", f"{cpu:.3f}", "≤ 1.05", cpu <= 1.05),
        (f"browser steps/s, ours ÷ bare Playwright ({sessions} sessions)", f"{speed:.3f}", "≥ 0.9", speed >= 0.9),
    ]  # fmt: skip


def loop_soak(r: dict[str, Any]) -> list[Row]:
    ours, bare = r["drift"]["ours"], r["drift"]["bare"]
    measured = f"x{ours['cpu_ratio']:.3f} (bare x{bare['cpu_ratio']:.3f}, {ours['steps']} steps)"
    return [("browser CPU/step, last ÷ first quarter of a soak", measured, "flat", r["flat"])]


def engine(r: list[dict[str, Any]]) -> list[Row]:
    rows: list[Row] = []
    for s in r:
        goal, cpu = 0.95 if s["sessions"] <= 100 else 0.9, s["client_cpu_ms_per_request"]
        rows.append((f"engine utilisation, {s['sessions']} sessions", f"{s['utilisation']:.3f}", f"≥ {goal}", s["utilisation"] >= goal))  # fmt: skip
        rows.append((f"client CPU per request, {s['sessions']} sessions", f"{cpu:.2f} ms", "< 2 ms", cpu < 2))  # fmt: skip
    return rows


def adaptive(r: list[dict[str, Any]]) -> list[Row]:
    static = [s for s in r if s["cap"] != "adaptive"]
    mine = next(s for s in r if s["cap"] == "adaptive")
    best = max(static, key=lambda s: s["overall_rps"])
    ratio = mine["overall_rps"] / best["overall_rps"]
    return [(f"adaptive ÷ best static cap ({best['cap']}), capacity changing", f"{ratio:.2f}", "> 1", ratio > 1)]  # fmt: skip


def sink(r: dict[str, Any]) -> list[Row]:
    return [("Parquet rows MB/s, ours ÷ bare pyarrow", f"{r['ratio']:.2f} ({r['results']['ours']['mb_per_s']:.0f} MB/s)", "—", None)]  # fmt: skip


def scale_out(r: dict[str, Any]) -> list[Row]:
    r = r["scale_out"]
    return [(f"steps/s, 2 workers ÷ 1 ({r['cores']} cores)", f"{r['ratio']:.2f}", "—", None)]


def memory(r: dict[str, Any]) -> list[Row]:
    return [("browser memory per concurrent session", f"PSS {r['pss_mb_per_session']:.0f} MB (USS {r['uss_mb_per_session']:.0f})", "—", None)]  # fmt: skip


def grounding(r: dict[str, Any]) -> list[Row]:
    from bench import grounding as bench

    return [(f"grounding: {w}", m, g, ok) for w, m, g, ok in bench.table(r["summary"])]


def episodes(r: dict[str, Any]) -> list[Row]:
    from bench import episodes as bench

    return [(f"episodes: {w}", m, g, ok) for w, m, g, ok in bench.table(r["summary"])]


def e2e(r: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for run in r["utilisation"]["runs"]:
        shard = f"{run['tasks_per_shard']} tasks/shard"
        rows.append((f"e2e engine utilisation, {shard}", f"{run['utilisation']:.3f}", "≥ 0.95", run["utilisation"] >= 0.95))  # fmt: skip
        rows.append((f"e2e in flight ÷ configured, {shard}", f"{run['in_flight_ratio']:.3f}", "≥ 0.95", run["in_flight_ratio"] >= 0.95))  # fmt: skip
    for run in r["naive"]["runs"]:
        who = f"{run['workers']} worker{'s' if run['workers'] > 1 else ''}"
        rows.append((f"e2e episodes/s, datagen ÷ naive loop, {who}", f"{run['ratio_episodes']:.2f} (ideal {run['ideal_gain']:.1f})", "≥ 5", run["ratio_episodes"] >= 5))  # fmt: skip
        rows.append((f"e2e datagen ÷ naive, share of the ideal gain, {who}", f"{run['share_of_ideal']:.2f}", "≥ 0.9", run["share_of_ideal"] >= 0.9))  # fmt: skip
        rows.append((f"e2e in flight ÷ sessions, 2 tasks/shard, {who}", f"{run['in_flight_ratio']:.2f}", "≥ 0.9", run["in_flight_ratio"] >= 0.9))  # fmt: skip
    ratio = r["pipeline"]["ratio"]
    rows.append(("e2e explore pipeline steps/s ÷ bare loop", f"{ratio:.2f}", "≥ 0.8", ratio >= 0.8))
    return rows


SUMMARY: dict[str, Callable[[Any], list[Row]]] = {
    "browser": browser, "browser8": browser, "loop_soak": loop_soak, "engine": engine, "adaptive": adaptive, "sink": sink,
    "scale_out": scale_out, "memory": memory, "grounding": grounding, "episodes": episodes,
    "e2e": e2e,
}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="*", choices=list(BENCHES), default=list(BENCHES))
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    for name in args.only:
        target = args.out / f"{name}.json"
        command = [sys.executable, "-m", *BENCHES[name], "--json", str(target)]
        print(f"\n=== {name}: {' '.join(command[1:])}", flush=True)
        started = time.perf_counter()
        code = subprocess.call(command)
        print(f"=== {name}: exit {code}, {time.perf_counter() - started:.0f} s", flush=True)
        if code != 0 or not target.exists():
            rows.append((name, f"failed (exit {code})", "", False))
            continue
        rows.extend(SUMMARY[name](json.loads(target.read_text())))
    print_table(rows, "benchmark")
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1))
    return 0 if all(met is not False for *_, met in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
