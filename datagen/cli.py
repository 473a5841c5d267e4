"""The `datagen` command. Thin: parse arguments, call the stages, print. Heavy imports (Dask,
Playwright, pyarrow) happen inside the commands that need them. What the commands print lives
beside what it shows: the run plan and the run summary in observe.summary, the capacity plan
in capacity.render, the engine commands in engine.cli."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from datagen.engine.cli import engine_app
from datagen.errors import DatagenError
from datagen.export.choices import Coords, Filter, Instruction, Output, Syntax
from datagen.observe.help import VersionOpt, choice, reflow_help
from datagen.observe.safe import plain, safe
from datagen.observe.summary import show_plan, show_summary, show_warnings

if TYPE_CHECKING:
    from datagen.runplan import Plan

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Generate training data for computer-use agents: browsers on Dask, Parquet out.",
)
console = Console()
err_console = Console(stderr=True)


app.add_typer(engine_app, name="engine")


@app.callback()
def _options(version: VersionOpt = False) -> None:
    pass  # `datagen`'s own options act in their callbacks


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
    unset_env_ok: bool = False,
) -> Plan:
    """The plan of a pipeline file; with `check_machine`, also what it points at (output,
    scheduler, dashboard, browser), so that nothing bad is found after Dask has started.
    `cluster` overrides keys of the file's `cluster` (validated the same way); `unset_env_ok`:
    an unset `${VAR}` reads as empty (for commands that contact no server)."""
    from datagen.config import load_pipeline
    from datagen.errors import ConfigError
    from datagen.preflight import preflight
    from datagen.runplan import make_plan

    try:
        config = load_pipeline(path, output, cluster, unset_env_ok=unset_env_ok)
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


def _fail(exc: Exception) -> typer.Exit:
    """Exit 2 with the error: one message, its text from files and pages made `safe`."""
    err_console.print(f"[bold red]error:[/] {safe(exc)}", markup=True, highlight=False)
    return typer.Exit(2)


@app.command()
def validate(pipeline: PipelineArg, output: OutputOpt = None) -> None:
    """Check a pipeline file and its task lists, and print the plan. Starts nothing."""
    try:
        plan = _load(pipeline, output)
    except DatagenError as exc:
        raise _fail(exc) from None
    show_plan(console, plan)
    show_warnings(console, plan)
    console.print("[green]ok[/]")


@app.command("plan")
def plan_command(
    pipeline: PipelineArg,
    model: Annotated[
        str, typer.Option(help="the model served: holotron-12b | holo2-8b")
    ] = "holotron-12b",
    calibration: Annotated[
        str | None,
        typer.Option(
            help="which tokens the published figure counts: all-tokens (default) | "
            "output-tokens; or a full name (holotron-12b/output-tokens, decode, …)"
        ),
    ] = None,
    latency_budget: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="seconds a step may wait at the engine (its calls, one after another); the "
            "plan takes the most throughput within it (default: 2 × the wait with one request "
            "in flight)",
        ),
    ] = None,
    steps_per_episode: Annotated[
        float | None,
        typer.Option(min=1, help="expected steps per episode (default: run.max_steps, a bound)"),
    ] = None,
    max_num_seqs: Annotated[
        int | None,
        typer.Option(min=1, help="the server's --max-num-seqs (default: the calibration's)"),
    ] = None,
    cpu_ms_per_step: Annotated[
        float,
        typer.Option(min=1, help="CPU per step, ms: browser + pipeline (bench/e2e.py scale_out)"),
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
            "--measure", help="measure a short run's CPU and time a step (vs --output's run)"
        ),
    ] = False,
    output: OutputOpt = None,
) -> None:
    """Capacity plan before launch: engine throughput, CPU workers per GPU, hours and GPU cost.

    Sessions in flight against the pipeline's, from datagen's engine model under a named
    calibration (a published figure on one H100), not a measurement: check it against the
    dashboard in the first minutes. Contacts no engine: the engine URL may be unset."""
    from datagen.capacity.command import PlanOptions, engine_for, run_plan

    options = PlanOptions(
        model, calibration, latency_budget, steps_per_episode, max_num_seqs, cpu_ms_per_step,
        step_wall_ms, cores_per_worker, gpu_hour_usd, measure, output,
    )  # fmt: skip
    try:
        engine_for(options)  # an unknown model or calibration fails before the file is read
        plan = _load(pipeline, output, check_machine=False, unset_env_ok=True)
    except (ValueError, DatagenError) as exc:
        raise _fail(exc) from None
    run_plan(console, plan.config, plan.episodes, f"capacity plan: {pipeline}", options)


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
    show_plan(console, plan, {k: CLUSTER_FLAGS[k] for k in flags})
    show_warnings(console, plan)
    if dry_run:
        console.print("dry run: nothing launched")
        return
    from datagen.observe.logs import setup_logging
    from datagen.observe.progress import RichProgress
    from datagen.runtime.driver import execute

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
    show_summary(console, err_console, summary, len(plan.tasks))
    manifest = summary.manifest
    empty = bool(plan.tasks) and (manifest is None or not manifest.tables["episodes"].rows)
    if summary.failed_shards or manifest is None or not manifest.complete or empty:
        raise typer.Exit(1)


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
    from datagen.sink.inspect import gallery, load, summary
    from datagen.sink.storage import open_storage
    from datagen.sink.verify import verify_output

    try:  # sizes only: cheap; `datagen verify` reads every part for its sha256
        check = verify_output(open_storage(uri, endpoint_url), full=False)
        for line in check.lines() if not check.ok else []:
            err_console.print(f"[yellow]integrity:[/] {safe(line)}", highlight=False)
        tables = load(uri, endpoint_url)
    except (OSError, ValueError, DatagenError) as exc:
        raise _fail(exc) from None
    facts = summary(tables)
    table = Table(title=f"dataset {safe(uri, newlines=False)}", show_header=False)
    for key, value in facts.items():  # sites, actions, reasons: text from the data
        table.add_row(key.replace("_", " "), safe(value))
    table.add_row(
        "integrity",
        f"sizes ok: {check.shards} shards, {check.parts} parts (sha256: datagen verify)"
        if check.ok
        else f"{len(check.problems)} problems in {len(check.by_shard())} shards: datagen verify",
    )
    console.print(table)
    if html_out is not None:
        html_out.write_text(gallery(tables, episodes), encoding="utf-8")
        console.print(f"wrote {html_out}", markup=False, highlight=False)


@app.command()
def verify(
    uri: Annotated[str, typer.Argument(help="output folder or s3://bucket/prefix")],
    endpoint_url: Annotated[str | None, typer.Option(help="S3-compatible endpoint")] = None,
    sizes_only: Annotated[
        bool, typer.Option("--sizes-only", help="existence and sizes only: no downloads")
    ] = False,
) -> None:
    """Check a dataset's integrity: its markers, and the size and sha256 of every part.

    Every marker is readable JSON of the right shape, every part it commits exists with the
    size and sha256 it records. Exit code 1 if anything is wrong."""
    from botocore.exceptions import BotoCoreError, ClientError

    from datagen.sink.storage import open_storage
    from datagen.sink.verify import verify_output

    try:
        report = verify_output(open_storage(uri, endpoint_url), full=not sizes_only)
    except (OSError, ValueError, DatagenError, BotoCoreError, ClientError) as exc:
        raise _fail(exc) from None
    for line in report.lines():
        console.print(plain(line), highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


@app.command("export")
def export_command(
    uri: Annotated[str, typer.Argument(help="output folder or s3://bucket/prefix of a run")],
    format: Annotated[
        Output, choice(Output, "the training format or a task list", "--format", "-f")
    ],
    to: Annotated[
        str | None,
        typer.Option(help="export folder or s3:// prefix (default: OUT/exports/<format>)"),
    ] = None,
    coords: Annotated[
        Coords | None, choice(Coords, "points' and boxes' convention", default="pixels")
    ] = None,
    syntax: Annotated[
        Syntax | None, choice(Syntax, "sft, rl, pairs: the actions' syntax", default="tool")
    ] = None,
    min_pixels: Annotated[int | None, typer.Option(help="qwen25vl: min area (3136)")] = None,
    max_pixels: Annotated[int | None, typer.Option(help="qwen25vl: max area (12845056)")] = None,
    allow_standin: Annotated[
        bool, typer.Option(help="keep the model stand-in's samples (pipeline tests only)")
    ] = False,
    history: Annotated[
        int | None, typer.Option(help="screenshots per sft sample, current last (default 1)")
    ] = None,
    instruction: Annotated[
        Instruction | None, choice(Instruction, "sft: the instruction", default="task")
    ] = None,
    filter: Annotated[
        Filter | None, choice(Filter, "sft: which episodes", "--filter", default="solved")
    ] = None,
    validation: Annotated[float | None, typer.Option(help="validation share 0-0.5 (0.1)")] = None,
    license: Annotated[str | None, typer.Option(help="card licence id (default other)")] = None,
    endpoint_url: Annotated[str | None, typer.Option(help="S3-compatible endpoint")] = None,
) -> None:
    """Export a run's committed shards to a training format (Parquet + a dataset card).

    A rerun adds only shards committed since; a run still writing exports what it committed."""
    from botocore.exceptions import BotoCoreError, ClientError

    from datagen.export import export_output, parse_options

    given: dict[str, Any] = {"coords": coords, "syntax": syntax, "history": history}
    given |= {"instruction": instruction, "filter": filter, "allow_standin": allow_standin or None}
    given |= {"min_pixels": min_pixels, "max_pixels": max_pixels}
    try:
        if format == "tasks":  # a task list, not training samples (export/tasks.py)
            from datagen.export.tasks import export_tasks, reads_none

            reads_none(given | {"validation": validation, "license": license})
            summary = export_tasks(uri, to, endpoint_url).summary()
        else:
            options = parse_options(format, **given, validation=validation)
            summary = plain(export_output(
                uri, options, to, endpoint_url, license=license,
                on_shard=lambda shard, rows: console.print(f"shard {shard}: {rows} rows"),
            ).summary())  # fmt: skip
    except (OSError, DatagenError, BotoCoreError, ClientError) as exc:
        raise _fail(exc) from None
    console.print(summary, markup=False, soft_wrap=True)


@app.command()
def schemas(
    check: Annotated[bool, typer.Option("--check", help="fail if schemas/ is out of date")] = False,
) -> None:
    """Write the JSON Schemas of the output tables to schemas/ (generated from records/rows.py)."""
    from datagen.sink.schema import stale_json_schemas, write_json_schemas

    if check:
        if stale := stale_json_schemas():
            err_console.print(f"out of date: {', '.join(stale)}; run `datagen schemas`")
            raise typer.Exit(1)
        console.print("schemas up to date")
        return
    for path in write_json_schemas():
        console.print(f"wrote {path}")


reflow_help(app)


def main() -> None:
    app()
