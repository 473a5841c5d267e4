"""What task synthesis (issue 43) found and cost, read from an output of `datagen run
pipelines/demo.yaml` (annotation.tasks on): its share of the browser sessions' time, the tasks
it kept by site and effect kind, and the share of the run's hand-written tasks it rediscovered.

A hand-written task counts as rediscovered when a kept synthesised task came from one of its
verified (minimal) episodes and its demonstration is that episode's whole minimal path: the
path verification proved makes the hand-written task's check pass, so the synthesised task's
demonstration does what the hand-written task asks (its own check may read another effect of
the same steps). Results: docs/benchmarks.md, "Task synthesis".

    datagen run pipelines/demo.yaml -o /tmp/demo
    python bench/synth.py /tmp/demo
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from datagen.sink.read import read_committed
from datagen.sink.storage import LocalStorage
from datagen.sink.synthesised import synthesised
from datagen.sink.writer import read_markers


def figures(out: str) -> list[str]:
    """The lines this bench prints for output folder `out`."""
    markers = read_markers(LocalStorage(out))
    synth = sum(m.stats.synth_s for m in markers)
    session = sum(m.stats.session_s for m in markers)
    tasks = synthesised(LocalStorage(out))  # specificity decided over the whole run
    columns = ["task_id", "episode_id", "verification"]
    episodes = read_committed(out, "episodes", columns=columns).to_table().to_pylist()
    columns = ["episode_id", "step_index", "needed", "action_type"]
    steps = read_committed(out, "steps", columns=columns).to_table()
    needed: dict[str, list[int]] = {}
    for s in steps.to_pylist():
        if s["needed"] and s["action_type"] != "done":
            needed.setdefault(s["episode_id"], []).append(s["step_index"])
    minimal = {e["episode_id"] for e in episodes if e["verification"] == "minimal"}
    kept = [t for t in tasks if t["kept"]]
    whole = {
        t["task_id"]
        for t in kept
        if t["episode_id"] in minimal
        and sorted(t["demo_steps"]) == sorted(needed.get(t["episode_id"], []))
    }
    written = {e["task_id"] for e in episodes} | {t["task_id"] for t in tasks}
    share = f"{synth / session:.1%}" if session else "n/a"
    kinds = Counter(t["effect_kind"] for t in kept)
    sites = Counter(t["site"] for t in kept)
    dropped = Counter(t["dropped_at"] for t in tasks if not t["kept"])
    return [
        f"synthesis: {share} of session time ({synth:.1f} of {session:.1f} s)",
        f"candidates {len(tasks)}, kept {len(kept)}, dropped {dict(dropped)}",
        f"kept by kind {dict(kinds)}; by site {dict(sites)}",
        f"hand-written tasks rediscovered: {len(whole)} of {len(written)} with episodes "
        f"({len(whole) / max(len(written), 1):.0%})",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="an output folder of a run with annotation.tasks on")
    for line in figures(parser.parse_args().output):
        print(line)


if __name__ == "__main__":
    main()
