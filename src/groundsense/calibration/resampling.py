"""Resampling whole groups (sources) with replacement, vectorised over resamples: ROC AUCs
and flag metrics with percentile intervals. `groundsense fit`'s check and the evaluation's
reports both read them.

Resampling sources with replacement is the same as weighting every row by how many times its
source was drawn, so each resample's AUC is a weighted Mann-Whitney statistic. Scores are
sorted once; :func:`weighted_auc` then evaluates all resamples together with cumulative sums
over rows, and :func:`group_aucs` with a product over the groups x groups table of correctly
ordered pairs, which is faster when rows share sources or when few rows are positive.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

_CHUNK = 256  # resamples evaluated at once, to bound memory at ~CHUNK x rows floats


def weighted_auc(y: np.ndarray, score: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """ROC AUC of ``score`` for labels ``y`` under each row of ``weights`` (shape resamples x rows).

    Ties count one half, as in :func:`sklearn.metrics.roc_auc_score` with ``sample_weight``.
    A resample without both classes gets NaN.
    """
    y = np.asarray(y).astype(bool)
    score = np.asarray(score, dtype=float)
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    order = np.argsort(score, kind="mergesort")
    sorted_scores = score[order]
    tie_starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    pos = np.where(y[order], weights[:, order], 0.0)
    neg = weights[:, order] - pos
    pos_per_tie = np.add.reduceat(pos, tie_starts, axis=1)
    neg_per_tie = np.add.reduceat(neg, tie_starts, axis=1)
    neg_below = np.cumsum(neg_per_tie, axis=1) - neg_per_tie
    wins = (pos_per_tie * (neg_below + 0.5 * neg_per_tie)).sum(axis=1)
    total = pos_per_tie.sum(axis=1) * neg_per_tie.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, wins / total, np.nan)


def resample_aucs(y: np.ndarray, score: np.ndarray, row_counts: np.ndarray) -> np.ndarray:
    """AUC per resample, ``row_counts`` (resamples x rows) giving each row's multiplicity."""
    return np.concatenate(
        [weighted_auc(y, score, row_counts[i : i + _CHUNK]) for i in range(0, len(row_counts), _CHUNK)]
    )


def group_draws(groups: np.ndarray, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each resample's count of every distinct group (resamples x groups), drawn with
    replacement, and each row's group index."""
    _, group_index = np.unique(np.asarray(groups), return_inverse=True)
    n_groups = int(group_index.max()) + 1
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_resamples), group_index


