"""The `datagen` command. Thin: parse arguments, call the stages, print. Heavy imports (Dask,
Playwright, pyarrow) happen inside the commands that need them."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from datagen.errors import DatagenError

if TYPE_CHECKING:
    from datagen.plan import Plan
    from datagen.runtime import RunSummary

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Generate training data for computer-use agents: browsers on Dask, Parquet out.",
)
console = Console()
err_console = Console(stderr=True)


def _add_engine_commands() -> None:
    from datagen.engine.cli import engine_app

    app.add_typer(engine_app, name="engine")


_add_engine_commands()

PipelineArg = Annotated[Path, typer.Argument(help="pipeline file (YAML)", show_default=False)]
OutputOpt = Annotated[str | None, typer.Option("--output", "-o", help="override output.uri")]


# `datagen run` flags that override cluster keys of the pipeline file: key → flag.
CLUSTER_FLAGS = {
    "address": "--address",
    "workers": "--workers",
    "sessions_per_worker": "--sessions",
}


def _load(
    path: Path,
    output: str | None,
    check_machine: bool = True,
    cluster: dict[str, Any] | None = None,
) -> Plan:
    """The plan of a pipeline file; with `check_machine`, also what it points at (output,
    scheduler, dashboard, browser), so that nothing bad is found after Dask has started.
    `cluster` overrides keys of the file's `cluster` (validated the same way)."""
    from datagen.config import load_pipeline
    from datagen.errors import ConfigError
    from datagen.plan import make_plan
    from datagen.preflight import preflight

    try:
        config = load_pipeline(path, output, cluster)
    except ConfigError as exc:
        named = [k for k in cluster or {} if f"cluster.{k}" in str(exc)]
        if not named:
            raise
        note = "; ".join(f"{CLUSTER_FLAGS[k]} sets cluster.{k}" for k in named)
        error = ConfigError(f"{exc}\n  (on the command line: {note})")
        error.path = exc.path
        raise error from None
    plan = make_plan(config)
    if check_machine:
        preflight(plan.config)
    return plan


def _show_plan(plan: Plan, flags: dict[str, Any] | None = None) -> None:
    """The plan as a table; `flags`: the cluster keys set on the command line (marked)."""
    from datagen.config import redact_url

    cfg = plan.config
    by_flag = {k: f" ({CLUSTER_FLAGS[k]})" for k in flags or {}}
    table = Table(title=f"plan: {cfg.name}", show_header=False)
    by_source: dict[str, int] = {}
    for task in plan.tasks:
        by_source[task.source] = by_source.get(task.source, 0) + 1
    if cfg.cluster.address:
        cluster = cfg.cluster.address + by_flag.get("address", "")
    else:
        cluster = (
            f"LocalCluster, {cfg.cluster.workers} worker processes{by_flag.get('workers', '')}"
        )
    rows = [
        ("tasks", f"{len(plan.tasks)} ({', '.join(f'{k} {v}' for k, v in by_source.items())})"),
        (
            "episodes",
            f"{plan.episodes} ({cfg.run.repeats} per task, ≤ {cfg.run.max_steps} steps unless the task says)",
        ),
        ("shards", f"{len(plan.shard_ids)} (≈{cfg.run.tasks_per_shard} tasks each)"),
        ("cluster", cluster),
        (
            "sessions",
            f"{cfg.cluster.sessions_per_worker} per worker{by_flag.get('sessions_per_worker', '')}",
        ),
        ("policy", cfg.policy.type),
        (
            "browser",
            f"{cfg.browser.viewport.width}×{cfg.browser.viewport.height} @{cfg.browser.device_scale_factor:g}x, {cfg.browser.image_format}",
        ),
        ("output", cfg.output.uri),
        *(
            [
                (
                    "engine",
                    redact_url(cfg.engine.url)
                    if cfg.engine.url
                    else "stand-in started by datagen (not a model)",
                )
            ]
            if cfg.uses_engine
            else []
        ),
        ("run id", plan.run_id),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)


