"""A labelled calibration adapted to a team's own domain from its unlabelled answers.

What the labels taught stays: the features, the score's direction, which score rule serves which
chunk count, and (per rule) the threshold's place. What depends on the domain is re-estimated
from the domain's scored sentences (`groundsense calibrate --adapt BASE.json rows.jsonl`; in
Python, ``adapt(base, DomainSentences.from_results(detector.detect_many(rows)))``):

- ``restandardise`` (R): each standardised feature's mean and deviation come from the domain
  (those of a fitted file's logistic weights too);
  the ``sensitivity`` thresholds keep their place in its z-sum space and the ``gap`` ones their
  place in z(gap) units;
- ``quantile`` (Q): the base statistics stay; each threshold moves to the domain score that
  flags the share of sentences the fitted threshold flagged on the labelled set;
- ``mixture`` (M): a two-component Gaussian mixture over the domain's scores estimates its
  unsupported share, and the threshold flags that share times the labelled set's ratio of
  flagged to unsupported sentences (the over-flagging the best-F1 rule chose there).

The rules were chosen between by the protocol in docs/detector-selection.md ("Adapting the
operating point"); :data:`DEFAULT_METHOD` is the one it chose. An adapted calibration keeps no
precision-recall curve: the labelled set's curve does not hold on the domain, so a target
recall or precision needs labels from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..features import SENTENCE_VALUES
from .calibration import LEVELS, SCORE_RULES, STANDARDISED, Calibration, complete_rows, logistic_input, standardisation

if TYPE_CHECKING:
    from ..result import DetectionResult

METHODS = ("restandardise", "quantile", "mixture")
DEFAULT_METHOD = "restandardise"
FEW_ANSWERS = 100  # below this an adaptation warns that its estimate is loose


@dataclass(frozen=True)
class DomainSentences:
    """A domain's scored sentences: ``features`` (name -> array over sentences), each
    sentence's ``answers`` id and the ``chunk_counts`` its answer was scored in."""

    features: dict[str, np.ndarray]
    answers: np.ndarray
    chunk_counts: np.ndarray

    def __post_init__(self) -> None:
        if not len(self.answers):
            raise InputError("adaptation needs scored sentences from the domain: none were given")

    @classmethod
    def from_results(cls, results: Iterable[DetectionResult]) -> DomainSentences:
        """The scored sentences of detections made in full mode (``Detector.detect_many``), so
        that a Python caller adapts on what it already scored."""
        values: dict[str, list[float]] = {name: [] for name in SENTENCE_VALUES}
        answers, chunk_counts = [], []
        for number, result in enumerate(results):
            if result.mode != "full":
                raise InputError(f"detection {number} was made in {result.mode} mode: adapting reads full mode's "
                                 "features, so detect with mode='full' (the default)")
            for sentence in result.sentences:
                if sentence.status != "scored":
                    continue
                for name in values:
                    value = sentence.features.get(name)
                    values[name].append(np.nan if value is None else value)
                answers.append(number)
                chunk_counts.append(len(result.chunks))
        return cls({f: np.array(v, dtype=float) for f, v in values.items()}, np.array(answers),
                   np.array(chunk_counts, dtype=int))

    def subset(self, rows: np.ndarray) -> DomainSentences:
        return DomainSentences({f: np.asarray(v, float)[rows] for f, v in self.features.items()},
                               np.asarray(self.answers)[rows], np.asarray(self.chunk_counts)[rows])

    @property
    def n_answers(self) -> int:
        return len(np.unique(self.answers))


def _served(base: Calibration, domain: DomainSentences, score_rule: str) -> np.ndarray:
    """The sentences ``score_rule`` judges: ``sensitivity`` those of answers in a chunk count the
    base serves with all its features finite, ``gap`` the others with a finite gap."""
    complete = complete_rows(domain.features, STANDARDISED + tuple(base.weights.get("coefficients", ())))
    served = np.isin(domain.chunk_counts, base.chunk_counts) & complete  # the answers ``base.serves``
    if score_rule == "sensitivity":
        return served
    return ~served & np.isfinite(np.asarray(domain.features["gap"], float))


def _flag_share(base: Calibration, score_rule: str) -> float:
    """The share of sentences the base's fitted threshold flagged on its labelled set."""
    quality = base.made_with.get("on_calibration_set", {}).get("sentence", {}).get(score_rule, {})
    if "unsupported_rate" not in quality:
        raise InputError("this adaptation keeps what a labelled calibration learned: adapt a calibration fitted "
                         "with labels (the shipped one, or `groundsense calibrate` on labelled rows)")
    return float(quality["flag_rate"])


def unsupported_share(scores: np.ndarray, seed: int = 0) -> float:
    """The weight of the higher-mean component of a two-component Gaussian mixture over ``scores``."""
    from sklearn.mixture import GaussianMixture

    mixture = GaussianMixture(2, random_state=seed).fit(np.asarray(scores, float).reshape(-1, 1))
    return float(mixture.weights_[int(np.argmax(mixture.means_.ravel()))])


