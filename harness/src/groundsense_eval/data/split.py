"""Seeded source-level development/test split: every source lies wholly in one partition."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

DEV, TEST = "dev", "test"


def split_sources(
    source_ids: Iterable[str],
    dev_fraction: float = 0.6,
    seed: int = 0,
    strata: Sequence[str] | None = None,
) -> dict[str, str]:
    """Map each distinct source id to ``"dev"`` or ``"test"``.

    ``round(dev_fraction * n)`` sources of each stratum go to dev, chosen by a seeded shuffle of
    the sorted ids. ``strata`` (aligned with ``source_ids``, e.g. the task) splits each stratum
    separately; a source may belong to one stratum only.
    """
    ids = list(source_ids)
    labels = list(strata) if strata is not None else [""] * len(ids)
    if len(labels) != len(ids):
        raise ValueError("strata must align with source_ids")
    stratum_of: dict[str, str] = {}
    for source, stratum in zip(ids, labels):
        if stratum_of.setdefault(source, stratum) != stratum:
            raise ValueError(f"source {source!r} is in more than one stratum")
    rng = np.random.default_rng(seed)
    assignment: dict[str, str] = {}
    for stratum in sorted(set(stratum_of.values())):
        members = sorted(s for s, k in stratum_of.items() if k == stratum)
        order = rng.permutation(len(members))
        n_dev = round(dev_fraction * len(members))
        for rank, i in enumerate(order):
            assignment[members[i]] = DEV if rank < n_dev else TEST
    return assignment


def assign_partition(
    table: pd.DataFrame, dev_fraction: float = 0.6, seed: int = 0, stratify: str | None = "task"
) -> pd.Series:
    """Per-row ``dev``/``test`` partition for a table with a ``source_id`` column."""
    sources = table.drop_duplicates("source_id")
    strata = sources[stratify].astype(str).tolist() if stratify else None
    assignment = split_sources(sources["source_id"].tolist(), dev_fraction, seed, strata)
    return table["source_id"].map(assignment).rename("partition")
