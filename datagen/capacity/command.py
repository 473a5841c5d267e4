"""`datagen plan`'s work once the pipeline file is loaded: the calibration named, the step's
cost measured or assumed, the plan made and printed. The CLI (`datagen/cli.py`) parses flags
and loads the file; nothing here contacts an engine.

    flags + PipelineConfig ─► resolve (calibration) ─► [measure] ─► plan_capacity ─► show_capacity
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from datagen.capacity.calibration import resolve
from datagen.capacity.model import plan_capacity
from datagen.capacity.render import show_capacity
from datagen.config import SimConfig

if TYPE_CHECKING:
    from rich.console import Console

    from datagen.config import PipelineConfig


@dataclass(frozen=True)
class PlanOptions:
    """The flags of `datagen plan` (see its --help)."""

    model: str = "holotron-12b"
    calibration: str | None = None
    latency_budget_s: float | None = None
    steps_per_episode: float | None = None
    max_num_seqs: int | None = None
    cpu_ms_per_step: float = 115.0
    step_wall_ms: float = 350.0
    cores_per_worker: int = 8
    gpu_hour_usd: float = 3.0
    measure: bool = False
    output: str | None = None  # with measure: a run's output to compare with


def engine_for(options: PlanOptions) -> SimConfig:
    """The modelled engine: the named calibration, with --max-num-seqs if given. Raises
    ValueError for an unknown model or calibration."""
    fit: dict[str, Any] = {"calibration": resolve(options.model, options.calibration)}
    if options.max_num_seqs is not None:
        fit["max_num_seqs"] = options.max_num_seqs
    return SimConfig.model_validate(fit)


def run_plan(
    console: Console, config: PipelineConfig, episodes: int, title: str, options: PlanOptions
) -> None:
    """Make the plan of `config` for `episodes` episodes and print it under `title`."""
    engine = engine_for(options)
    cpu_ms, wall_ms = options.cpu_ms_per_step, options.step_wall_ms
    source = "assumed (bench figures from a 2-vCPU machine; --measure to measure here)"
    if options.measure:
        from datagen.capacity.measure import compare, load_last, measure, save_last

        console.print("measuring a run on this machine (bundled sites, explore policy)…")
        try:
            cost = measure(config)
        except RuntimeError as exc:
            console.print(f"[red]{exc}[/]")
            raise SystemExit(1) from None
        cpu_ms, wall_ms = cost.cpu_ms, cost.wall_ms
        source = (
            f"measured here: a {cost.seconds:.0f} s run, {cost.steps} steps, {cost.sessions} "
            f"sessions, whole-process CPU (start-up {cost.startup_cpu_s:.1f} CPU-s amortised; "
            f"{cost.steady_cpu_ms:.0f} ms a step after it)"
        )
        for line in compare(cost, load_last(), options.output):
            console.print(line)
        save_last(cost)
    cap = plan_capacity(
        config, episodes, steps_per_episode=options.steps_per_episode, engine=engine,
        latency_budget_s=options.latency_budget_s, cpu_ms_per_step=cpu_ms, step_wall_ms=wall_ms,
        cores_per_worker=options.cores_per_worker, gpu_hour_usd=options.gpu_hour_usd,
    )  # fmt: skip
    show_capacity(console, cap, config, title, source)
    console.print(verification_effect(config), markup=False, highlight=False, soft_wrap=True)


def verification_effect(config: PipelineConfig) -> str:
    """What replay verification does to the target sites (annotation.verify), in one line."""
    verify = config.annotation.verify
    if verify is None:
        return (
            "verification: off (annotation.verify null): no replays; no sample carries a "
            "task's instruction"
        )
    line = (
        f"verification: each solved episode is replayed (at most {verify.max_replays} times, "
        f"inside run.episode_timeout_s {config.run.episode_timeout_s:g}s with the episode) on "
        "fresh contexts, sealed: answered from the episode's own recorded traffic or refused "
        "(workers and beacons included, by a proxy of their own), so the target site gets "
        "nothing: no GET, never a form post or other state-changing request"
    )
    if verify.live:
        line += (
            f"; live hosts (annotation.verify.live: {', '.join(verify.live)}) get every request "
            "of every replay, posts and orders included"
        )
    return line
