"""Detector scores and their calibration: standardisation statistics and flag thresholds.

Two score rules, both "higher = more suspicious":

- ``gap``: ``-gap``. Training-free, needs only two passes; direction fixed in advance.
- ``sensitivity``: ``-(z(gap) + z(jsd_noctx) + z(drop_max) + z(jsd_loo_max))`` with the
  means and standard deviations of a calibration set, never of the answer being scored; or,
  in a file that ``groundsense fit`` wrote (it has ``weights``), the log-odds of "unsupported"
  of a logistic regression over the :data:`LOGISTIC_SIGNALS` (or the scorer's
  :data:`LOGISTIC_FEATURES` alone), fitted on a team's labels (:mod:`groundsense.calibration.fitting`).

A calibration file holds those statistics and, per score rule, two flag thresholds: one for
sentences and one for whole answers (on the answer's most suspicious sentence: the
guardrail's block/allow decision). It is fitted by ``groundsense calibrate`` on a set of
answers: with sentence labels each threshold meets a target recall or precision (default:
the best F1; for answers, the sentence threshold unless a lower one separates the answers
significantly better by Youden's J; the pickers are in :mod:`groundsense.calibration.thresholds`) and the
file keeps the sentences' precision-recall curve, from which
``--target-recall`` / ``--target-precision`` pick another sentence threshold at detect time
(an answer is then flagged when any of its sentences is); without labels the sentence
threshold flags a chosen share of sentences and there is no answer threshold either.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..features import GROUNDING
from ..lexical import LEXICAL
from .files import CALIBRATION, file_text, read_file
from .thresholds import compact_curve, curve_threshold, labelled_threshold

if TYPE_CHECKING:
    from importlib.abc import Traversable

STANDARDISED = ("gap", "jsd_noctx", "drop_max", "jsd_loo_max")
# What a fitted (logistic) sensitivity score reads: every per-sentence feature the detector
# computes, n_tokens on a log scale, and of the signed features the two that are not a
# linear combination of the others (``gap_rest`` is ``gap - drop_max``).
LOGISTIC_FEATURES = (*GROUNDING, "surprisal", "log_n_tokens", "drop_min", "neg_drop_mass")
# What a fitted score may read, and `groundsense fit` reads by default: those and the lexical signals.
LOGISTIC_SIGNALS = (*LOGISTIC_FEATURES, *LEXICAL)
# The two score rules a calibration fits. Results name the one that judged as ``"score_rule"``,
# and again as ``"detector"``, its name before, so that readers of stored results still work
# (docs/output.md).
SCORE_RULES = ("sensitivity", "gap")
LEVELS = ("sentence", "answer")


def gap_score(features: dict[str, np.ndarray]) -> np.ndarray:
    """The gap score rule: minus the sentence's ``gap`` feature (higher = more suspicious)."""
    return -np.asarray(features["gap"], dtype=float)


def sensitivity_score(stats: dict[str, tuple[float, float]], features: dict[str, np.ndarray]) -> np.ndarray:
    """-(sum of the features' z-scores under ``stats``, feature -> (mean, standard deviation))."""
    total = sum((np.asarray(features[f], float) - m) / s for f, (m, s) in stats.items())
    return -np.asarray(total, dtype=float)


def logistic_input(features: dict[str, np.ndarray], name: str) -> np.ndarray:
    """One of the :data:`LOGISTIC_SIGNALS` from a sentence feature dict (``log_n_tokens``
    from ``n_tokens``)."""
    if name == "log_n_tokens":
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(features["n_tokens"], float))
    return np.asarray(features[name], float)


def logistic_score(weights: dict, features: dict[str, np.ndarray]) -> np.ndarray:
    """The log-odds of "unsupported" under ``weights`` (``intercept``, ``coefficients`` and
    ``stats``: feature -> coefficient of its z-score, and (mean, standard deviation))."""
    total = np.full(len(np.asarray(features["gap"])), float(weights["intercept"]))
    for name, coefficient in weights["coefficients"].items():
        mean, sd = weights["stats"][name]
        total = total + coefficient * (logistic_input(features, name) - mean) / sd
    return total


def complete_rows(features: dict[str, np.ndarray], names: tuple[str, ...] = STANDARDISED) -> np.ndarray:
    """Which sentences have all the ``names`` features finite (:data:`LOGISTIC_SIGNALS` may be named)."""
    return np.all([np.isfinite(logistic_input(features, f)) for f in names], axis=0)