def _warn(plan: Plan) -> None:
    from datagen.plan import warnings

    for line in warnings(plan):
        console.print(f"[yellow]{line}[/]", highlight=False)


def _fail(exc: Exception) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
    return typer.Exit(2)


@app.command()
def validate(pipeline: PipelineArg, output: OutputOpt = None) -> None:
    """Check a pipeline file and its task lists, and print the plan. Starts nothing."""
    try:
        plan = _load(pipeline, output)
    except DatagenError as exc:
        raise _fail(exc) from None
    _show_plan(plan)
    _warn(plan)
    console.print("[green]ok[/]")


@app.command("plan")
def plan_command(
    pipeline: PipelineArg,
    steps_per_episode: Annotated[
        float | None,
        typer.Option(min=1, help="expected steps per episode (default: run.max_steps, a bound)"),
    ] = None,
    max_num_seqs: Annotated[
        int | None, typer.Option(min=1, help="the server's --max-num-seqs (default: engine.sim's)")
    ] = None,
    cpu_ms_per_step: Annotated[
        float,
        typer.Option(min=1, help="CPU per step, ms: browser + pipeline (bench/scale_out.py)"),
    ] = 115.0,
    step_wall_ms: Annotated[
        float,
        typer.Option(min=1, help="a session's browser time per step, ms (observe+act+settle)"),
    ] = 350.0,
    cores_per_worker: Annotated[
        int, typer.Option(min=1, help="CPU cores of one worker machine")
    ] = 8,
    gpu_hour_usd: Annotated[
        float, typer.Option(min=0, help="price of one GPU-hour (assumed)")
    ] = 3.0,
    measure: Annotated[
        bool,
        typer.Option(
            "--measure", help="measure CPU and wall time per step on this machine (~20 s)"
        ),
    ] = False,
) -> None:
    """Capacity plan before launch: engine throughput, sessions in flight, CPU workers per
    GPU, hours and GPU cost. From datagen's engine model (calibrated to Holotron-12B on one
    H100), not a measurement: check it against the dashboard in the first minutes."""
    from datagen.capacity import plan_capacity
    from datagen.engine.sim.config import SimConfig

    try:
        plan = _load(pipeline, None, check_machine=False)
    except DatagenError as exc:
        raise _fail(exc) from None
    cfg = plan.config
    source = "assumed (bench figures from a 2-vCPU machine; --measure to measure here)"
    if measure:
        import asyncio

        from datagen.runtime.calibrate import measure as measure_cost

        console.print("measuring a step on this machine (bundled sites, explore policy)…")
        cost = asyncio.run(measure_cost(cfg))
        cpu_ms_per_step, step_wall_ms = cost.cpu_ms, cost.wall_ms
        source = f"measured here: {cost.steps} steps, {cost.sessions} sessions"
    engine = SimConfig(max_num_seqs=max_num_seqs or cfg.engine.sim.max_num_seqs)
    cap = plan_capacity(
        cfg, plan.episodes, steps_per_episode=steps_per_episode, engine=engine,
        cpu_ms_per_step=cpu_ms_per_step, step_wall_ms=step_wall_ms,
        cores_per_worker=cores_per_worker, gpu_hour_usd=gpu_hour_usd,
    )  # fmt: skip
    calls = Table(title="engine calls per step")
    for name in ("role", "per step", "prompt tokens", "image tiles", "answer tokens"):
        calls.add_column(name, justify="left" if name == "role" else "right")
    for c in cap.calls:
        calls.add_row(
            c.role,
            f"{c.per_step:.2f}",
            f"{c.prompt_tokens:,}",
            str(c.tiles),
            str(c.completion_tokens),
        )
    table = Table(title=f"capacity plan: {pipeline}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    rows = [
        (
            "episodes × steps",
            f"{cap.episodes:,} × {cap.steps_per_episode:g} = {cap.steps:,.0f} steps",
        ),
        (
            "a step",
            f"{cpu_ms_per_step:.0f} ms CPU, {step_wall_ms:.0f} ms of a session's time; {source}",
        ),
    ]
    if cap.calls:
        console.print(calls)
        rows += [
            (
                "engine (one GPU)",
                f"max_num_seqs {engine.max_num_seqs}; best at {cap.engine_in_flight} requests in flight",
            ),
            (
                "engine throughput",
                f"{cap.engine_steps_per_s:.2f} steps/s = {cap.engine_requests_per_s:.2f} requests/s, {cap.engine_tokens_per_s:,.0f} tokens/s",
            ),
            ("engine latency", f"{cap.engine_latency_s:.2f} s per request at that load"),
            (
                "sessions in flight",
                f"{cap.sessions} (to keep the engine full: steps/s × a session's cycle)",
            ),
            (
                "CPU",
                f"{cap.cores:.1f} cores = {cap.workers_per_gpu} worker{'s' * (cap.workers_per_gpu != 1)} of {cores_per_worker} cores per GPU",
            ),
            (
                "browser memory",
                f"≈ {cap.browser_memory_mb / 1024:.1f} GiB over the workers (PSS: 34 MB a session on the bundled sites, 314 MB a browser; real sites weigh more)",
            ),
            ("run time", f"{_duration(cap.hours)} on one GPU"),
            ("GPU cost", f"${cap.gpu_cost:,.2f} at ${gpu_hour_usd:g}/GPU-hour"),
        ]
    else:
        rows += [
            (
                "sessions in flight",
                f"{cap.sessions} ({cfg.cluster.workers} workers × {cfg.cluster.sessions_per_worker})",
            ),
            (
                "run time",
                f"{_duration(cap.hours)} on {cap.cores:g} cores",
            ),
        ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    for note in cap.notes:
        console.print(f"note: {note}")
    console.print(
        "[dim]estimates from datagen's engine model (the stand-in's, calibrated to the published "
        "8,900 tokens/s at 100 sessions) and measured browser costs; not a measurement of your "
        "server[/]"
    )  # fmt: skip


def _duration(hours: float) -> str:
    return f"{hours:,.1f} h" if hours >= 1 else f"{hours * 60:.1f} min"


@app.command()
def run(
    pipeline: PipelineArg,
    output: OutputOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="show the plan, launch nothing")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="check committed shards by sha256 (reads every part), not only by size; "
            "shards that fail are redone",
        ),
    ] = False,
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="override cluster.address: tcp://host:8786 of a running scheduler"
        ),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="override cluster.workers (LocalCluster worker processes)"),
    ] = None,
    sessions: Annotated[
        int | None,
        typer.Option("--sessions", help="override cluster.sessions_per_worker"),
    ] = None,
) -> None:
    """Run a pipeline: tasks → Dask workers → Chromium → policy → validated Parquet."""
    given = {"address": address, "workers": workers, "sessions_per_worker": sessions}
    flags = {k: v for k, v in given.items() if v is not None}
    try:
        plan = _load(pipeline, output, cluster=flags)
    except DatagenError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted:[/] nothing was started")
        raise typer.Exit(130) from None
    _show_plan(plan, flags)
    _warn(plan)
    if dry_run:
        console.print("dry run: nothing launched")
        return
    from datagen.observe.logs import setup_logging
    from datagen.observe.progress import RichProgress
    from datagen.runtime import execute

    setup_logging(verbose)
    try:
        with RichProgress(console) as progress:
            summary = execute(plan, progress, verify=verify)
    except DatagenError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        err_console.print(
            "[yellow]interrupted:[/] committed shards are kept; those that were running are "
            "not committed. Run the same command again to finish."
        )
        raise typer.Exit(130) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise _fail(
            OSError(
                f"no space left on the device of {plan.config.output.uri}: committed shards are "
                "kept. fix: free space (or choose another --output) and run the same command again"
            )
        ) from None
    _show_summary(summary, len(plan.tasks))
    empty = bool(plan.tasks) and not summary.manifest["tables"]["episodes"]["rows"]
    if summary.failed_shards or not summary.manifest.get("complete") or empty:
        raise typer.Exit(1)


