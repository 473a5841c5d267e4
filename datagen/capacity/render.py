"""What `datagen plan` prints: a CapacityPlan as rich tables (the engine calls per step, then the
plan), its notes, and the caveat that it is a model's estimate.

    CapacityPlan (model.plan_capacity) ─► show_capacity(console, …) ─► the terminal
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console

    from datagen.capacity.model import CapacityPlan
    from datagen.config import PipelineConfig

CAVEAT = (
    "[dim]estimates from datagen's engine model (the stand-in's, under the calibration named "
    "above: a published figure fitted on a WebVoyager-like workload) and measured browser "
    "costs; not a measurement of your server[/]"
)


def show_capacity(
    console: Console, cap: CapacityPlan, config: PipelineConfig, title: str, source: str
) -> None:
    """Print the plan of `config` under `title`; `source`: where the step's cost came from."""
    table = Table(title=title, show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    rows = [
        (
            "episodes × steps",
            f"{cap.episodes:,} × {cap.steps_per_episode:g} = {cap.steps:,.0f} steps",
        ),
        (
            "a step",
            f"{cap.cpu_ms_per_step:.0f} ms CPU, {cap.step_wall_ms:.0f} ms of a session's time; "
            f"{source}",
        ),
    ]
    if cap.calls:
        console.print(calls_table(cap))
        rows += _engine_rows(cap)
    else:
        workers, sessions = config.cluster.workers, config.cluster.sessions_per_worker
        rows += [
            ("sessions in flight", f"{cap.sessions} ({workers} workers × {sessions})"),
            ("run time", f"{duration(cap.hours)} on {cap.cores:g} cores"),
        ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    for note in cap.notes:
        console.print(f"note: {note}")
    if cap.calibration is not None:
        console.print(cap.calibration.line(), highlight=False, soft_wrap=True)
    console.print(CAVEAT)


def calls_table(cap: CapacityPlan) -> Table:
    """The engine requests one step makes, with their sizes."""
    calls = Table(title="engine calls per step")
    for name in ("role", "per step", "prompt tokens", "image tiles", "answer tokens"):
        calls.add_column(name, justify="left" if name == "role" else "right")
    for c in cap.calls:
        calls.add_row(
            c.label or c.role,
            f"{c.per_step:.2f}",
            f"{c.prompt_tokens:,}",
            str(c.tiles),
            str(c.completion_tokens),
        )
    return calls


def _engine_rows(cap: CapacityPlan) -> list[tuple[str, str]]:
    """The rows of a plan with model calls: the engine, the sessions and CPU it needs, cost."""
    from datagen.capacity.model import short_side

    assert cap.calibration is not None
    cal = cap.calibration
    workers = f"{cap.workers_per_gpu} worker{'s' * (cap.workers_per_gpu != 1)}"
    budget = f"{cap.latency_budget_s:.2f} s a step" + (
        f" (default: 2 × the {cap.unloaded_step_wait_s:.2f} s with one request in flight)"
        if cap.budget_default
        else ""
    )
    rows = [
        ("engine model", f"calibration {cal.name} ({cal.model}; figures count {cal.tokens})"),
        (
            "engine (one GPU)",
            f"max_num_seqs {cap.max_num_seqs}; planned at {cap.engine_in_flight} requests in "
            f"flight: the most throughput within the latency budget, {budget}",
        ),
        (
            "engine throughput",
            f"{cap.engine_steps_per_s:.2f} steps/s = {cap.engine_requests_per_s:.2f} requests/s; "
            f"{cap.engine_tokens_per_s:,.0f} tokens/s prompt + answer, of which "
            f"{cap.engine_output_tokens_per_s:,.0f} answer tokens/s",
        ),
        (
            "engine latency",
            f"{cap.engine_latency_s:.2f} s per request, {cap.step_wait_s:.2f} s a step (its "
            f"calls) at that load; {cap.unloaded_step_wait_s:.2f} s with one in flight",
        ),
    ]
    if cap.point_tokens_per_s:
        rows.append(
            (
                "calibration point",
                f"{cal.agents} in flight: {cap.point_tokens_per_s:,.0f} tokens/s ({cal.tokens}); "
                f"published {cal.tokens_per_s:,.0f}",
            )
        )
    return [
        *rows,
        (
            "sessions in flight",
            f"{cap.sessions} (to keep the engine at that point: steps/s × a session's cycle)",
        ),
        ("pipeline's sessions", short_side(cap)),
        ("CPU", f"{cap.cores:.1f} cores = {workers} of {cap.cores_per_worker} cores per GPU"),
        (
            "browser memory",
            f"≈ {cap.browser_memory_mb / 1024:.1f} GiB over the workers (PSS: 34 MB a session on "
            "the bundled sites, 314 MB a browser; real sites weigh more)",
        ),
        ("run time", f"{duration(cap.hours)} on one GPU"),
        ("GPU cost", f"${cap.gpu_cost:,.2f} at ${cap.gpu_hour_usd:g}/GPU-hour"),
    ]


def duration(hours: float) -> str:
    """Hours as `1.5 h`, or minutes under an hour."""
    return f"{hours:,.1f} h" if hours >= 1 else f"{hours * 60:.1f} min"
