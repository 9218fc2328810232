"""The lexical fusion (candidate F, issue #52) as it is to ship: its references, the map of its
answer rule (the length-aware noisy-OR that docs/results/aggregation-F.md chose) and its
thresholds, fitted on the RAGTruth training answers the shipped calibration of the same
precision is fitted on (`groundsense eval fusion --fit-fusion FILE --train-cache DIR
[--precision bf16] [--two-pass]`). A file for the product, like :mod:`.judge_fusion`'s.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from groundsense.calibration import LENGTH_AWARE_NOISY_OR, LEXICAL_FUSION_SIGNALS, Calibration, RankFusion

from ..reports.aggregation import probability_map


def fit_lexical_fusion(training: pd.DataFrame, calibration: Calibration, mode: str, precision: str,
                       command: str) -> RankFusion:
    """The lexical fusion of ``mode`` (``full``: ``sensitivity`` under ``calibration``'s
    statistics; ``two_pass``: the gap) fitted on ``training`` (:func:`.reports.fusion.fusion_table`
    rows of the training answers): each signal's reference from their values, the logistic map
    of a sentence's P(unsupported) from their fused scores and labels, and the sentence and
    answer thresholds at the best F1."""
    if calibration.weights:
        raise ValueError("the fusion's sensitivity is the z-sum of a calibration's statistics, not a fitted logistic")
    names = LEXICAL_FUSION_SIGNALS[mode]
    stats = dict(calibration.stats) if mode == "full" else {}
    unfitted = RankFusion(None, calibration.scorer, stats, dict.fromkeys(names, []), 0.0, 0.0)
    values = unfitted.signals({name: training[name].to_numpy(float) for name in unfitted.inputs})
    labels, answers = training["label"].to_numpy(int), training["case_id"].astype(str).to_numpy()
    referenced = unfitted.with_references(values)
    scores = referenced.score(values)
    scored = np.isfinite(scores)
    intercept, coefficient = probability_map(scores[scored], labels[scored])
    answer_rule = {"aggregation": LENGTH_AWARE_NOISY_OR, "intercept": intercept, "coefficient": coefficient}
    fitted = replace(referenced, answer_rule=answer_rule).thresholded(values, labels, answers)
    fitted_on = f"the shipped {precision} calibration's RAGTruth training answers"
    made_with = {
        "command": command,
        "rule": f"rank average of {', '.join(names)} (docs/detector-selection.md, candidate F; {mode} mode); "
                f"answer: the {LENGTH_AWARE_NOISY_OR} of its sentences (docs/results/aggregation-F.md)",
        "fitted_on": fitted_on, "precision": precision,
        "references": f"the values of the sentences of {fitted_on}, at most {len(fitted.references[names[0]])} "
                      "evenly spaced order statistics each",
        **({"sensitivity": f"the z-sum of calibration {calibration.scorer} k{calibration.k}'s statistics"}
           if mode == "full" else {}),
        "answer_rule": "P(unsupported) of a sentence: a logistic regression of the labels on the fused scores of "
                       f"the sentences of {fitted_on}",
        **fitted.made_with,
    }
    return replace(fitted, made_with=made_with)