def _show_summary(summary: RunSummary, tasks: int) -> None:
    manifest = summary.manifest
    table = Table(title="output")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, info in manifest["tables"].items():
        table.add_row(name, str(info["rows"]))
    console.print(table)
    episodes = manifest["tables"]["episodes"]["rows"]
    with_episodes = manifest.get("tasks", {}).get("with_episodes", 0)
    console.print(
        f"episodes from {with_episodes} of {tasks} tasks; solved {manifest['solved']} of "
        f"{episodes} episodes; rejects by reason: {manifest['reject_reasons'] or 'none'}"
    )
    dropped = manifest.get("steps_dropped", {})
    if dropped.get("total"):
        reasons = ", ".join(f"{r} {n}" for r, n in dropped["by_reason"].items())
        console.print(
            f"dropped {dropped['total']} observations ({dropped['share']:.1%} of all) on pages "
            f"out of scope, error or blank pages, never data: {reasons} (see run.scope)"
        )
    if summary.skipped_shards:
        before, n = summary.resumed, len(summary.skipped_shards)
        console.print(
            f"already committed and skipped: {n} shard{'s' * (n != 1)} "
            f"({before.episodes} episodes, {before.rejected} ended as rejects)"
        )
    if summary.redone_shards:
        n = len(summary.redone_shards)
        console.print(
            f"[yellow]redone: {n} shard{'s' * (n != 1)} whose committed parts failed the "
            "integrity check (marker removed, shard run again):[/]"
        )
        for shard, reason in summary.redone_shards.items():
            console.print(
                f"  shard {shard}: {reason}", highlight=False, markup=False, soft_wrap=True
            )
    if summary.leased_elsewhere:
        n, theirs = len(summary.leased_elsewhere), len(summary.other_run_shards)
        console.print(
            f"another run of this pipeline held {n} shard{'s' * (n != 1)} when this one "
            f"started: {theirs} committed by it, {n - theirs} taken over here when it stopped; "
            f"this run ran {len(summary.results) + len(summary.failed_shards)}"
        )
    _show_workers(summary)
    for shard, reason in summary.failed_shards.items():
        err_console.print(f"[red]shard {shard} failed:[/] {reason}")
    state = (
        "complete"
        if manifest["complete"]
        else f"incomplete (missing shards {manifest['shards']['missing']}; run again to finish)"
    )
    if tasks and not episodes:
        state = "produced no episodes: every task ended as a reject"
        _show_top_rejects(manifest)
    console.print(
        f"wrote {manifest['pipeline']['output']['uri']} in {summary.seconds:.1f}s: {state}"
    )
    if summary.report:
        console.print(f"run report (throughput, latency, memory): {summary.report}")


