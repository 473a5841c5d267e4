"""What `datagen validate` and `datagen run` print around a run: the run plan before anything
starts, and the summary when it ends. Rich tables and lines, no Dask, no pyarrow at import.

    runplan.Plan ─► show_plan(), show_warnings() ─► the terminal
    RunSummary (outcome.py: manifest, shards, workers) ─► show_summary() ─► the terminal
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from rich.table import Table

from datagen.observe.roles import run_measures
from datagen.observe.safe import plain, safe

if TYPE_CHECKING:
    from rich.console import Console

    from datagen.observe.outcome import RunSummary
    from datagen.runplan import Plan
    from datagen.sink.models import Manifest


def show_plan(console: Console, plan: Plan, flags: Mapping[str, str] | None = None) -> None:
    """The plan as a table; `flags`: the cluster keys set on the command line → the flag that
    set each (shown beside its value)."""
    from datagen.config import redact_url

    cfg = plan.config
    by_flag = {k: f" ({flag})" for k, flag in (flags or {}).items()}
    table = Table(title=f"plan: {safe(cfg.name, newlines=False)}", show_header=False)
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
    for key, value in rows:  # names, URIs, addresses: the user's text
        table.add_row(key, safe(value, newlines=False))
    console.print(table)


def show_warnings(console: Console, plan: Plan) -> None:
    """What the run will do that a reader may not expect (runplan.notes), then what would make
    it produce less than it could (runplan.warnings), in yellow."""
    from datagen.runplan import notes, warnings

    for line in notes(plan):  # they name tasks, URLs and keys: text from the user's files
        console.print(plain(line), markup=False, highlight=False, soft_wrap=True)
    for line in warnings(plan):
        console.print(f"[yellow]{safe(line)}[/]", highlight=False)


def counts_text(counts: Mapping[str, int | float]) -> str:
    """Counts by name as a reader wants them, most first: `occluded 141, timeout_step 3`;
    `none` when there are none (not a Python dict)."""
    shown = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {v:,.0f}" for k, v in shown) or "none"


def show_summary(console: Console, err_console: Console, summary: RunSummary, tasks: int) -> None:
    """The end of a run: rows per table, episodes and rejects, what was skipped, redone, lost
    or failed, and where the output and its report are."""
    manifest = summary.manifest
    assert manifest is not None  # `execute` returns once the run is finalized
    table = Table(title="output")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, info in manifest.tables.items():
        table.add_row(name, str(info.rows))
    console.print(table)
    episodes = manifest.tables["episodes"].rows
    with_episodes = manifest.tasks.with_episodes
    console.print(
        f"episodes from {with_episodes} of {tasks} tasks; solved {manifest.solved} of "
        f"{episodes} episodes; rejects by reason: {counts_text(manifest.reject_reasons)}"
    )
    from datagen.observe.solves import rates_at, solve_line  # reads Parquet: here only

    line = solve_line(rates_at(*manifest.output)) if episodes > with_episodes else ""
    if line:
        console.print(plain(line), markup=False, highlight=False)
    dropped = manifest.steps_dropped
    if dropped.total:
        reasons = counts_text(dropped.by_reason)
        console.print(
            f"dropped {dropped.total} observations ({dropped.share:.1%} of all) on pages "
            f"out of scope, error or blank pages, never data: {reasons} (see run.scope)"
        )
    measures = run_measures(manifest) if summary.measures is None else summary.measures
    for line in measures:  # the model's roles measured, from the output
        console.print(line, highlight=False, markup=False)
    results = summary.results
    line = verification_line(
        sum(r.session_s for r in results),
        sum(r.verify_s for r in results),
        sum(r.replays for r in results),
        summed(r.replay_network for r in results),
        summed(r.replay_refused for r in results),
        sum(r.verified for r in results),
    )
    if line:
        console.print(plain(line), markup=False, highlight=False)
    kept, cut = sum(r.tasks_synthesised for r in results), summed(r.tasks_dropped for r in results)
    listed = None
    if kept:  # what the whole run proved: a task another shard's episode disproves is dropped
        from datagen.observe.synth import run_counts  # reads Parquet: here only

        kept, cut, listed = run_counts(*manifest.output) or (kept, cut, None)
    line = synthesis_line(
        sum(r.session_s for r in results), sum(r.synth_s for r in results), kept, cut, listed
    )
    if line:
        console.print(plain(line), markup=False, highlight=False)
    show_shards(console, summary)
    show_limits(console, summary)
    show_workers(console, err_console, summary)
    for shard, reason in summary.failed_shards.items():
        err_console.print(f"[red]shard {shard} failed:[/] {safe(reason)}", highlight=False)
    state = (
        "complete"
        if manifest.complete
        else f"incomplete (missing shards {list(manifest.shards.missing)}; run again to finish)"
    )
    if tasks and not episodes:
        state = "produced no episodes: every task ended as a reject"
        show_top_rejects(err_console, manifest)
    written = plain(f"wrote {manifest.output[0]} in {summary.seconds:.1f}s: {state}")
    console.print(written, markup=False, highlight=False)
    if summary.report:
        where = plain(f"run report (throughput, latency, memory): {summary.report}")
        console.print(where, markup=False, highlight=False)


def show_shards(console: Console, summary: RunSummary) -> None:
    """Shards this run did not run as planned: skipped (committed before), redone (failed the
    integrity check), held by another run of the same pipeline."""
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
                plain(f"  shard {shard}: {reason}"), highlight=False, markup=False, soft_wrap=True
            )
    if summary.leased_elsewhere:
        n, theirs = len(summary.leased_elsewhere), len(summary.other_run_shards)
        console.print(
            f"another run of this pipeline held {n} shard{'s' * (n != 1)} when this one "
            f"started: {theirs} committed by it, {n - theirs} taken over here when it stopped; "
            f"this run ran {len(summary.results) + len(summary.failed_shards)}"
        )


def show_limits(console: Console, summary: RunSummary) -> None:
    """What held the sessions in flight, as shares of the workers' time (the engine, the
    CPU-aware session limit, memory, sessions_per_worker, or no more tasks to start)."""
    bound = {name: s for name, s in summary.bound_s.items() if s > 0}
    total = sum(bound.values())
    if not total:
        return
    shares = ", ".join(
        f"{name} {s / total:.0%}" for name, s in sorted(bound.items(), key=lambda kv: -kv[1])
    )
    console.print(f"what held sessions in flight (share of worker-time): {shares}", highlight=False)


def show_workers(console: Console, err_console: Console, summary: RunSummary) -> None:
    """Workers lost during the run and what that cost; workers that could not start a browser."""
    report = summary.workers
    if report.lost:
        lost = plain(f"workers lost while the run ran: {', '.join(report.lost)}")
        console.print(lost, markup=False, highlight=False)
    if report.rerun or report.reused:
        again = ", ".join(f"{s} ({n} attempts)" for s, n in sorted(report.rerun.items()))
        console.print(
            f"shards run again: {again or 'none'}; found committed when their task ran again "
            f"(not rerun): {', '.join(map(str, sorted(report.reused))) or 'none'}",
            highlight=False,
        )
    for worker, why in report.failed.items():
        err_console.print(
            plain(f"worker {worker} took no shard: {why}"),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def show_top_rejects(err_console: Console, manifest: Manifest) -> None:
    """For a run that produced nothing: its top reject reasons, each with one example."""
    examples: dict[str, str] = {}
    try:
        from datagen.sink.read import read_committed

        uri, endpoint_url = manifest.output
        dataset = read_committed(uri, "rejects", endpoint_url, ["reason", "detail"])
        for row in dataset.head(10_000).to_pylist():
            examples.setdefault(row["reason"], row["detail"])
    except Exception:  # the examples are a courtesy: the counts below still say it
        examples = {}
    err_console.print("[red]no episodes:[/] every task ended as a reject. top reasons:")
    for reason, count in list(manifest.reject_reasons.items())[:3]:
        example = examples.get(reason, "")
        shown = f" (e.g. {example[:200]})" if example else ""
        line = plain(f"  {reason}: {count}{shown}", newlines=False)
        err_console.print(line, highlight=False, markup=False)


def counted(lines: Iterable[str]) -> dict[str, int]:
    """'KEY count' lines (an episode's verify_network, verify_aborted) added up by key (a line
    without a count counts once)."""
    total: Counter[str] = Counter()
    for line in lines:
        key, _, n = line.rpartition(" ")
        total[key] += int(n) if n.isdigit() else 1
    return dict(total)


def summed(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Counts by key, added over every shard (not the last shard's)."""
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    return dict(total)


