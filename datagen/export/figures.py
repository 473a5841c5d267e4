"""What the card says about the samples and where they came from, counted shard by shard.

    ShardData + the format's rows ─► <format>_counts + shard_figures() ─► ShardRecord.figures
        ─► the format's card lines (element_lines, sample_lines, sft_lines) ─► card.dataset_card

Counts only (they are summed over shards in the state), under prefixed keys:

- `samples:task`: task-labelled samples: an `sft` sample with the task's instruction
  (`instruction_source` task) of an episode whose check passed; an `rl` rollout with a check
  verdict (its reward); every pair (its chosen side passed the check). `samples:relabel`: `sft`
  samples with an accepted relabel as instruction.
- `samples:checked`: samples that could be verified (the source has the `needed` /
  `verification` columns), `samples:verified` those that were: an `sft` sample's step has
  `needed` true (replay showed the task needs it); an `rl` or `pairs` sample's episode (a
  pair's chosen side) has `verification` minimal. `samples:verification=<value>`: samples
  by their episode's verification status (minimal, reduced, not_reproduced, null).
  A grounding sample is labelled from the DOM, not by a task: `elements`, `elements:model`
  (a model-written expression kept) instead.
- `episodes`, `episodes:labelled`, `verification=<value>`: the source's episodes.
- provenance, from the rows themselves (each row carries its versions): `datagen_version=…`,
  `browser_version=…`, `playwright_version=…`, `policy=…`, `source=…`, `site=…` (episodes;
  a task list names no site: `places.site_label`, the start URL's domain or host and port);
  `model=<served name>` and `model_standin` (steps whose action a model or the engine stand-in
  wrote), `relabel_model=…`, `relabel_standin`, `relabels` (episodes); `model_expressions`
  (grounding rows with a model-written expression).
"""

from __future__ import annotations

from collections import Counter

from datagen.export.failures import solved
from datagen.export.places import site_label
from datagen.export.source import Row, ShardData
from datagen.export.state import ShardRecord

VERIFIED = ("minimal",)  # a reduced search proved only part of its steps: not verified
PROVENANCE = (
    "datagen_version",
    "browser_version",
    "playwright_version",
    "policy",
    "source",
)


def labelled(episode: Row) -> bool:
    """The episode's actions carry out a known instruction (its task's or an accepted relabel)."""
    return solved(episode) or episode.get("relabel_accepted") is True


def shard_figures(shard: ShardData, samples: Counter[str]) -> dict[str, int]:
    """The shard's counts (module docstring); `samples`: its format's counts of its `data` rows
    (`ExportFormat.count`)."""
    counts: Counter[str] = Counter(samples)
    for e in shard.episodes:
        counts["episodes"] += 1
        counts["episodes:labelled"] += labelled(e)
        if "verification" in e:
            counts[f"verification={e['verification'] or 'null'}"] += 1
        counts.update(f"{k}={e[k]}" for k in PROVENANCE if e.get(k) is not None)
        counts[f"site={site_label(e)}"] += 1  # a task list names no site: its host, its domain
        counts["relabels"] += e.get("relabeled_instruction") is not None
        if e.get("relabel_model"):
            counts[f"relabel_model={e['relabel_model']}"] += 1
        counts["relabel_standin"] += e.get("relabel_standin") is True
    for s in shard.steps:
        if s.get("model"):
            counts[f"model={s['model']}"] += 1
        counts["model_standin"] += s.get("model_standin") is True
    counts["model_expressions"] += sum(
        g.get("model_expression") is not None for g in shard.grounding
    )
    return {k: n for k, n in counts.items() if n}


def element_counts(shard: ShardData, rows: list[Row]) -> Counter[str]:
    """grounding: its rows' elements, and those with a model-written expression."""
    counts: Counter[str] = Counter()
    for r in rows:
        counts["elements"] += len(r["elements"])
        counts["elements:model"] += sum(x["model_expression"] is not None for x in r["elements"])
    return counts


