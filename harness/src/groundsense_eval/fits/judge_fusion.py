"""The shipped fusion of candidate J: the fused score's references and thresholds, fitted on
the RAGTruth training answers the shipped calibration is fitted on (`groundsense eval fusion
--fit-fusion FILE --train-cache … --train-judges …`, what ships), or on the three benchmarks'
judged dev partitions pooled (`--judges … --fit-fusion FILE`: the rows
:func:`~groundsense_eval.reports.fusion_judge.judge_domains` gives as ``dev``; no test row is
read). A file for the product, like :mod:`.calibration`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from groundsense.calibration import (
    JUDGE_FUSION_SIGNALS,
    Calibration,
    RankFusion,
    best_f1_threshold,
    reference_sample,
    threshold_quality,
    top_two_mean,
)

from ..reports.fusion import Domain
from ..reports.fusion_judge import FROZEN_J, JUDGE, SETS, judge_spec


def fit_judge_fusion(domains: Sequence[Domain], calibration: Calibration, command: str) -> RankFusion:
    """The frozen candidate's :class:`RankFusion` fitted on the benchmarks' judged dev sentences, pooled."""
    dev = pd.concat([d.dev.assign(answer=d.name + "/" + d.dev["case_id"].astype(str)) for d in domains],
                    ignore_index=True)
    return fit_fusion_on(dev, calibration, command, "the pooled judged dev partitions",
                         {d.name: {"answers": int(d.dev["case_id"].nunique()), "sentences": len(d.dev)}
                          for d in domains})


def fit_training_fusion(training: pd.DataFrame, calibration: Calibration, command: str) -> RankFusion:
    """The frozen candidate's :class:`RankFusion` fitted on the shipped calibration's RAGTruth
    training answers that the judge scored (``training``: :func:`.reports.fusion.fusion_table`
    rows with the judge's column), as the detector's calibration is."""
    return fit_fusion_on(training.assign(answer=training["case_id"].astype(str)), calibration, command,
                         "the shipped calibration's RAGTruth training answers",
                         {"ragtruth": {"answers": int(training["case_id"].nunique()), "sentences": len(training)}})


def fit_fusion_on(rows: pd.DataFrame, calibration: Calibration, command: str, fitted_on: str, data: dict
                  ) -> RankFusion:
    """The frozen candidate's fusion fitted on ``rows`` (its five signals' columns, ``label`` and
    ``answer``): every signal's reference from their values, the sentence threshold at their best
    F1 and the answer threshold at the best F1 of the answers' mean of their top two sentences
    (label: any sentence unsupported). ``fitted_on`` and ``data`` say what the rows are."""
    if calibration.weights:
        raise ValueError("the fusion's sensitivity is the z-sum of a calibration's statistics, not a fitted logistic")
    signals = ["sensitivity", *SETS[FROZEN_J["signals"]]]
    if [("judge" if s == JUDGE else s) for s in signals] != list(JUDGE_FUSION_SIGNALS):
        raise ValueError(f"the frozen candidate fuses {signals}, not the product's {JUDGE_FUSION_SIGNALS}")
    values = {("judge" if s == JUDGE else s): rows[s].to_numpy(float) for s in signals}
    references = {name: reference_sample(values[name]) for name in JUDGE_FUSION_SIGNALS}
    unfitted = RankFusion(judge_spec(), calibration.scorer, dict(calibration.stats), references, 0.0, 0.0)
    fused, labels = unfitted.score(values), rows["label"].to_numpy(int)
    answers = pd.DataFrame({"answer": rows["answer"], "fused": fused, "label": labels}).groupby("answer", sort=False)
    answer_scores = answers["fused"].apply(lambda s: top_two_mean(s.to_numpy())).to_numpy()
    answer_labels = answers["label"].max().to_numpy()
    threshold, answer_threshold = best_f1_threshold(fused, labels), best_f1_threshold(answer_scores, answer_labels)
    made_with = {
        "command": command,
        "rule": f"{FROZEN_J['rule']} of {', '.join(JUDGE_FUSION_SIGNALS)} (docs/detector-selection.md, candidate J); "
                f"answer: {FROZEN_J['aggregation']} sentences",
        "fitted_on": fitted_on, "data": data, "n_answers": int(answers.ngroups), "n_sentences": len(rows),
        "references": f"the values of the sentences of {fitted_on}, at most {len(references['sensitivity'])} "
                      "evenly spaced order statistics each",
        "sensitivity": f"the z-sum of calibration {calibration.scorer} k{calibration.k}'s statistics",
        "threshold_rule": {"sentence": f"best F1 on the sentences of {fitted_on}",
                           "answer": f"best F1 of each answer's mean of its top two sentences, on {fitted_on}"},
        "on_labelled_set": {"sentence": threshold_quality(fused, labels, threshold),
                            "answer": threshold_quality(answer_scores, answer_labels, answer_threshold)},
    }
    return RankFusion(unfitted.verifier, unfitted.scorer, unfitted.sensitivity_stats, references, threshold,
                      answer_threshold, made_with)
