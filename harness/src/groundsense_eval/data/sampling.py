"""Seeded, label-balanced samples of cases, spread as evenly as the data allows over tasks."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .cases import Case


def even_allocation(n: int, available: Mapping[str, int]) -> dict[str, int]:
    """Split ``n`` draws over strata as evenly as their sizes allow (water-filling).

    Strata too small for an equal share give all they have; the rest is shared by the others,
    leftover units going to strata in name order. Raises if ``n`` exceeds the total available.
    """
    if n > sum(available.values()):
        raise ValueError(f"asked for {n} but only {sum(available.values())} available")
    quota = dict.fromkeys(available, 0)
    remaining = n
    open_strata = sorted(available, key=lambda k: (available[k], k))
    while remaining and open_strata:
        share, extra = divmod(remaining, len(open_strata))
        smallest = open_strata[0]
        if available[smallest] <= share:
            quota[smallest] = available[smallest]
            remaining -= available[smallest]
            open_strata.pop(0)
            continue
        for i, name in enumerate(sorted(open_strata)):
            quota[name] = share + (i < extra)
        remaining = 0
    return quota


def balanced_sample(
    cases: Sequence[Case],
    n_unsupported: int,
    n_supported: int,
    seed: int = 0,
    stratum: Callable[[Case], str] = lambda c: c.task,
) -> list[Case]:
    """Draw ``n_unsupported`` answers with an unsupported sentence and ``n_supported`` without,
    each spread evenly over ``stratum`` (default: the task). Sorted by case id."""
    rng = np.random.default_rng(seed)
    chosen: list[Case] = []
    for want_unsupported, n in ((True, n_unsupported), (False, n_supported)):
        pools: dict[str, list[Case]] = defaultdict(list)
        for case in sorted(cases, key=lambda c: c.id):
            if case.unsupported == want_unsupported:
                pools[stratum(case)].append(case)
        quota = even_allocation(n, {k: len(v) for k, v in pools.items()})
        for name in sorted(pools):
            picks = rng.choice(len(pools[name]), size=quota[name], replace=False)
            chosen.extend(pools[name][i] for i in sorted(picks))
    return sorted(chosen, key=lambda c: c.id)


def sample_ragtruth(
    cases: Sequence[Case],
    split: str = "test",
    n_unsupported: int | None = 300,
    n_supported: int | None = 300,
    seed: int = 0,
) -> list[Case]:
    """A paper-style RAGTruth sample (drawn as section 6.1 describes, with our own seed): by
    default 300 hallucinated + 300 clean ``test`` responses over the three tasks. ``None`` counts take the whole split;
    ``split="train"`` draws a calibration sample the same way."""
    pool = [c for c in cases if c.benchmark == "ragtruth" and c.split == split]
    if n_unsupported is None or n_supported is None:
        return sorted(pool, key=lambda c: c.id)
    return balanced_sample(pool, n_unsupported, n_supported, seed)
