"""Source-level paired bootstrap of ROC AUCs, vectorised over resamples.

Resampling sources with replacement is the same as weighting every row by how many times its
source was drawn, so each resample's AUC is a weighted Mann-Whitney statistic. Scores are
sorted once; :func:`weighted_auc` then evaluates all resamples together with cumulative sums
over rows, and :func:`group_aucs` (what :func:`source_bootstrap` uses) with a product over the
groups x groups table of correctly ordered pairs, which is faster when rows share sources or
when few rows are positive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

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


@dataclass
class BootstrapResult:
    """Full-sample AUCs (the point estimates) and per-resample AUCs of several methods."""

    point: dict[str, float]
    resamples: pd.DataFrame  # one column per method, one row per resample
    level: float = 0.95

    def _bounds(self, values: np.ndarray) -> tuple[float, float]:
        tail = 100 * (1 - self.level) / 2
        lo, hi = np.nanpercentile(values, [tail, 100 - tail])
        return float(lo), float(hi)

    def intervals(self) -> pd.DataFrame:
        """Per method: ``auc`` (full sample), ``lo``, ``hi`` (percentile interval)."""
        rows = {m: (self.point[m], *self._bounds(self.resamples[m].to_numpy())) for m in self.point}
        return pd.DataFrame.from_dict(rows, orient="index", columns=["auc", "lo", "hi"])

    def difference(self, a: str, b: str) -> dict[str, float | bool]:
        """Paired AUC(a) - AUC(b): full-sample difference, interval, and whether it excludes 0."""
        lo, hi = self._bounds((self.resamples[a] - self.resamples[b]).to_numpy())
        return {"diff": self.point[a] - self.point[b], "lo": lo, "hi": hi, "significant": lo > 0 or hi < 0}

    def differences(self, baseline: str) -> pd.DataFrame:
        """Every other method against ``baseline``."""
        rows = {m: self.difference(m, baseline) for m in self.point if m != baseline}
        return pd.DataFrame.from_dict(rows, orient="index")


def source_bootstrap(
    y: np.ndarray,
    scores: Mapping[str, np.ndarray],
    groups: np.ndarray,
    n_resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap over ``groups`` (source ids): every method is scored on the same resamples."""
    y = np.asarray(y)
    draws, group_index = group_draws(groups, n_resamples, seed)
    point = {name: float(roc_auc_score(y, s)) for name, s in scores.items()}
    resamples = pd.DataFrame({name: group_aucs(y, s, group_index, draws) for name, s in scores.items()})
    return BootstrapResult(point, resamples, level)
