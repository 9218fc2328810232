"""The trained verifier's sentence scores as its protocol uses them (docs/detector-selection.md, "A
trained verifier"): a fifth signal of F's rank average, the verifier of a cascade at the shipped
escalation, and alone, flags at a threshold judged by balanced accuracy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from groundsense.calibration import RankFusion, group_counts, group_draws, percentile_interval
from groundsense.config import DEFAULTS
from groundsense.verification import escalation_mask

from ..statistics.escalation import cascade_scores


def partnered(sentences: pd.DataFrame, fusions: Mapping[str, RankFusion], verifier: np.ndarray,
              reference: list[float]) -> np.ndarray:
    """F's rank average with the verifier's P(unsupported) as one more signal (the fused cascade's
    ``judge``), ranked against ``reference``: by full mode's fusion where ``sentences["served"]``,
    else two-pass mode's, as F is (:func:`.default_score.product_judgements`); F's other signals
    and references unchanged."""
    scores = {}
    for mode, fusion in fusions.items():
        partner = replace(fusion, references={**fusion.references, "judge": reference})
        features = {name: sentences[name].to_numpy(float) for name in partner.inputs}
        scores[mode] = partner.score(partner.signals(features, verifier))
    return np.where(sentences["served"].to_numpy(bool), scores["full"], scores["two_pass"])


def escalated(detector: np.ndarray, verifier: np.ndarray) -> np.ndarray:
    """The ranking of a cascade escalating the detector's most suspicious share of the sentences at
    the shipped ``escalate`` (:func:`~groundsense_eval.statistics.escalation.cascade_scores`)."""
    return cascade_scores(detector, verifier, escalation_mask(detector, DEFAULTS.escalate))


def balanced_accuracy(y: np.ndarray, flagged: np.ndarray, groups: np.ndarray, n_resamples: int, seed: int
                      ) -> tuple[float, float, float]:
    """The balanced accuracy of ``flagged`` (the mean of its recall on either label), and its 95%
    percentile interval over resamples of whole ``groups`` (sources), as the AUCs' bootstrap draws them."""
    draws, group_index = group_draws(groups, n_resamples, seed)
    counts = group_counts(y, flagged, group_index, draws.shape[1])

    def value(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, n: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return (tp / (tp + fn) + (n - tp - fp - fn) / (n - tp - fn)) / 2

    point = float(value(*(np.array(c.sum()) for c in counts)))
    return point, *percentile_interval(value(*(draws @ c for c in counts)))
