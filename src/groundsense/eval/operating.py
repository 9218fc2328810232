"""The shipped flag on answers it never saw: precision, recall and F1 of a calibration's
thresholds, with source-level bootstrap intervals, per benchmark, for sentences and for whole
answers, and at the operating points a reviewer can pick instead of the default.

Sentence level counts the scored sentences (the ones a verdict exists for). Answer level is
the guardrail's block/allow decision and fails closed as ``answer.flagged`` does: an answer is
blocked when its most suspicious sentence reaches the answer threshold or when one of its
sentences could not be scored; it is unsupported when any of its sentences is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..calibration import Calibration
from .bootstrap import group_draws

METRICS = ("precision", "recall", "f1", "flag rate")


def flag_metrics(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, n: np.ndarray) -> dict[str, np.ndarray]:
    """Precision, recall, F1 and the share flagged from (weighted) counts; NaN where undefined."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"precision": tp / (tp + fp), "recall": tp / (tp + fn), "f1": 2 * tp / (2 * tp + fp + fn),
                "flag rate": (tp + fp) / n}


def flag_intervals(y: np.ndarray, flagged: np.ndarray, groups: np.ndarray, n_resamples: int = 2000,
                   seed: int = 0, level: float = 0.95) -> dict[str, tuple[float, float, float]]:
    """Each metric of :func:`flag_metrics`: (full-sample value, percentile interval) over
    resamples of whole groups (sources), as the AUC bootstrap draws them."""
    y, flagged = np.asarray(y).astype(bool), np.asarray(flagged).astype(bool)
    draws, group_index = group_draws(groups, n_resamples, seed)
    n_groups = draws.shape[1]

    def per_group(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group_index[mask], minlength=n_groups).astype(float)

    counts = [per_group(y & flagged), per_group(~y & flagged), per_group(y & ~flagged), per_group(np.ones_like(y))]
    point = flag_metrics(*(c.sum() for c in counts))
    resampled = flag_metrics(*(draws @ c for c in counts))
    tail = 100 * (1 - level) / 2
    return {m: (float(point[m]), *map(float, np.nanpercentile(resampled[m], [tail, 100 - tail]))) for m in METRICS}


@dataclass(frozen=True)
class OperatingPoint:
    """A sentence threshold and the rule that chose it on the calibration set."""

    rule: str
    threshold: float


def answer_outcomes(sentences: pd.DataFrame, scores: np.ndarray, threshold: float) -> pd.DataFrame:
    """Per answer: source, label (any unsupported sentence) and the fail-closed flag.

    ``sentences`` are every sentence that ran (scored or not), ``scores`` their suspicion
    (NaN where unscored)."""
    frame = sentences.assign(blocking=(np.nan_to_num(scores, nan=np.inf) >= threshold))
    by = frame.groupby("case_id", sort=False)
    return by.agg(source_id=("source_id", "first"), label=("label", "max"), flagged=("blocking", "max"))


def sentence_scores(calibration: Calibration, detector: str, sentences: pd.DataFrame) -> np.ndarray:
    """The detector's suspicion per sentence; NaN for a sentence that was not scored.

    Still to follow the product: an answer scored in a chunk count the calibration was not
    fitted on (``calibration.chunk_counts``) is judged by the gap and its threshold there."""
    features = {f: sentences[f].to_numpy(dtype=float) for f in ("gap", *calibration.stats)}
    scores = calibration.score(detector, features)
    return np.where(sentences["status"].to_numpy() == "scored", scores, np.nan)


def flag_table(test_sets: Mapping[str, pd.DataFrame], calibration: Calibration, detector: str,
               points: list[OperatingPoint], answer_threshold: float | None,
               n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (benchmark, level, operating point): each metric as ``value [lo, hi]``."""
    rows = []
    for name, sentences in test_sets.items():
        scores = sentence_scores(calibration, detector, sentences)
        scored = ~np.isnan(scores)
        for point in points:
            y = sentences["label"].to_numpy()[scored]
            cells = flag_intervals(y, scores[scored] >= point.threshold,
                                   sentences["source_id"].to_numpy()[scored], n_resamples, seed)
            rows.append({"benchmark": name, "level": "sentence", "operating point": point.rule,
                         "threshold": point.threshold, **_cells(cells)})
        answer_points = [OperatingPoint("answer threshold", answer_threshold)] if answer_threshold is not None else []
        for point in [OperatingPoint(f"any sentence flagged ({points[0].rule})", points[0].threshold), *answer_points]:
            answers = answer_outcomes(sentences, scores, point.threshold)
            cells = flag_intervals(answers["label"].to_numpy(), answers["flagged"].to_numpy(),
                                   answers["source_id"].to_numpy(), n_resamples, seed)
            rows.append({"benchmark": name, "level": "answer", "operating point": point.rule,
                         "threshold": point.threshold, **_cells(cells)})
    return pd.DataFrame(rows)


def _cells(intervals: Mapping[str, tuple[float, float, float]]) -> dict[str, str]:
    return {m: f"{v:.3f} [{lo:.3f}, {hi:.3f}]" for m, (v, lo, hi) in intervals.items()}
