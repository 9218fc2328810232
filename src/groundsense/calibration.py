"""Detector scores and their calibration: standardisation statistics and flag thresholds.

Two detectors, both "higher = more suspicious":

- ``gap``: ``-gap``. Training-free, needs only two passes; direction fixed in advance.
- ``sensitivity``: ``-(z(gap) + z(jsd_noctx) + z(drop_max) + z(jsd_loo_max))`` with the
  means and standard deviations of a calibration set, never of the answer being scored.

A calibration file holds those statistics and one flag threshold per detector. It is
fitted by ``groundsense calibrate`` on a set of answers: with sentence labels the
threshold meets a target recall or precision (default: the best F1); without labels it
flags a chosen share of sentences.
"""

from __future__ import annotations

import json
from fnmatch import fnmatch
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from .errors import InputError

STANDARDISED = ("gap", "jsd_noctx", "drop_max", "jsd_loo_max")
DETECTORS = ("sensitivity", "gap")


def gap_score(features: dict[str, np.ndarray]) -> np.ndarray:
    return -np.asarray(features["gap"], dtype=float)


def sensitivity_score(stats: dict[str, tuple[float, float]], features: dict[str, np.ndarray]) -> np.ndarray:
    """-(sum of the features' z-scores under ``stats``, feature -> (mean, standard deviation))."""
    total = sum((np.asarray(features[f], float) - m) / s for f, (m, s) in stats.items())
    return -total


def complete_rows(features: dict[str, np.ndarray]) -> np.ndarray:
    """Which sentences have all the :data:`STANDARDISED` features finite."""
    return np.all([np.isfinite(np.asarray(features[f], float)) for f in STANDARDISED], axis=0)


def standardisation(features: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """Mean and population standard deviation of each :data:`STANDARDISED` feature over the
    :func:`complete_rows` (a constant feature's deviation is taken as 1)."""
    rows = complete_rows(features)
    stats = {}
    for name in STANDARDISED:
        values = np.asarray(features[name], float)[rows]
        stats[name] = (float(values.mean()), float(values.std() or 1.0))
    return stats


def best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The ``t`` maximising F1 of flagging ``scores >= t`` against ``labels`` (the lowest
    such ``t`` on ties)."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(labels, scores)
    precision, recall = precision[:-1], recall[:-1]  # the last point has no threshold
    f1 = 2 * precision * recall / np.maximum(precision + recall, 1e-12)
    return float(thresholds[f1.argmax()])


@dataclass
class Calibration:
    scorer: str
    k: int
    stats: dict[str, tuple[float, float]]  # feature -> (mean, standard deviation)
    thresholds: dict[str, float]  # detector -> flag when score >= threshold
    made_with: dict = field(default_factory=dict)  # provenance: data, sizes, rule, metrics

    @property
    def leave_one_out(self) -> str:
        """How the leave-one-out features it was fitted on were computed (older files: exact)."""
        return self.made_with.get("leave_one_out", "exact")

    @property
    def chunk_counts(self) -> list[int]:
        """How many chunks the answers it was fitted on were scored in (older files: its K)."""
        return self.made_with.get("chunk_counts", [self.k])

    def score(self, detector: str, features: dict[str, np.ndarray]) -> np.ndarray:
        if detector == "gap":
            return gap_score(features)
        return sensitivity_score(self.stats, features)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "Calibration":
        try:
            data = json.loads(Path(path).read_text())
            data["stats"] = {f: tuple(v) for f, v in data["stats"].items()}
            return cls(**data)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise InputError(f"cannot read calibration file {path}: {exc}") from exc


def shipped_calibration(scorer: str, chunks: int | None) -> Calibration | None:
    """The calibration shipped with the package for this scorer that was fitted on answers
    scored in ``chunks`` chunks (any one if None)."""
    folder = resources.files("groundsense") / "calibrations"
    files = sorted(p for p in folder.iterdir() if fnmatch(p.name, f"{scorer}-k*.json")) if folder.is_dir() else []
    for calibration in map(Calibration.load, files):
        if chunks is None or chunks in calibration.chunk_counts:
            return calibration
    return None


def fit_calibration(
    features: dict[str, np.ndarray],
    scorer: str,
    k: int,
    labels: np.ndarray | None = None,
    target_recall: float | None = None,
    target_precision: float | None = None,
    flag_rate: float = 0.1,
    made_with: dict | None = None,
) -> Calibration:
    """Fit statistics and thresholds on sentence features (arrays over sentences)."""
    rows = complete_rows(features)
    if rows.sum() < 2:
        raise InputError("calibration needs at least two scored sentences with all four features")
    calibration = Calibration(scorer, k, standardisation(features), {}, dict(made_with or {}))
    rule, quality = {}, {}
    for detector in DETECTORS:
        scores = calibration.score(detector, {f: np.asarray(v, float)[rows] for f, v in features.items()})
        if labels is None:
            threshold, rule[detector] = float(np.quantile(scores, 1 - flag_rate)), f"flag rate {flag_rate}"
            quality[detector] = {"flag_rate": float((scores >= threshold).mean())}
        else:
            y = np.asarray(labels)[rows]
            threshold, rule[detector] = _labelled_threshold(scores, y, target_recall, target_precision)
            quality[detector] = _quality(scores, y, threshold)
        calibration.thresholds[detector] = threshold
    calibration.made_with.update(n_sentences=int(rows.sum()), threshold_rule=rule, on_calibration_set=quality)
    return calibration


def _quality(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """How the threshold does on the calibration set itself (optimistic: fitted there)."""
    from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

    flagged = scores >= threshold
    precision, recall, f1, _ = precision_recall_fscore_support(labels, flagged, average="binary", zero_division=0)
    return {
        "auc": round(float(roc_auc_score(labels, scores)), 4), "precision": round(float(precision), 4),
        "recall": round(float(recall), 4), "f1": round(float(f1), 4), "flag_rate": round(float(flagged.mean()), 4),
        "unsupported_rate": round(float(labels.mean()), 4),
    }


def _labelled_threshold(
    scores: np.ndarray, labels: np.ndarray, target_recall: float | None, target_precision: float | None
) -> tuple[float, str]:
    from sklearn.metrics import precision_recall_curve

    if labels.min() == labels.max():
        raise InputError("labelled calibration needs both supported and unsupported sentences")
    if target_recall is None and target_precision is None:
        return best_f1_threshold(scores, labels), "best F1"
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    precision, recall = precision[:-1], recall[:-1]  # the last point has no threshold
    if target_recall is not None:
        i = np.flatnonzero(recall >= target_recall)[-1]
        return float(thresholds[i]), f"recall >= {target_recall}"
    ok = np.flatnonzero(precision >= target_precision)
    if not len(ok):
        raise InputError(f"no threshold reaches precision {target_precision} on this calibration set")
    return float(thresholds[ok[0]]), f"precision >= {target_precision}"
