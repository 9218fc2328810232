"""A calibration fitted on a labelled feature cache (`groundsense eval calibrate`).

The cache's scored sentences, with their benchmark labels, go to :func:`fit_calibration`
as ``groundsense calibrate``'s do; the answers are the cache's cases. Nothing is re-scored,
so a refit (another rule, another target) costs seconds. Only full-mode, exact leave-one-out
sets qualify: they hold the shipped detector's features.
"""

from __future__ import annotations

from groundsense.calibration import Calibration, fit_calibration
from groundsense.features import FEATURES

from ..caches.extract import FeatureSet


def fit_from_features(features: FeatureSet, target_recall: float | None = None,
                      target_precision: float | None = None) -> Calibration:
    """The calibration of ``features``' scorer and K, fitted on its scored sentences."""
    if not (features.full_exact or features.full_exact_at("bf16")):
        raise ValueError(f"{features.benchmark}/{features.key} is not a full-mode, exact leave-one-out set in fp32 "
                         "or bf16: a calibration needs the sensitivity score's features")
    table = features.table
    config = features.config
    answers = features.sentences.groupby("case_id")
    return fit_calibration(
        {name: table[name].to_numpy(dtype=float) for name in FEATURES}, config["scorer"], config["k"],
        labels=table["label"].to_numpy(), target_recall=target_recall, target_precision=target_precision,
        answers=table["case_id"].to_numpy(),
        made_with={
            "source": f"{features.benchmark}/{features.key}", "splits": features.splits,
            "answers": int(answers.ngroups),
            "errors": int(len(features.errors)), "labelled": True,
            "chunk_counts": sorted(int(n) for n in answers["n_chunks"].first().dropna().unique()),
            "tasks": {str(task): int(n) for task, n in answers["task"].first().value_counts().sort_index().items()},
            "unsupported_answers": int(answers["label"].max().sum()),
            "leave_one_out": config.get("leave_one_out") or "exact",
        },
    )
