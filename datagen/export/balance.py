"""Which of the split's free clusters go to validation: the choice closest to the share asked.

    free clusters (sizes in task groups, in draw order) + what is written already + share
        ─► choose() ─► the indexes of the clusters for validation

A cluster goes whole to one side, so the share reached is a sum of cluster sizes: with the five
bundled sites (five clusters) and a 10% share the choice is between 0% and about 20%, and
drawing each cluster at random with probability 10% left validation empty most of the time.
Instead the choice is the set of clusters whose size brings validation closest to the share,
under two rules that come first:

- train is never empty (a run over one site is one cluster, in train);
- validation is not empty whenever there are two clusters (one written earlier counts).

Up to `EXACT` free clusters every subset is tried (ties go to the clusters first in draw
order, so the choice is fixed by the run); beyond, clusters are taken in draw order while each
brings validation closer (many small clusters, where a greedy pass lands within one cluster).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

EXACT = 12  # 4,096 subsets at most: a few ms


def choose(
    sizes: Sequence[int], share: float, written_train: int = 0, written_validation: int = 0
) -> set[int]:
    """The indexes of `sizes` (free clusters, in draw order) for validation. `written_*`: task
    groups already on each side (fixed clusters, earlier exports)."""
    if not sizes:
        return set()
    total = written_train + written_validation + sum(sizes)
    target = share * total
    need_validation = written_validation == 0 and (len(sizes) >= 2 or written_train > 0)

    def ok(chosen: Sequence[int]) -> bool:
        train = written_train + sum(sizes) - sum(sizes[i] for i in chosen)
        return train > 0 and (not need_validation or bool(chosen))

    def off(chosen: Sequence[int]) -> float:
        return abs(written_validation + sum(sizes[i] for i in chosen) - target)

    if len(sizes) <= EXACT:
        subsets = (
            c for n in range(len(sizes) + 1) for c in itertools.combinations(range(len(sizes)), n)
        )
        best = min((c for c in subsets if ok(c)), key=lambda c: (off(c), c), default=())
        return set(best)
    return _greedy(sizes, target, written_train == 0, written_validation, need_validation)


def _greedy(
    sizes: Sequence[int],
    target: float,
    train_empty: bool,
    written_validation: int,
    need_validation: bool,
) -> set[int]:
    """Clusters in draw order, each taken while it brings validation closer to `target`; then
    the rules: the smallest cluster when validation would be empty, the largest chosen dropped
    while train would be."""
    chosen: list[int] = []
    have = written_validation
    for i, size in enumerate(sizes):
        if abs(have + size - target) < abs(have - target):
            chosen.append(i)
            have += size
    if need_validation and not chosen:
        chosen.append(min(range(len(sizes)), key=lambda i: (sizes[i], i)))
    while train_empty and len(chosen) == len(sizes):  # all of them: train would be empty
        chosen.remove(max(chosen, key=lambda i: (sizes[i], i)))
    return set(chosen)