def sft_counts(shard: ShardData, rows: list[Row]) -> Counter[str]:
    """sft: samples by instruction source, and those whose step replay showed needed."""
    counts: Counter[str] = Counter()
    episodes = {e["episode_id"]: e for e in shard.episodes}
    steps = {(s["episode_id"], s["step_index"]): s for s in shard.steps}
    for r in rows:
        episode = episodes.get(r.get("episode_id") or "")
        if episode is None:
            continue
        source = r.get("instruction_source")
        if "verification" in episode:
            counts[f"samples:verification={episode['verification'] or 'null'}"] += 1
        counts["samples:task"] += source == "task" and solved(episode)
        counts["samples:relabel"] += source == "relabel"
        step = steps.get((episode["episode_id"], r["step_index"]), {})
        if "needed" in step:
            counts["samples:checked"] += 1
            counts["samples:verified"] += step["needed"] is True
    return counts


def episode_counts(shard: ShardData, rows: list[Row]) -> Counter[str]:
    """rl, pairs: a sample per episode (a pair's chosen side): the check's verdict is its label
    (rl: the reward, and the row's own `verification`: a synthesised group's rollouts may be
    of other shards, and theirs is not their episode's; pairs: the chosen side passed it, and
    its episode's verification)."""
    counts: Counter[str] = Counter()
    episodes = {i: e for i, (e, _) in shard.reachable().items()}
    for r in rows:
        episode = episodes.get(r.get("chosen_episode_id") or r.get("episode_id") or "")
        if episode is None:
            continue
        rl = "reward" in r
        counts["samples:task"] += (r["reward"] if rl else episode.get("success")) is not None
        if "verification" in episode:
            verification = r["verification"] if rl else episode["verification"]
            counts[f"samples:verification={verification or 'null'}"] += 1
            counts["samples:checked"] += 1
            counts["samples:verified"] += verification in VERIFIED
    return counts


def share(part: int, whole: int) -> str:
    """`3 of 4 (75.0%)`."""
    return f"{part} of {whole} ({100 * part / whole:.1f}%)" if whole else f"{part} of 0"


def element_lines(totals: ShardRecord) -> list[str]:
    """The card's lines on a grounding export's elements."""
    f, elements = totals.figures, totals.figures.get("elements", 0)
    return [
        f"- elements: {elements}; with a model-written expression: "
        f"{share(f.get('elements:model', 0), elements)}"
    ]


def sample_lines(totals: ShardRecord, labels: bool = True) -> list[str]:
    """The card's lines on task-labelled (with `labels`) and replay-verified samples."""
    f, lines = totals.figures, []
    if labels:
        lines.append(
            f"- task-labelled samples (the task's instruction, and its check passed; rl: a "
            f"check verdict as reward): {share(f.get('samples:task', 0), totals.rows)}; "
            f"relabel-labelled: {f.get('samples:relabel', 0)}"
        )
    checked = f.get("samples:checked", 0)
    if checked:
        verified = share(f.get("samples:verified", 0), checked)
        lines.append(
            "- verified by replay (sft: the step is `needed`; rl, pairs: the episode's "
            f"`verification` is minimal): {verified}"
        )
    lines += status_lines(f)
    return lines


STATUSES = ("minimal", "reduced", "not_reproduced", "null")


def status_lines(figures: dict[str, int]) -> list[str]:
    """Episodes and samples by their verification status ([] for unverified outputs)."""
    episodes = [f"{k} {figures.get(f'verification={k}', 0)}" for k in STATUSES]
    samples = [f"{k} {figures.get(f'samples:verification={k}', 0)}" for k in STATUSES]
    if not any(k.startswith("verification=") for k in figures):
        return []
    return [
        f"- episodes by verification: {', '.join(episodes)}; samples by their episode's "
        f"verification: {', '.join(samples)} (task-labelled samples come only from minimal "
        "episodes, whose needed steps replays proved; reduced ones give step-level samples)"
    ]


def sft_lines(totals: ShardRecord) -> list[str]:
    """sample_lines, the labels only when the export's own tally does not count them by
    instruction source (older states)."""
    return sample_lines(totals, labels=not any(k.startswith("samples.") for k in totals.tally))
