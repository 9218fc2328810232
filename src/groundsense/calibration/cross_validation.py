"""`groundsense fit`'s check before it writes a fit: source-grouped cross-validation of the fit
against the training-free score on the same sentences, with paired intervals over sources.

Both sides are judged on the same sentences. The fitted side's weights and both sides'
thresholds (each at its best F1) come from the training answers only; the training-free side
is a fixed score (the default score as `detect` computes it), so it learns nothing from the
labels but its threshold. The cross-validation takes what each side scores as a function of the
training rows (:data:`Sides`), so that `fit --fuse` runs it on a fused cascade's fit, whose
training-free side (the ranks' average) takes its references from the training rows too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from sklearn.metrics import roc_auc_score

from ..errors import InputError
from .calibration import LOGISTIC_SIGNALS, logistic_score
from .fitting import fit_weights
from .fusion import RankFusion
from .resampling import group_aucs, group_draws, interval_text, paired_f1, percentile_interval
from .thresholds import best_f1_threshold

FOLDS = 5
SIDES = ("fitted", "default")

# What each side scores, given the training rows: side (:data:`SIDES`) -> the score of every row.
Sides = Callable[[np.ndarray], dict[str, np.ndarray]]


@dataclass
class HeldOut:
    """Sentences judged by both sides, each by a fit that never saw them: labels, groups,
    scores and flags per side (:data:`SIDES`)."""

    labels: np.ndarray
    groups: np.ndarray
    scores: dict[str, np.ndarray]
    flags: dict[str, np.ndarray]


def _take(features: Mapping[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
    return {name: np.asarray(values)[rows] for name, values in features.items()}


def logistic_sides(features: Mapping[str, np.ndarray], labels: np.ndarray, default: np.ndarray,
                   names: Sequence[str] = LOGISTIC_SIGNALS) -> Sides:
    """The detector's sides: the logistic fit over ``names`` on the training rows' ``features``,
    against the fixed ``default`` score."""
    def sides(train: np.ndarray) -> dict[str, np.ndarray]:
        weights = fit_weights(_take(features, train), labels[train], names)
        return {"fitted": logistic_score(weights, dict(features)), "default": np.asarray(default, float)}

    return sides


def fusion_sides(fusion: RankFusion, values: Mapping[str, np.ndarray], labels: np.ndarray) -> Sides:
    """A fused cascade's sides (`fit --fuse`), over each signal's ``values``: the logistic fit
    over the ranks (:meth:`RankFusion.weighted`) against the ranks' plain average, both ranked
    against references taken from the training rows (``fusion``'s weights are not used)."""
    unweighted = replace(fusion, weights=None)

    def sides(train: np.ndarray) -> dict[str, np.ndarray]:
        trained = _take(values, train)
        average = unweighted.with_references(trained)
        return {"fitted": average.weighted(trained, labels[train]).score(values), "default": average.score(values)}

    return sides


def score_fold(sides: Sides, labels: np.ndarray, train: np.ndarray,
          test: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Fit on the ``train`` rows and judge the ``test`` rows: each side's scores and its flags
    at the best-F1 threshold on the training rows."""
    scores, flags = {}, {}
    for side, score in sides(train).items():
        threshold = best_f1_threshold(score[train], labels[train])
        scores[side], flags[side] = score[test], score[test] >= threshold
    return scores, flags


def check_sources(n_sources: int, folds: int = FOLDS) -> None:
    """Refuse fewer sources than ``folds``: grouped cross-validation puts each in one fold."""
    if n_sources < folds:
        raise InputError(f"{folds}-fold cross-validation needs at least {folds} sources (rows without a 'source' "
                         f"are one each), not {n_sources}: label more answers")


def cross_validate(labels: np.ndarray, groups: np.ndarray, sides: Sides, folds: int = FOLDS) -> HeldOut:
    """Out-of-fold judgements of every sentence (all with every input of ``sides`` finite) by
    grouped ``folds``-fold cross-validation: a group (a source) lies wholly in one fold."""
    from sklearn.model_selection import GroupKFold

    labels, groups = np.asarray(labels, dtype=int), np.asarray(groups)
    check_sources(len(set(groups)), folds)
    scores = {side: np.zeros(len(labels)) for side in SIDES}
    flags = {side: np.zeros(len(labels), dtype=bool) for side in SIDES}
    for train, test in GroupKFold(folds).split(labels, labels, groups):
        if labels[train].min() == labels[train].max():
            raise InputError("a cross-validation fold's training answers hold only supported or only unsupported "
                             "sentences: label more answers, or more varied ones")
        fold_scores, fold_flags = score_fold(sides, labels, train, test)
        for side in SIDES:
            scores[side][test], flags[side][test] = fold_scores[side], fold_flags[side]
    return HeldOut(labels, groups, scores, flags)


@dataclass
class Comparison:
    """Each side's span AUC and F1, and fitted minus default, as (value, lo, hi) with 95%
    intervals from a paired bootstrap over groups."""

    auc: dict[str, tuple[float, float, float]]
    f1: dict[str, tuple[float, float, float]]
    sentences: int
    unsupported: int
    groups: int

    @property
    def better(self) -> bool:
        """The rule for writing the fit: the AUC difference's interval lies above 0."""
        return self.auc["fitted − default"][1] > 0

    def cells(self) -> dict[str, dict[str, str]]:
        """Per row (each side, then fitted − default): its span AUC and F1 as ``value [lo, hi]``."""
        return {row: {"span AUC": interval_text(*self.auc[row], sign="+" if "−" in row else ""),
                      "F1": interval_text(*self.f1[row], sign="+" if "−" in row else "")} for row in self.auc}

    def markdown(self) -> str:
        """:meth:`cells` as a Markdown table."""
        rows = [f"| {row} | {cell['span AUC']} | {cell['F1']} |" for row, cell in self.cells().items()]
        return "\n".join(["|  | span AUC | F1 |", "|---|---|---|", *rows])

    def record(self) -> dict:
        """What the written file keeps (``made_with.cross_validation``)."""
        return {"folds": FOLDS, "sentences": self.sentences, "unsupported": self.unsupported, "groups": self.groups,
                "auc": {k: [round(x, 4) for x in v] for k, v in self.auc.items()},
                "f1": {k: [round(x, 4) for x in v] for k, v in self.f1.items()}}


def compare(held: HeldOut, n_resamples: int = 2000, seed: int = 0) -> Comparison:
    """:class:`Comparison` of the out-of-fold judgements, resampling whole groups: each side's
    AUC and F1 and their paired differences, over the same resamples."""
    draws, group_index = group_draws(held.groups, n_resamples, seed)
    point = {side: float(roc_auc_score(held.labels, held.scores[side])) for side in SIDES}
    resampled = {side: group_aucs(held.labels, held.scores[side], group_index, draws) for side in SIDES}
    auc = {side: (point[side], *percentile_interval(resampled[side])) for side in SIDES}
    auc["fitted − default"] = (point["fitted"] - point["default"],
                               *percentile_interval(resampled["fitted"] - resampled["default"]))
    fitted, default, f1_difference = paired_f1(held.labels, held.flags["fitted"], held.flags["default"],
                                               held.groups, n_resamples, seed)
    f1s = {"fitted": fitted, "default": default, "fitted − default": f1_difference}
    y = held.labels.astype(bool)
    return Comparison({k: (float(a), float(b), float(c)) for k, (a, b, c) in auc.items()}, f1s, len(y), int(y.sum()),
                      len(set(held.groups)))