def synthesis_line(
    session_s: float,
    synth_s: float,
    kept: int,
    dropped: Mapping[str, int],
    listed: int | None = None,
) -> str:
    """Task synthesis (annotation.tasks): the tasks synthesised, those its proof kept (and how
    many tasks the task list gives of them, `listed`: the same effect kept by two shards, or
    one instruction or demonstration with two checks, is one task), those it dropped by proof
    step, and its time as a share of the sessions' with it; "" when none."""
    made = kept + sum(dropped.values())
    if not made:
        return ""
    # its replays run beside the sessions' time (episodes and verification), not within it
    share = f"{synth_s / (session_s + synth_s):.1%} of session time with it, " if synth_s else ""
    export = "`datagen export OUT -f tasks`"
    if listed is not None and listed != kept:
        export = f"{listed} tasks once duplicates are left out: {export}"
    return (
        f"task synthesis: {made} tasks synthesised, {kept} kept, dropped by proof step: "
        f"{counts_text(dropped)} ({share}{synth_s:.1f} s; {export})"
    )


def verification_line(
    session_s: float,
    verify_s: float,
    replays: int,
    network: Mapping[str, int],
    refused: Mapping[str, int] | None = None,
    verified: int = 0,
) -> str:
    """Replay verification's share of the browser sessions' time, its replays (per verified
    episode: some need none), what they sent to the network and what was refused; "" when
    nothing was verified. `network` and `refused`: requests by 'METHOD host', summed over
    every shard."""
    if not (replays or verified) or session_s <= 0:
        return ""
    sent = ", ".join(f"{k} {n}" for k, n in sorted(network.items())) or "nothing"
    episodes = f"{verified} verified episode{'s' * (verified != 1)}"
    each = f" for {episodes} ({replays / verified:.1f} each)" if verified else ""
    stopped = sum((refused or {}).values())
    shown = ", ".join(f"{k} {n}" for k, n in sorted((refused or {}).items())[:6])
    return (
        f"verification: {verify_s / session_s:.1%} of session time ({verify_s:.1f} of "
        f"{session_s:.1f} s), {replays} replay{'s' * (replays != 1)}{each}; replays sent to the "
        f"network: {sent}; "
        f"refused: {stopped}{f' ({shown})' if shown else ''} (the rest answered from the "
        "episodes' recorded traffic)"
    )
