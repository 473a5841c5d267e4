"""Scale-out: the whole pipeline's throughput with 2 Dask workers against 1.

Runs `pipelines/demo.yaml` (bundled sites, explore policy, grounding, Parquet; no model) as
`datagen run` on a LocalCluster of 1 worker, then 2, alternating (`--rounds` of each), each
into a fresh output folder. Each worker has its own Chromium and `sessions_per_worker`
episodes at once, so 2 workers offer twice the concurrency; on a machine with C cores the most
to expect is about min(2, C ÷ cores one worker keeps busy).

Throughput is steps ÷ the shard phase's wall time (browsers up → last shard marker); start-up
is reported apart. The machine's busy cores over the same phase give steps per core-second:
whether a second worker turns extra cores into steps as well as the first does.

    python -m bench.scale_out
    python -m bench.scale_out --rounds 2 --json out.json
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

import yaml

from bench.harness import DEMO, parser, run_datagen, write_json, write_pipeline


def one_run(workers: int, folder: Path) -> dict[str, float]:
    spec = yaml.safe_load(DEMO.read_text())
    spec["cluster"] |= {"workers": workers, "dashboard": "127.0.0.1:0"}
    folder.mkdir(parents=True)
    run = run_datagen(write_pipeline(folder, "demo", spec), folder / "out")
    if run.code != 0:
        raise SystemExit(f"datagen run failed (exit {run.code})")
    return {
        "workers": workers,
        "steps": run.steps,
        "startup_s": run.startup_s,
        "shard_phase_s": run.phase_s,
        "steps_per_s": round(run.steps / run.phase_s, 2),
        "cores_busy": run.busy_cores,
        "steps_per_core_s": round(run.steps / run.phase_s / max(run.busy_cores, 1e-6), 2),
    }


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for workers in (1, 2):
                run = one_run(workers, Path(tmp) / f"w{workers}-{i}")
                runs.append(run)
                print(
                    f"{workers} worker(s): {run['steps']} steps in {run['shard_phase_s']:.1f} s = "
                    f"{run['steps_per_s']:.2f} steps/s, {run['cores_busy']:.2f} cores busy = "
                    f"{run['steps_per_core_s']:.2f} steps per core-second "
                    f"(start-up {run['startup_s']:.1f} s)",
                    flush=True,
                )
    rate = {w: statistics.mean(r["steps_per_s"] for r in runs if r["workers"] == w) for w in (1, 2)}
    ratio = rate[2] / rate[1]
    print(f"ratio steps/s (2 workers / 1 worker): {ratio:.2f} on {os.cpu_count()} cores")
    write_json(args.json, {"runs": runs, "ratio": round(ratio, 3), "cores": os.cpu_count()})


if __name__ == "__main__":
    main()
