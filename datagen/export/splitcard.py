"""What the split is made of and how far it is from the share asked: the card's `## Splits`
lines and the export's one-line summary.

    SplitState ─► split_lines() ─► card.dataset_card
               ─► split_summary() ─► run.ExportResult.summary ─► `datagen export`'s output

A user asking for 10% validation may get 0% or 20%: clusters go whole to one side (a bundled
site is one), and five clusters allow no closer split. Both texts say so, with the figures.
"""

from __future__ import annotations

from collections.abc import Callable

from datagen.export.phash import NEAR
from datagen.export.split import SPLITS, TRAIN, VALIDATION, SplitState

CLUSTER = (
    "a cluster is a task's repeats (its group), joined with every task of the same site or "
    "app (its source's site name; else the start URL's registrable domain, or for an IP or "
    "local host its host and port, or the app's folder where the run's scope is a folder) and "
    f"with every task that has a near-duplicate screenshot (DCT hash within {NEAR} of 64 bits: "
    "a start page two tasks share, a page both reach). Near-duplicates are grouped because a "
    "validation screenshot that train already shows measures memory, not what the model does "
    "on a screen it has not seen"
)


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def distance(state: SplitState) -> tuple[int, int, str]:
    """(validation groups, all groups, how far validation's share is from the one asked)."""
    counts = state.counts()
    total = sum(counts.values())
    got = counts[VALIDATION] / total if total else 0.0
    off = got - state.share
    if abs(off) < 0.0005:
        return counts[VALIDATION], total, f"asked {_percent(state.share)}: exactly"
    way = "over" if off > 0 else "under"
    return (
        counts[VALIDATION],
        total,
        f"asked {_percent(state.share)}: {100 * abs(off):.1f} points {way}",
    )


def split_summary(state: SplitState) -> str:
    """One line for the export's output: the split's sides and its distance from the share."""
    if state.share == 0:
        return "split: none (--validation 0), every sample in train"
    val, total, how = distance(state)
    clusters = state.clusters
    line = f"split: validation {val} of {total} task groups ({_percent(val / total if total else 0)}, {how}), "
    line += f"clusters train {clusters.get(TRAIN, 0)}, validation {clusters.get(VALIDATION, 0)} "
    line += "(whole sites/apps; tasks with near-duplicate screenshots joined)"
    if not val:
        line += "; no validation: the run is a single cluster"
    return line


def split_lines(state: SplitState, names: Callable[[list[str]], str]) -> list[str]:
    """The card's split lines: what a cluster is, each side's groups and places (`names`: the
    card's escaped list of them), how far the validation share is from the one asked and why."""
    if state.share == 0:
        return ["- no validation split (`--validation 0`): every sample is in train"]
    val, total, how = distance(state)
    places = {s: sorted(k for k, v in state.sites.items() if v == s) for s in SPLITS}
    counts = state.counts()
    clusters = state.clusters
    lines = [
        f"- validation: {val} of {total} task groups ({_percent(val / total if total else 0)}), "
        f"{how} (`--validation {state.share:g}`). Clusters go whole to one side, and the split "
        "is the choice of whole clusters closest to the share (train never empty, validation "
        "never empty when there are two clusters): few or large clusters allow no closer one",
        f"- {CLUSTER}",
        *(
            f"- {s}: {counts[s]} groups in {clusters.get(s, 0)} clusters; sites and apps: "
            f"{names(places[s])}"
            for s in SPLITS
        ),
    ]
    if not val:
        lines.append(
            "- validation is empty: the tasks form a single cluster (one site or app, or "
            "screenshots that all join up); every sample is in train"
        )
    if state.conflicts:
        lines.append(
            f"- {len(state.conflicts)} groups had near-duplicates on both sides already "
            "written (exported shard by shard): put in train"
        )
    return lines
