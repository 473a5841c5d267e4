"""The export's train / validation split: whole clusters of groups on one side.

    ShardLinks of every pending shard + SplitState (from the export state)
        ─► plan() ─► group → train | validation, for every pending group
    per shard: record() ─► SplitState (saved with the shard)

What must not straddle the split, so that validation measures what was not trained on:

- a group: all repeats of a task (same instruction, same start page);
- a place: every group whose episodes ran on one site or app (`places.places`: the source's
  site name, the start URL's registrable domain, or for an IP or local host its host and port,
  or the folder the run's scope confines it to);
- near-duplicate screenshots: groups with screenshots within `phash.NEAR` bits of each other
  (tasks that share a start page, a page reached by two tasks).

Groups, places and screenshot hashes are nodes of a union-find over all the shards an export
writes; a group is joined to its places and its screenshots' hashes, and hashes within `NEAR`
bits to each other. Each cluster (a connected set with at least one group) goes whole to one
side. Clusters that reach nothing already written are free: `balance.choose` picks those for
validation whose sizes (in groups) bring validation closest to `share` of all groups, train
never empty and validation never empty when there are two clusters. Their draw order (ties) is
the first 64 bits of sha256(the cluster's smallest group id): fixed by the run and its tasks.

Exports are incremental, so the state keeps what later exports must follow: each group's,
place's and screenshot hash's side. A cluster that reaches any of them (its place, a
screenshot near one already written, a group of a redone shard) takes that side. One that
reaches both sides (it bridges two clusters already written on different sides) goes to train
and is counted in `conflicts`: the rows already written cannot move.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from datagen.export.balance import choose
from datagen.export.phash import NearIndex, phash
from datagen.export.places import ScopeSetting, places
from datagen.export.source import ShardData
from datagen.records import Frozen

Split = Literal["train", "validation"]
TRAIN: Split = "train"
VALIDATION: Split = "validation"
SPLITS: tuple[Split, ...] = (TRAIN, VALIDATION)


class SplitState(Frozen):
    """What the export's split has decided so far (in `_export.json`)."""

    share: float = Field(description="the share of groups asked for validation (0: no split)")
    groups: dict[str, Split] = Field(default_factory=dict, description="group_id → its side")
    sites: dict[str, Split] = Field(
        default_factory=dict, description="place (site, domain, host:port, folder) → its side"
    )
    hashes: dict[str, Split] = Field(
        default_factory=dict, description="screenshot phash (16 hex) → its side"
    )
    conflicts: tuple[str, ...] = Field(
        (), description="groups near-duplicate of both sides already written (put in train)"
    )
    clusters: dict[str, int] = Field(
        default_factory=dict, description="side → clusters this export's runs put there"
    )

    def counts(self) -> dict[Split, int]:
        """Task groups on each side."""
        return {s: sum(v == s for v in self.groups.values()) for s in SPLITS}


@dataclass
class ShardLinks:
    """What one shard's groups are tied to: their places and their screenshots' hashes."""

    groups: list[str]
    places: dict[str, set[str]] = field(default_factory=dict)
    hashes: dict[str, set[int]] = field(default_factory=dict)


@dataclass
class Plan:
    """The sides of every group of the pending shards, and the clusters chosen."""

    sides: dict[str, Split] = field(default_factory=dict)
    clusters: dict[Split, int] = field(default_factory=lambda: dict.fromkeys(SPLITS, 0))
    conflicts: list[str] = field(default_factory=list)


class _Sets:
    """Union-find over string keys."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        self.parent.setdefault(key, key)
        root = key
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[key] != root:  # path compression
            self.parent[key], key = root, self.parent[key]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def clusters(self) -> list[list[str]]:
        members: dict[str, list[str]] = defaultdict(list)
        for key in self.parent:
            members[self.find(key)].append(key)
        return [sorted(m) for m in members.values()]


def rank(group: str) -> float:
    """A cluster's place in draw order, from its smallest group id: uniform in [0, 1)."""
    return int(hashlib.sha256(group.encode()).hexdigest()[:16], 16) / 2**64


def _hex(h: int) -> str:
    return f"{h:016x}"


def shard_hashes(shard: ShardData) -> dict[str, set[int]]:
    """group → the phashes of its episodes' screenshots (steps and final screens)."""
    group_of = {e["episode_id"]: e["group_id"] for e in shard.episodes}
    seen: dict[bytes, int] = {}  # identical screenshots are hashed once
    out: dict[str, set[int]] = defaultdict(set)

    def add(group: str, image: dict[str, object] | None) -> None:
        data = image.get("bytes") if image else None
        if isinstance(data, bytes) and data:
            if data not in seen:
                seen[data] = phash(data)
            out[group].add(seen[data])

    for step in shard.steps:
        if step["episode_id"] in group_of:
            add(group_of[step["episode_id"]], step.get("screenshot"))
    for e in shard.episodes:
        add(e["group_id"], e.get("final_screenshot"))
    return out


