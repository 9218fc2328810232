"""Where to put a flag threshold, from labelled scores (higher = more suspicious, flagged when
``score >= threshold``): the best F1, the best Youden's J, a target recall or precision, and the
compact precision-recall curve a calibration file keeps so that a target can be met later
without the data. :func:`labelled_threshold` is the rule :func:`groundsense.calibration.calibration.fit_calibration`
applies at each level."""

from __future__ import annotations

import numpy as np

from ..errors import InputError

CURVE_POINTS = 200  # thresholds kept per stored precision-recall curve


def best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The ``t`` maximising F1 of flagging ``scores >= t`` against ``labels`` (the lowest
    such ``t`` on ties)."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(labels, scores)
    precision, recall = precision[:-1], recall[:-1]  # the last point has no threshold
    f1 = 2 * precision * recall / np.maximum(precision + recall, 1e-12)
    return float(thresholds[f1.argmax()])


def youden_threshold(scores: np.ndarray, labels: np.ndarray, at_most: float = np.inf) -> float:
    """The ``t <= at_most`` maximising Youden's J (recall minus false-positive rate) of
    flagging ``scores >= t`` (the highest such ``t`` on ties; ``at_most`` itself when no score
    lies at or below it). Unlike F1 it does not depend on how many of the labelled items are
    positive, and it does not collapse to "flag everything" when the ranking is weak and
    positives are common, as best F1 does on half-hallucinated answers."""
    from sklearn.metrics import roc_curve

    fpr, tpr, thresholds = roc_curve(labels, scores, drop_intermediate=False)
    allowed = thresholds <= at_most  # (the first point, threshold +inf, flags nothing)
    if not allowed.any():
        return float(at_most)
    j = (tpr - fpr)[allowed]
    return float(thresholds[allowed][j.argmax()])


def target_threshold(
    precision: np.ndarray, recall: np.ndarray, thresholds: np.ndarray, target_recall: float | None,
    target_precision: float | None,
) -> tuple[float, str]:
    """From a precision-recall curve (``thresholds`` ascending): the highest threshold whose
    recall reaches ``target_recall``, or the lowest whose precision reaches ``target_precision``,
    and the rule as text."""
    if target_recall is not None:
        return float(thresholds[np.flatnonzero(recall >= target_recall)[-1]]), f"recall >= {target_recall}"
    ok = np.flatnonzero(precision >= target_precision)
    if not len(ok):
        raise InputError(f"no threshold reached precision {target_precision} on the calibration set: ask for a lower "
                         f"one (it reached at most {float(np.max(precision)):.3f})")
    return float(thresholds[ok[0]]), f"precision >= {target_precision}"


def curve_threshold(curve: list[list[float]], target_recall: float | None, target_precision: float | None,
                    score_name: str) -> float:
    """The threshold that met ``target_recall`` or ``target_precision`` on a stored
    :func:`compact_curve`; a target it never reached is refused naming ``score_name``'s score."""
    thresholds, precision, recall = np.asarray(curve, dtype=float).T
    try:
        return target_threshold(precision, recall, thresholds, target_recall, target_precision)[0]
    except InputError as exc:
        raise InputError(f"the {score_name} score: {exc}") from None