def _show_workers(summary: RunSummary) -> None:
    """Workers lost during the run and what that cost; workers that could not start a browser."""
    report = summary.workers
    if report.lost:
        console.print(f"workers lost while the run ran: {', '.join(report.lost)}", highlight=False)
    if report.rerun or report.reused:
        again = ", ".join(f"{s} ({n} attempts)" for s, n in sorted(report.rerun.items()))
        console.print(
            f"shards run again: {again or 'none'}; found committed when their task ran again "
            f"(not rerun): {', '.join(map(str, sorted(report.reused))) or 'none'}",
            highlight=False,
        )
    for worker, why in report.failed.items():
        err_console.print(
            f"worker {worker} took no shard: {why}", markup=False, highlight=False, soft_wrap=True
        )


def _show_top_rejects(manifest: dict[str, Any]) -> None:
    """For a run that produced nothing: its top reject reasons, each with one example."""
    examples: dict[str, str] = {}
    try:
        from datagen.sink.read import read_committed

        output = manifest["pipeline"]["output"]
        dataset = read_committed(output["uri"], "rejects", output.get("endpoint_url"))
        for row in dataset.head(10_000, columns=["reason", "detail"]).to_pylist():
            examples.setdefault(row["reason"], row["detail"])
    except Exception:  # the examples are a courtesy: the counts below still say it
        examples = {}
    err_console.print("[red]no episodes:[/] every task ended as a reject. top reasons:")
    for reason, count in list(manifest["reject_reasons"].items())[:3]:
        example = examples.get(reason, "")
        shown = f" (e.g. {example[:200]})" if example else ""
        err_console.print(f"  {reason}: {count}{shown}", highlight=False, markup=False)


