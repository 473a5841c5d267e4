"""One shard: its episodes (in the worker's episode pool), then its parts written once.

list[TaskSpec] × run.repeats ─► EpisodePool.slot (pool.py) ─► run_episode (episode.py)
                             ─► verify (verify.py: replays of a solved one) ─► relabel
                             ─► tables ─► sink.write_shard ─► ShardResult (the shard's stats)

The pool's slots are the worker's (`sessions_per_worker`), shared with the other shards in
flight there (`ShardContext.pool`); a shard run on its own gets a pool of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from typing import Any

from datagen.browser.failures import BrowserDied
from datagen.observe.summary import counted
from datagen.pipeline.context import ShardContext, SynthMemo
from datagen.pipeline.episode import relabel, run_episode
from datagen.pipeline.hosts import HostTurn, LocalHosts
from datagen.pipeline.pool import EpisodePool
from datagen.pipeline.rows import EpisodeOutcome
from datagen.pipeline.synthesis import reworded, specific
from datagen.pipeline.verify import verify
from datagen.records import EpisodeRow, ShardResult, TaskSpec
from datagen.sink.writer import write_shard


async def run_shard(shard: int, tasks: list[TaskSpec], ctx: ShardContext) -> ShardResult:
    """Run every episode of a shard in the worker's episode pool, then write its parts.

    Only on a browser that lasted: if it was closed, restarted or stopped answering before
    the shard ends (a shutdown, an interrupt, a crash), the shard raises BrowserDied and is
    not committed, since its episodes may have failed for that and not for their tasks."""
    started = time.perf_counter()
    launch = ctx.host.launches
    pool = ctx.pool or EpisodePool(ctx.config.cluster.sessions_per_worker)
    ticket = pool.ticket()

    if ctx.hosts is None:  # a shard run alone: its own book of the run's host rules
        ctx.hosts = LocalHosts(ctx.config.run.hosts)
    # synthesis's memory is the shard's own (a rerun of the shard proves its tasks again)
    ctx = dataclasses.replace(ctx, synth=SynthMemo())

    async def one(task: TaskSpec, repeat: int, index: int) -> EpisodeOutcome:
        # The host's session first, then the worker's slot: a slot never idles waiting for a
        # busy host while tasks of other hosts queue behind it.
        async with HostTurn(task, repeat, ctx) as turn:
            if turn.outcome is None:  # else blocked or disallowed: no browser session at all
                async with pool.slot((ticket, index)):
                    await ctx.host.admit(pool.running)
                    with pool.episode():
                        turn.outcome = await run_episode(task, repeat, ctx)
                        await verify(turn.outcome, task, ctx)  # replays: browser work, in slot
        outcome = turn.outcome
        await relabel(outcome, ctx)  # outside the slot: no session is held while a model reads
        _report(shard, outcome, ctx)
        return outcome

    # A TaskGroup, not gather: when one episode fails the shard (its browser died), the others
    # are cancelled and their contexts closed, instead of running on beside the shard's retry.
    episodes = [(t, r) for t in tasks for r in range(ctx.config.run.repeats)]
    with pool.watch() as peak:
        try:
            async with asyncio.TaskGroup() as group:
                jobs = [group.create_task(one(t, r, i)) for i, (t, r) in enumerate(episodes)]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
    outcomes = [job.result() for job in jobs]
    if ctx.host.launches != launch or not await ctx.host.responsive():
        raise BrowserDied(f"the browser closed or stopped answering under shard {shard}")
    specific(outcomes)  # a task true where its demonstration was not done is no task
    await reworded(outcomes, ctx)  # the model's words, where they keep the check's names
    tables: dict[str, list[Any]] = {
        "episodes": [],
        "steps": [],
        "grounding": [],
        "rejects": [],
        "tasks": [],
    }
    for o in outcomes:
        tables["tasks"] += o.tasks
        tables["episodes"] += [o.episode] if o.episode else []
        tables["steps"] += o.steps
        tables["grounding"] += o.grounding
        tables["rejects"] += o.rejects
    synthesised = tables["tasks"]
    if ctx.config.annotation.tasks is None:  # synthesis off: no tasks part (sink.write_shard)
        del tables["tasks"]
    result = ShardResult(
        shard=shard,
        tasks=len(tasks),
        episodes=len(tables["episodes"]),
        steps=len(tables["steps"]),
        grounding=len(tables["grounding"]),
        rejects=len(tables["rejects"]),
        solved=sum(1 for e in tables["episodes"] if e.success),
        reject_reasons=dict(Counter(r.reason for r in tables["rejects"])),
        seconds=round(time.perf_counter() - started, 3),
        peak_sessions=peak.value,
        browser_memory_mb=round(ctx.host.memory_mb(max_age_s=0), 1),
        browser_episodes=ctx.host.episodes,
        tasks_with_episodes=len({e.task_id for e in tables["episodes"]}),
        **verification_figures(tables["episodes"]),
        synth_s=round(sum(o.synth_ms for o in outcomes) / 1000, 3),
        tasks_synthesised=sum(1 for t in synthesised if t.kept),
        tasks_dropped=dict(Counter(t.dropped_at for t in synthesised if t.dropped_at)),
    )
    await asyncio.to_thread(write_shard, ctx.storage, shard, tables, result)
    return result


def _report(shard: int, outcome: EpisodeOutcome, ctx: ShardContext) -> None:
    """Count an ended episode in the meter and tell the run's progress about it."""
    ctx.meter.add("episodes")
    for reject in outcome.rejects:
        ctx.meter.add("reject:" + reject.reason)
    ctx.on_episode(
        {
            "shard": shard,
            "episode_id": outcome.ids["episode_id"],  # a rerun's episode counts once
            "episode": outcome.episode is not None,
            "steps": len(outcome.steps),
            "solved": bool(outcome.episode and outcome.episode.success),
            "rejects": dict(Counter(r.reason for r in outcome.rejects)),
        }
    )


def verification_figures(episodes: list[EpisodeRow]) -> dict[str, Any]:
    """ShardResult's session_s, verify_s, replays, replay_network, replay_refused and
    verified, from the episode rows."""
    verify_s = sum((e.verify_ms or 0.0) for e in episodes) / 1000
    return {
        "session_s": round(sum(e.duration_s for e in episodes) + verify_s, 3),
        "verify_s": round(verify_s, 3),
        "replays": sum((e.verify_replays or 0) for e in episodes),
        "replay_network": counted(line for e in episodes for line in e.verify_network),
        "replay_refused": counted(line for e in episodes for line in e.verify_aborted),
        "verified": sum(1 for e in episodes if e.verification is not None),
    }