def group_aucs(y: np.ndarray, score: np.ndarray, group_index: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """ROC AUC per resample of whole groups: ``draws`` (resamples x groups) counts each group,
    ``group_index`` gives each row's group.

    With ``pairs[g, h]`` the (unsupported row of g, grounded row of h) pairs the score orders
    right (ties count one half), a resample's AUC is w'·pairs·w / ((w·P)(w·N)), P and N each
    group's positives and negatives. Only groups with a positive row have a row of ``pairs`` and
    only groups with a negative one a column, and the negatives are counted only at the
    positives' score levels, so the cost grows with groups and positives, not rows. Every term is
    a multiple of one half, so the sums are exact and the result equals :func:`weighted_auc` on
    the row counts bit for bit.
    """
    y = np.asarray(y).astype(bool)
    score = np.asarray(score, dtype=float)
    group_index = np.asarray(group_index)
    n_groups = draws.shape[1]
    levels, positive_level = np.unique(score[y], return_inverse=True)
    negative_score, negative_group = score[~y], group_index[~y]
    at_or_below = np.searchsorted(levels, negative_score, side="right")  # positive levels <= each negative
    tied = np.zeros(len(negative_score), dtype=bool)
    tied[at_or_below > 0] = levels[at_or_below[at_or_below > 0] - 1] == negative_score[at_or_below > 0]
    first_above = np.bincount(at_or_below * n_groups + negative_group,
                              minlength=(len(levels) + 1) * n_groups).reshape(-1, n_groups)
    tied_at = np.bincount((at_or_below[tied] - 1) * n_groups + negative_group[tied],
                          minlength=len(levels) * n_groups).reshape(-1, n_groups)
    beaten = np.cumsum(first_above[:-1], axis=0) + 0.5 * tied_at  # per level: negatives below, ties at half
    order = np.argsort(group_index[y], kind="stable")
    positive_groups = group_index[y][order]
    starts = np.flatnonzero(np.r_[True, positive_groups[1:] != positive_groups[:-1]])
    negative_groups = np.flatnonzero(np.bincount(negative_group, minlength=n_groups))
    draws = np.asarray(draws, dtype=float)
    wins = np.zeros(len(draws))
    if len(order) and len(negative_groups):
        pairs = np.add.reduceat(beaten[positive_level[order]][:, negative_groups], starts, axis=0)
        wins = ((draws[:, positive_groups[starts]] @ pairs) * draws[:, negative_groups]).sum(axis=1)
    total = ((draws @ np.bincount(group_index[y], minlength=n_groups))
             * (draws @ np.bincount(negative_group, minlength=n_groups)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, wins / total, np.nan)


METRICS = ("precision", "recall", "f1", "flag rate")
# What flag_metrics counts with: arrays of (weighted) counts, or single counts.
Counts = TypeVar("Counts", np.ndarray, float)


def flag_metrics(tp: Counts, fp: Counts, fn: Counts, n: Counts) -> dict[str, Counts]:
    """Precision, recall, F1 and the share flagged from (weighted) counts; NaN where undefined."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"precision": tp / (tp + fp), "recall": tp / (tp + fn), "f1": 2 * tp / (2 * tp + fp + fn),
                "flag rate": (tp + fp) / n}


def group_counts(y: np.ndarray, flagged: np.ndarray, group_index: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """Per group: true positives, false positives, false negatives and items, as :func:`flag_metrics` takes
    them (summed: the whole sample's; times a resample's group counts: that resample's)."""
    y, flagged = np.asarray(y).astype(bool), np.asarray(flagged).astype(bool)
    masks = (y & flagged, ~y & flagged, y & ~flagged, np.ones_like(y))
    return [np.bincount(group_index[mask], minlength=n_groups).astype(float) for mask in masks]


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` percentile interval of ``values`` (NaN ones left out)."""
    tail = 100 * (1 - level) / 2
    lo, hi = np.nanpercentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def flag_intervals(y: np.ndarray, flagged: np.ndarray, groups: np.ndarray, n_resamples: int = 2000,
                   seed: int = 0, level: float = 0.95) -> dict[str, tuple[float, float, float]]:
    """Each metric of :func:`flag_metrics`: (full-sample value, percentile interval) over
    resamples of whole groups (sources), as the AUC bootstrap draws them."""
    draws, group_index = group_draws(groups, n_resamples, seed)
    counts = group_counts(y, flagged, group_index, draws.shape[1])
    point = flag_metrics(*(c.sum() for c in counts))
    resampled = flag_metrics(*(draws @ c for c in counts))
    return {m: (float(point[m]), *percentile_interval(resampled[m], level)) for m in METRICS}


def paired_f1(y: np.ndarray, first: np.ndarray, second: np.ndarray, groups: np.ndarray, n_resamples: int = 2000,
              seed: int = 0, level: float = 0.95) -> list[tuple[float, float, float]]:
    """F1 of the flags ``first``, of ``second``, and of first − second, on the same items: each
    (full-sample value, percentile interval) over the same resamples of whole groups."""
    draws, group_index = group_draws(groups, n_resamples, seed)
    points, resampled = [], []
    for flagged in (first, second):
        counts = group_counts(y, flagged, group_index, draws.shape[1])
        points.append(flag_metrics(*(c.sum() for c in counts))["f1"])
        resampled.append(flag_metrics(*(draws @ c for c in counts))["f1"])
    points.append(points[0] - points[1])
    resampled.append(resampled[0] - resampled[1])
    return [(float(p), *percentile_interval(r, level)) for p, r in zip(points, resampled)]


def interval_text(value: float, lo: float, hi: float, sign: str = "") -> str:
    """``value [lo, hi]`` to three decimals (``sign="+"``: with their signs), or ``—`` where
    the value is missing."""
    if value is None or np.isnan(value):
        return "—"
    return f"{value:{sign}.3f} [{lo:{sign}.3f}, {hi:{sign}.3f}]"