def links(shard: ShardData, scope: ScopeSetting = "site") -> ShardLinks:
    """What the shard's groups are tied to, under the run's `run.scope`."""
    found: dict[str, set[str]] = defaultdict(set)
    for e in shard.episodes:
        found[e["group_id"]] |= places(e, scope)
    groups = sorted({e["group_id"] for e in shard.episodes})
    return ShardLinks(groups, dict(found), shard_hashes(shard))


def plan(pending: Iterable[ShardLinks], state: SplitState) -> Plan:
    """The side of every group of the pending shards (module docstring)."""
    pending = list(pending)
    groups = sorted({g for p in pending for g in p.groups})
    if state.share == 0:
        return Plan(sides=dict.fromkeys(groups, TRAIN))
    written = NearIndex()
    for key in state.hashes:
        written.add(int(key, 16))
    result = Plan()
    free: list[list[str]] = []
    fixed = {s: n for s, n in state.counts().items()}
    for cluster in sorted(c for c in _join(pending, groups).clusters() if c[0].startswith("g:")):
        members = [k[2:] for k in cluster if k.startswith("g:")]
        before = _sides_before(cluster, state, written)
        if not before:
            free.append(members)
            continue
        side = next(iter(before)) if len(before) == 1 else TRAIN
        if len(before) > 1:  # it bridges clusters already written on both sides
            result.conflicts += [g for g in members if g not in state.conflicts]
        new = [g for g in members if g not in state.groups]
        fixed[side] += len(new)
        result.sides.update(dict.fromkeys(members, side))
    free.sort(key=lambda m: rank(m[0]))
    chosen = choose([len(m) for m in free], state.share, fixed[TRAIN], fixed[VALIDATION])
    for i, members in enumerate(free):
        side = VALIDATION if i in chosen else TRAIN
        result.sides.update(dict.fromkeys(members, side))
        result.clusters[side] += 1
    return result


def record(state: SplitState, shard: ShardLinks, result: Plan) -> SplitState:
    """The state after a shard's rows are written on the sides `result` gave them."""
    sides = {g: result.sides[g] for g in shard.groups}
    sites = {p: sides[g] for g, found in shard.places.items() for p in found if g in sides}
    hashes = {_hex(h): sides[g] for g, found in shard.hashes.items() for h in found if g in sides}
    conflicts = [g for g in result.conflicts if g in sides and g not in state.conflicts]
    return state.model_copy(
        update={
            "groups": {**state.groups, **sides},
            "sites": {**sites, **state.sites},  # what is written keeps its side
            "hashes": {**hashes, **state.hashes},
            "conflicts": (*state.conflicts, *conflicts),
        }
    )


def with_clusters(state: SplitState, result: Plan) -> SplitState:
    """The state with the clusters an export chose counted (once per export, before its first
    shard is recorded)."""
    counts = {s: state.clusters.get(s, 0) + result.clusters[s] for s in SPLITS}
    return state.model_copy(update={"clusters": counts})


def assign(
    shard: ShardData, state: SplitState, scope: ScopeSetting = "site"
) -> tuple[dict[str, Split], SplitState]:
    """One shard exported alone: each group's side, and the state with them recorded."""
    tied = links(shard, scope)
    result = plan([tied], state)
    return {g: result.sides[g] for g in tied.groups}, record(
        with_clusters(state, result), tied, result
    )


def _sides_before(cluster: list[str], state: SplitState, written: NearIndex) -> set[Split]:
    """The sides already written that a cluster reaches: its groups (a redone shard), its
    places, screenshots near its own."""
    before: set[Split] = set()
    for key in cluster:
        kind, name = key[:2], key[2:]
        if kind == "g:" and name in state.groups:
            before.add(state.groups[name])
        elif kind == "s:" and name in state.sites:
            before.add(state.sites[name])
        elif kind == "h:":
            before.update(state.hashes[_hex(c)] for c in written.near(int(name, 16)))
    return before


def _join(pending: list[ShardLinks], groups: list[str]) -> _Sets:
    """The union-find of the pending shards' groups, their places and their screenshots'
    hashes."""
    sets = _Sets()
    for g in groups:
        sets.find(f"g:{g}")
    near = NearIndex()
    for shard in pending:
        for group, found in sorted(shard.places.items()):
            for place in sorted(found):
                sets.union(f"g:{group}", f"s:{place}")
        for group, hashes in sorted(shard.hashes.items()):
            for h in sorted(hashes):
                sets.union(f"g:{group}", f"h:{_hex(h)}")
                for other in near.near(h):
                    sets.union(f"h:{_hex(h)}", f"h:{_hex(other)}")
                near.add(h)
    return sets