def compact_curve(scores: np.ndarray, labels: np.ndarray, points: int = CURVE_POINTS) -> list[list[float]]:
    """``[threshold, precision, recall]`` at up to ``points`` thresholds spread evenly over the
    sorted scores (ascending), the lowest and highest included: what a calibration file keeps
    so that :meth:`groundsense.calibration.calibration.Calibration.threshold` can meet a target without the data."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(labels, scores)
    keep = np.unique(np.linspace(0, len(thresholds) - 1, points).round().astype(int))
    return [[float(thresholds[i]), round(float(precision[i]), 4), round(float(recall[i]), 4)] for i in keep]


def labelled_threshold(
    scores: np.ndarray, labels: np.ndarray, target_recall: float | None, target_precision: float | None,
    at_most: float = np.inf,
) -> tuple[float, str]:
    """A sentence threshold (``at_most`` infinite) or an answer one (``at_most``: the sentence
    threshold), and its rule."""
    from sklearn.metrics import precision_recall_curve

    if labels.min() == labels.max():
        raise InputError("labelled calibration needs both supported and unsupported sentences")
    if target_recall is None and target_precision is None:
        if at_most == np.inf:
            return best_f1_threshold(scores, labels), "best F1"
        threshold = youden_threshold(scores, labels, at_most)
        if threshold >= at_most:
            return float(at_most), "the sentence threshold (also the best at or below it by Youden's J)"
        if not _separates_better(scores, labels, threshold, at_most):
            kept, lower = (float(_youden(scores, labels, t)) for t in (at_most, threshold))
            return float(at_most), (f"the sentence threshold (Youden's J {kept:.3f}; the best lower one, "
                                    f"{threshold:.3f}, reaches {lower:.3f}: not significantly better)")
        return threshold, "Youden's J (below the sentence threshold)"
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    threshold, text = target_threshold(precision[:-1], recall[:-1], thresholds, target_recall, target_precision)
    if threshold > at_most:  # a lower threshold keeps a recall target, not a precision one
        return float(at_most), f"the sentence threshold (the answers' {text} threshold, {threshold:.3f}, is above it)"
    return threshold, text


def forced_scores(scores: np.ndarray, forced: np.ndarray) -> np.ndarray:
    """``scores``, with the ``forced`` items raised above every one of them (by 1): the score of a
    verdict that those items get whatever their score (an answer with a flagged sentence)."""
    scores = np.asarray(scores, float)
    return np.where(forced, np.nanmax(scores) + 1.0, scores)


def verdict_threshold(decided: np.ndarray, labels: np.ndarray, target_recall: float | None,
                      target_precision: float | None) -> tuple[float, str]:
    """The answer threshold of a verdict whose score is ``decided`` (:func:`forced_scores`: an
    answer with a flagged sentence above the rest), and its rule: the best Youden's J, which does
    not collapse to "flag every answer" as the best F1 does on half-unsupported answers, or the
    target recall or precision."""
    from sklearn.metrics import precision_recall_curve

    verdict = "of the verdict (a flagged sentence, or the threshold)"
    if target_recall is None and target_precision is None:
        return youden_threshold(decided, labels), f"best Youden's J {verdict}"
    precision, recall, thresholds = precision_recall_curve(labels, decided)
    threshold, text = target_threshold(precision[:-1], recall[:-1], thresholds, target_recall, target_precision)
    return threshold, f"{text} {verdict}"


def _youden(scores: np.ndarray, labels: np.ndarray, threshold: float) -> np.ndarray:
    """Youden's J of flagging ``scores >= threshold``, along the last axis (a row per resample)."""
    flagged, positive = scores >= threshold, labels.astype(bool)
    recall = (flagged & positive).sum(axis=-1) / np.maximum(positive.sum(axis=-1), 1)
    return recall - (flagged & ~positive).sum(axis=-1) / np.maximum((~positive).sum(axis=-1), 1)


def _separates_better(scores: np.ndarray, labels: np.ndarray, threshold: float, other: float,
                      n_resamples: int = 1000, seed: int = 0) -> bool:
    """Whether flagging ``scores >= threshold`` has a higher Youden's J than at ``other``, with
    the 95% bootstrap interval of the difference (items resampled) above zero. A second bar for
    answers must earn its place: one bar for both levels is simpler to act on."""
    rng, differences = np.random.default_rng(seed), []
    for size in np.diff(np.append(np.arange(0, n_resamples, 100), n_resamples)):  # 100 at a time: bounded memory
        index = rng.integers(0, len(scores), size=(size, len(scores)))
        resampled, y = scores[index], labels[index]
        both = y.min(axis=1) < y.max(axis=1)  # resamples holding both classes
        differences.append((_youden(resampled, y, threshold) - _youden(resampled, y, other))[both])
    return bool(np.quantile(np.concatenate(differences), 0.025) > 0)