@app.command()
def inspect(
    uri: Annotated[str, typer.Argument(help="output folder or s3://bucket/prefix")],
    html_out: Annotated[
        Path | None, typer.Option("--html", help="write a gallery page here")
    ] = None,
    episodes: Annotated[int, typer.Option(help="episodes in the gallery")] = 20,
    endpoint_url: Annotated[str | None, typer.Option(help="S3-compatible endpoint")] = None,
) -> None:
    """Summarise a dataset (committed shards only); optionally write an HTML gallery."""
    from datagen.observe.inspect import gallery, load, summary
    from datagen.sink.storage import open_storage
    from datagen.sink.verify import verify_output

    try:  # sizes only: cheap; `datagen verify` reads every part for its sha256
        check = verify_output(open_storage(uri, endpoint_url), full=False)
        for line in check.lines() if not check.ok else []:
            err_console.print(f"[yellow]integrity:[/] {line}", highlight=False)
        tables = load(uri, endpoint_url)
    except (OSError, ValueError, DatagenError) as exc:
        raise _fail(exc) from None
    facts = summary(tables)
    table = Table(title=f"dataset {uri}", show_header=False)
    for key, value in facts.items():
        table.add_row(key.replace("_", " "), str(value))
    table.add_row(
        "integrity",
        f"sizes ok: {check.shards} shards, {check.parts} parts (sha256: datagen verify)"
        if check.ok
        else f"{len(check.problems)} problems in {len(check.by_shard())} shards: datagen verify",
    )
    console.print(table)
    if html_out is not None:
        html_out.write_text(gallery(tables, episodes), encoding="utf-8")
        console.print(f"wrote {html_out}")


@app.command()
def verify(
    uri: Annotated[str, typer.Argument(help="output folder or s3://bucket/prefix")],
    endpoint_url: Annotated[str | None, typer.Option(help="S3-compatible endpoint")] = None,
    sizes_only: Annotated[
        bool, typer.Option("--sizes-only", help="existence and sizes only: no downloads")
    ] = False,
) -> None:
    """Check a dataset's integrity: every marker is readable JSON of the right shape, every part
    it commits exists with the size and sha256 it records. Exit code 1 if anything is wrong."""
    from botocore.exceptions import BotoCoreError, ClientError

    from datagen.sink.storage import open_storage
    from datagen.sink.verify import verify_output

    try:
        report = verify_output(open_storage(uri, endpoint_url), full=not sizes_only)
    except (OSError, ValueError, DatagenError, BotoCoreError, ClientError) as exc:
        raise _fail(exc) from None
    for line in report.lines():
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def schemas(
    check: Annotated[bool, typer.Option("--check", help="fail if schemas/ is out of date")] = False,
) -> None:
    """Write the JSON Schemas of the output tables to schemas/ (generated from records.py)."""
    import json

    from datagen.sink.schema import SCHEMA_DIR, json_schemas, write_json_schemas

    if check:
        stale = [
            n
            for n, s in json_schemas().items()
            if not (SCHEMA_DIR / f"{n}.schema.json").is_file()
            or json.loads((SCHEMA_DIR / f"{n}.schema.json").read_text()) != s
        ]
        if stale:
            err_console.print(f"out of date: {', '.join(stale)}; run `datagen schemas`")
            raise typer.Exit(1)
        console.print("schemas up to date")
        return
    for path in write_json_schemas():
        console.print(f"wrote {path}")


def main() -> None:
    app()