def standardisation(features: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """Mean and population standard deviation of each :data:`STANDARDISED` feature over the
    :func:`complete_rows` (a constant feature's deviation is taken as 1)."""
    rows = complete_rows(features)
    stats = {}
    for name in STANDARDISED:
        values = np.asarray(features[name], float)[rows]
        stats[name] = (float(values.mean()), float(values.std() or 1.0))
    return stats


@dataclass
class Calibration:
    scorer: str
    k: int
    stats: dict[str, tuple[float, float]]  # feature -> (mean, standard deviation)
    thresholds: dict[str, float]  # score_rule -> flag a sentence when its score >= threshold
    made_with: dict = field(default_factory=dict)  # provenance: data, sizes, rule, metrics
    # score_rule -> flag an answer when its most suspicious sentence's score >= threshold
    answer_thresholds: dict[str, float] = field(default_factory=dict)
    # score_rule -> :func:`compact_curve` of its sentence scores on the labelled set
    curves: dict[str, list[list[float]]] = field(default_factory=dict)
    # `groundsense fit`: the sensitivity score's logistic weights (:func:`logistic_score`); empty: the z-sum
    weights: dict = field(default_factory=dict)

    @property
    def leave_one_out(self) -> str:
        """How the leave-one-out features it was fitted on were computed (older files: exact)."""
        return self.made_with.get("leave_one_out", "exact")

    @property
    def chunk_counts(self) -> list[int]:
        """How many chunks the answers it was fitted on were scored in (older files: its K)."""
        return self.made_with.get("chunk_counts", [self.k])

    def serves(self, chunks: int) -> bool:
        """Whether its ``sensitivity`` statistics hold for an answer scored in ``chunks`` chunks."""
        return chunks in self.chunk_counts

    def threshold(
        self, score_rule: str, level: str = "sentence", target_recall: float | None = None,
        target_precision: float | None = None,
    ) -> float | None:
        """Where ``score_rule`` flags at ``level``: the fitted threshold. The answer threshold is
        never above the sentence one, so an answer with a flagged sentence is never cleared;
        without a fitted answer threshold it is the sentence one: the answer is flagged when any
        sentence is.

        A target recall or precision is a sentence operating point, read from the stored curve
        of the labelled calibration set, and serves both levels: the answer is flagged when any
        sentence is. (The calibration answers are drawn half hallucinated, so an answer-level
        precision measured on them would not hold on a natural mix.)"""
        if target_recall is None and target_precision is None:
            sentence = self.thresholds.get(score_rule)
            if level == "sentence" or sentence is None:
                return sentence
            return min(self.answer_thresholds.get(score_rule, sentence), sentence)
        curve = self.curves.get(score_rule)
        if not curve:
            raise InputError(
                f"this calibration keeps no precision-recall curve for the {score_rule} score (fitted without "
                "labels, adapted to a domain, or by an older version): refit it with labelled rows "
                "(`groundsense calibrate`) to pick a "
                "target recall or precision"
            )
        return curve_threshold(curve, target_recall, target_precision, score_rule)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The sentence features its ``sensitivity`` score reads (``n_tokens`` for ``log_n_tokens``)."""
        names = self.weights["coefficients"] if self.weights else self.stats
        return tuple(dict.fromkeys("n_tokens" if n == "log_n_tokens" else n for n in names))

    def score(self, score_rule: str, features: dict[str, np.ndarray]) -> np.ndarray:
        if score_rule == "gap":
            return gap_score(features)
        if self.weights:
            return logistic_score(self.weights, features)
        return sensitivity_score(self.stats, features)

    def save(self, path: str | Path) -> None:
        """Indented JSON, each curve on one line (they are long and read by programs)."""
        Path(path).write_text(file_text(CALIBRATION, asdict(self), "curves"))

    @classmethod
    def load(cls, path: str | Path | Traversable) -> Calibration:
        data = read_file(path, CALIBRATION)
        missing = [name for name in ("scorer", "k", "stats", "thresholds") if name not in data]
        if missing:
            raise InputError(f"cannot read calibration file {path}: it has no {', '.join(map(repr, missing))}: "
                             "give a file `groundsense calibrate` or `groundsense fit` wrote")
        try:
            data["stats"] = {f: tuple(v) for f, v in data["stats"].items()}
            calibration = cls(**data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InputError(f"cannot read calibration file {path}: {exc}") from exc
        weights = calibration.weights
        if weights:
            coefficients = weights.get("coefficients")
            if not (isinstance(weights.get("intercept"), (int, float)) and isinstance(coefficients, dict)
                    and coefficients and set(coefficients) <= set(weights.get("stats") or {})):
                raise InputError(f"cannot read calibration file {path}: its 'weights' need an 'intercept', and "
                                 "'coefficients' and 'stats' of the same names")
            unknown = sorted(set(coefficients) - set(LOGISTIC_SIGNALS))
            if unknown:
                raise InputError(f"cannot read calibration file {path}: its weights name {', '.join(unknown)}, "
                                 "which this groundsense does not compute (a newer one may have written it); it "
                                 f"knows {', '.join(LOGISTIC_SIGNALS)}")
        return calibration


def shipped_calibration(scorer: str, chunks: int | None, precision: str = "fp32") -> Calibration | None:
    """The calibration shipped with the package for this scorer that was fitted on answers
    scored in ``chunks`` chunks (any one if None): at ``bf16``, one fitted on bf16 features
    (``<scorer>-bf16-k*.json``) where the package has it, else the fp32 one (bf16 flags what
    fp32 flags at its thresholds: docs/performance.md, "Numeric precision")."""
    folder = resources.files("groundsense") / "calibrations"
    names = ([f"{scorer}-bf16-k*.json"] if precision == "bf16" else []) + [f"{scorer}-k*.json"]
    for name in names:
        files = (sorted((p for p in folder.iterdir() if fnmatch(p.name, name)), key=lambda p: p.name)
                 if folder.is_dir() else [])
        for calibration in map(Calibration.load, files):
            if chunks is None or calibration.serves(chunks):
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
    answers: np.ndarray | None = None,
    weights: dict | None = None,
) -> Calibration:
    """Fit statistics and thresholds on sentence features (arrays over sentences); with
    ``weights`` (:func:`groundsense.calibration.fitting.fit_weights`), the ``sensitivity`` thresholds are
    fitted on their logistic score, over the sentences with all its features.

    With ``labels`` and ``answers`` (each sentence's answer id), the answer thresholds are
    fitted too, on each answer's most suspicious sentence against whether any of its sentences
    is unsupported (over the sentences with all features), at most the sentence threshold (see
    :meth:`Calibration.threshold`): at the same target, or by default the sentence threshold
    unless the best lower one by Youden's J (:func:`youden_threshold`) is significantly better."""
    rows = complete_rows(features, STANDARDISED + tuple(weights["coefficients"] if weights else ()))
    if rows.sum() < 2:
        raise InputError("calibration needs at least two scored sentences with all four features")
    calibration = Calibration(scorer, k, standardisation(features), {}, dict(made_with or {}),
                              weights=dict(weights or {}))
    rule: dict[str, dict[str, str]] = {}
    quality: dict[str, dict[str, dict[str, float]]] = {}
    for score_rule in SCORE_RULES:
        scores = calibration.score(score_rule, {f: np.asarray(v, float)[rows] for f, v in features.items()})
        if labels is None:
            threshold = calibration.thresholds[score_rule] = float(np.quantile(scores, 1 - flag_rate))
            rule.setdefault("sentence", {})[score_rule] = f"flag rate {flag_rate}"
            quality.setdefault("sentence", {})[score_rule] = {"flag_rate": float((scores >= threshold).mean())}
            continue
        y = np.asarray(labels)[rows]
        levels = {"sentence": (scores, y)}
        if answers is not None:
            top, unsupported = _answer_maxima(np.asarray(answers)[rows], scores, y)
            if unsupported.min() < unsupported.max():
                levels["answer"] = (top, unsupported)
            else:  # no answer threshold: answers are then flagged when any sentence is
                rule.setdefault("answer", {})[score_rule] = \
                    "not fitted: the answers are all supported or all unsupported"
        for level, (level_scores, level_labels) in levels.items():  # sentence first: it caps the answer's
            cap = calibration.thresholds[score_rule] if level == "answer" else np.inf
            try:
                threshold, text = labelled_threshold(level_scores, level_labels, target_recall, target_precision, cap)
            except InputError as exc:  # which of the file's thresholds missed it
                raise InputError(f"the {score_rule} score's {level} threshold: {exc}") from None
            (calibration.thresholds if level == "sentence" else calibration.answer_thresholds)[score_rule] = threshold
            if level == "sentence":
                calibration.curves[score_rule] = compact_curve(level_scores, level_labels)
            rule.setdefault(level, {})[score_rule] = text
            quality.setdefault(level, {})[score_rule] = threshold_quality(level_scores, level_labels, threshold)
    calibration.made_with.update(n_sentences=int(rows.sum()), threshold_rule=rule, on_calibration_set=quality)
    return calibration


def _answer_maxima(answers: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per answer: its highest sentence score, and whether any sentence is labelled unsupported."""
    _, index = np.unique(answers, return_inverse=True)
    top, unsupported = np.full(index.max() + 1, -np.inf), np.zeros(index.max() + 1, dtype=int)
    np.maximum.at(top, index, scores)
    np.maximum.at(unsupported, index, np.asarray(labels, dtype=int))
    return top, unsupported


def threshold_quality(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """How the threshold does on the calibration set itself (optimistic: fitted there)."""
    from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

    flagged = scores >= threshold
    precision, recall, f1, _ = precision_recall_fscore_support(labels, flagged, average="binary", zero_division=0)
    return {
        "auc": round(float(roc_auc_score(labels, scores)), 4), "precision": round(float(precision), 4),
        "recall": round(float(recall), 4), "f1": round(float(f1), 4), "flag_rate": round(float(flagged.mean()), 4),
        "unsupported_rate": round(float(labels.mean()), 4),
    }