def adapt(base: Calibration, domain: DomainSentences, method: str = DEFAULT_METHOD,
          source: str = "the detections given") -> Calibration:
    """``base`` adapted to ``domain`` (read from ``source``) by ``method`` (one of :data:`METHODS`)."""
    if method not in METHODS:
        raise InputError(f"adaptation method must be one of {', '.join(METHODS)}, not {method!r}")
    lacking = [name for name in base.inputs if not np.isfinite(np.asarray(domain.features.get(name, []), float)).any()]
    if lacking:
        raise InputError(f"the calibration's score reads {', '.join(lacking)}, which no sentence of {source} has "
                         "(features an older groundsense scored lack the lexical signals): score them again")
    stats, weights, thresholds, answer_thresholds, estimates = dict(base.stats), dict(base.weights), {}, {}, {}
    if method == "restandardise":
        rows = _served(base, domain, "sensitivity")
        if rows.sum() >= 2:
            served = {f: np.asarray(v, float)[rows] for f, v in domain.features.items()}
            stats = standardisation(served)
            if weights:  # a fitted file: its logistic features are standardised on the domain too
                weights["stats"] = {name: [float(np.mean(values)), float(np.std(values) or 1.0)] for name in
                                    weights["coefficients"] for values in [logistic_input(served, name)]}
    for score_rule in SCORE_RULES:
        rows = _served(base, domain, score_rule)
        fitted = base.thresholds.get(score_rule)
        if fitted is None:
            continue
        answer = base.answer_thresholds.get(score_rule, fitted)
        if rows.sum() < 2:  # nothing of the domain reaches this score rule: it stays as it was
            thresholds[score_rule], answer_thresholds[score_rule] = fitted, answer
            continue
        scores = Calibration(base.scorer, base.k, stats, {}, weights=weights).score(
            score_rule, {f: np.asarray(v, float)[rows] for f, v in domain.features.items()})
        if method == "restandardise":
            new, new_answer = fitted, answer
            if score_rule == "gap":  # score -gap: keep each threshold's place in z(gap) units
                (mean, sd), gaps = base.stats["gap"], np.asarray(domain.features["gap"], float)[rows]
                new, new_answer = (-(gaps.mean() + (gaps.std() or 1.0) * (-t - mean) / sd) for t in (fitted, answer))
        else:
            share = _flag_share(base, score_rule)
            if method == "mixture":
                quality = base.made_with["on_calibration_set"]["sentence"][score_rule]
                estimates[score_rule] = unsupported_share(scores)
                share = min(1.0, estimates[score_rule] * share / max(quality["unsupported_rate"], 1e-9))
            new = float(np.quantile(scores, 1 - share))
            new_answer = answer + new - fitted
        thresholds[score_rule], answer_thresholds[score_rule] = float(new), float(min(new_answer, new))
    rule = {"restandardise": "the base threshold, in z units of the domain's statistics",
            "quantile": "flags the share of the domain's sentences the base flagged on its labelled set",
            "mixture": "flags the estimated unsupported share x the base's flagged-to-unsupported ratio"}[method]
    made_with = {
        "source": source, "answers": domain.n_answers, "n_sentences": int(len(domain.answers)), "labelled": False,
        "chunk_counts": base.chunk_counts, "leave_one_out": base.leave_one_out,
        "threshold_rule": {level: {d: f"adapted ({method}): {rule}" for d in thresholds} for level in LEVELS},
        "adaptation": {"method": method, "base": base.made_with.get("source", "?"),
                       **({"estimated_unsupported_share": {d: round(v, 4) for d, v in estimates.items()}}
                          if estimates else {}),
                       # a `groundsense fit` base: how its weights compared, on its own labelled rows
                       **({"base_cross_validation": base.made_with["cross_validation"]}
                          if "cross_validation" in base.made_with else {})},
        # the weights kept are the base's, and so is the record of how they were fitted
        **({"fit": base.made_with["fit"]} if "fit" in base.made_with else {}),
    }
    return Calibration(base.scorer, base.k, stats, thresholds, made_with, answer_thresholds, curves={}, weights=weights)


def judged_scores(calibration: Calibration, domain: DomainSentences) -> dict[str, tuple[np.ndarray, float]]:
    """Each score rule's scores of the domain sentences it judges, with its sentence threshold
    (a rule that judges none, or has no threshold, is left out)."""
    judged = {}
    for score_rule in SCORE_RULES:
        rows = _served(calibration, domain, score_rule)
        if rows.any() and score_rule in calibration.thresholds:
            features = {f: np.asarray(v, float)[rows] for f, v in domain.features.items()}
            judged[score_rule] = (calibration.score(score_rule, features), calibration.thresholds[score_rule])
    return judged


def flagged_share(calibration: Calibration, domain: DomainSentences) -> float:
    """The share of the domain's judged sentences that ``calibration`` flags."""
    judged = judged_scores(calibration, domain).values()
    flagged = sum(int((scores >= threshold).sum()) for scores, threshold in judged)
    return flagged / max(sum(len(scores) for scores, _ in judged), 1)


def stability(base: Calibration, domain: DomainSentences, adapted: Calibration, n_resamples: int = 200,
              seed: int = 0) -> dict:
    """How much ``adapted`` (``base`` adapted to ``domain``) moves when the domain's answers are
    resampled with replacement and the same rule is applied again: the 95% percentile interval
    of the ``sensitivity`` sentence threshold and of the share of the domain's sentences it
    flags (each resample's adaptation applied to all of them), beside the share ``adapted`` flags."""
    method = adapted.made_with["adaptation"]["method"]
    rng = np.random.default_rng(seed)
    ids, index = np.unique(domain.answers, return_inverse=True)
    by_answer = [np.flatnonzero(index == i) for i in range(len(ids))]
    thresholds, shares = [], []
    for _ in range(n_resamples):
        rows = np.concatenate([by_answer[i] for i in rng.integers(0, len(ids), len(ids))])
        resampled = adapt(base, domain.subset(rows), method)
        thresholds.append(resampled.thresholds["sensitivity"])
        shares.append(flagged_share(resampled, domain))
    return {"resamples": n_resamples,
            "threshold": [round(float(q), 4) for q in np.quantile(thresholds, [0.025, 0.975])],
            "flagged_share": round(flagged_share(adapted, domain), 4),
            "flagged_share_interval": [round(float(q), 4) for q in np.quantile(shares, [0.025, 0.975])]}
