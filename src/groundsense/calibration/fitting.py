"""A detector fitted on a team's own labels (`groundsense fit`): the L2-regularised logistic
regression of the detector-selection protocol's candidate A (C = 0.1, standardised features)
over the per-sentence values the detector computes at detect time: the scorer's features and
the lexical signals (:data:`groundsense.calibration.calibration.LOGISTIC_SIGNALS`; the scorer's
:data:`~groundsense.calibration.calibration.LOGISTIC_FEATURES` alone where word matching means
nothing), kept in a calibration file as a few weights a reader can inspect
(``Calibration.weights``); :func:`fit_logistic`, the regression itself, also weighs a fused cascade's ranked signals
(:meth:`groundsense.calibration.fusion.RankFusion.weighted`). Whether it does better than the
training-free score, `fit` checks before it writes it (:mod:`groundsense.calibration.cross_validation`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from .calibration import LOGISTIC_SIGNALS, Calibration, complete_rows, fit_calibration, logistic_input

REGULARISATION = 0.1  # C of the logistic regression, as in the detector-selection protocol


def fit_weights(features: dict[str, np.ndarray], labels: np.ndarray, names: Sequence[str] = LOGISTIC_SIGNALS
                ) -> dict:
    """The logistic weights (:func:`groundsense.calibration.calibration.logistic_score`) fitted on
    sentences (arrays over sentences, every one with all ``names`` finite): :func:`fit_logistic`
    over their :func:`~groundsense.calibration.calibration.logistic_input`."""
    columns = np.column_stack([logistic_input(features, name) for name in names])
    return fit_logistic(columns, labels, names)


def fit_logistic(columns: np.ndarray, labels: np.ndarray, names: Sequence[str]) -> dict:
    """The logistic regression of ``labels`` on ``columns`` (a row per item, a column per name
    of ``names``, all finite): each column standardised by its mean and population standard
    deviation (1 where it is constant), then an L2 logistic regression at C =
    :data:`REGULARISATION`. The ``intercept``, the ``coefficients`` (name -> weight of its
    z-score) and the ``stats`` (name -> [mean, deviation])."""
    from sklearn.linear_model import LogisticRegression

    labels = np.asarray(labels, dtype=int)
    if labels.min() == labels.max():
        raise InputError("a fit needs both supported and unsupported sentences")
    means, sds = columns.mean(axis=0), columns.std(axis=0)
    sds[sds == 0] = 1.0
    # (Newton-Cholesky: the optimum lbfgs approaches, reached in a few exact steps, without
    # lbfgs's many small BLAS calls that crawl on a busy machine)
    model = LogisticRegression(C=REGULARISATION, solver="newton-cholesky", max_iter=200)
    model.fit((columns - means) / sds, labels)
    return {
        "intercept": float(model.intercept_[0]),
        "coefficients": {name: float(c) for name, c in zip(names, model.coef_[0])},
        "stats": {name: [float(m), float(s)] for name, m, s in zip(names, means, sds)},
    }


def fitted_rows(features: dict[str, np.ndarray], names: Sequence[str] = LOGISTIC_SIGNALS) -> np.ndarray:
    """Which sentences a fit over ``names`` can use: those with every one finite."""
    return complete_rows(features, tuple(names))


def fit_detector(
    features: dict[str, np.ndarray], labels: np.ndarray, answers: np.ndarray, scorer: str, k: int,
    target_recall: float | None = None, target_precision: float | None = None, made_with: dict | None = None,
    names: Sequence[str] = LOGISTIC_SIGNALS,
) -> Calibration:
    """A calibration whose ``sensitivity`` score is the logistic fit over ``names`` on every
    labelled sentence, with thresholds by :func:`groundsense.calibration.calibration.fit_calibration`'s rules."""
    rows = fitted_rows(features, names)
    weights = fit_weights({f: np.asarray(v, float)[rows] for f, v in features.items()}, np.asarray(labels)[rows],
                          names)
    return fit_calibration(features, scorer, k, labels=labels, target_recall=target_recall,
                           target_precision=target_precision, made_with=made_with, answers=answers, weights=weights)
