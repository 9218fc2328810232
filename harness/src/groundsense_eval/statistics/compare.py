"""Verifiers against the detector on identical sentences: the analogues of the paper's
Table 7 (span AUC next to Gap and LightGBM + baselines, and the word-overlap baseline where the
sentences carry their lexical signals) and Table 8 (complementarity).

Inputs are one feature set's development and test partitions (:func:`.benchmark_result.partitioned`)
and one verifier's cached rows (:mod:`verifier_scores`). Only sentences the verifier scored
are compared; the detectors' LightGBM models are fit on the whole development partition, as
in Table 3, and scored on those sentences.

Table 8 fits three logistic regressions on the development sentences the verifier scored:
the verifier alone; plus the six grounding features (Δ1 = that minus the verifier alone:
what the detector's signal adds to the verifier); plus perplexity and length instead
(Δ2 = verifier + grounding minus verifier + perplexity and length: whether the gain is the
grounding signal rather than generic fluency and length cues).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss

from groundsense.features import BASELINES, GROUNDING
from groundsense.verification import KINDS, installed_kinds, verifier_class

from ..caches.verifier_scores import join_scores
from .bootstrap import BootstrapResult, source_bootstrap
from .methods import logistic_scores, method_scores
from .metrics import flagging_report

REFERENCE_COLUMNS = ("sentence gap", "LightGBM + baselines")  # the detectors a verifier is held against
# Table 7's columns: those, and the word-overlap baseline where the sentences carry their lexical signals
TABLE7_COLUMNS = (*REFERENCE_COLUMNS, "word overlap")
ALONE, WITH_GROUNDING, WITH_BASELINES = "verifier alone", "verifier + grounding", "verifier + perplexity, length"


@dataclass
class VerifierComparison:
    """Table 7 and Table 8 for one verifier on one feature set's test partition."""

    name: str
    n_test: int
    span: BootstrapResult  # the verifier and the detectors on the verifier's test sentences
    complementarity: BootstrapResult  # the three logistic classifiers
    spearman: dict[str, float]  # rank correlation of the verifier's score with each detector's
    test: pd.DataFrame  # the joined test rows (verifier score and cost columns included)
    detector_scores: dict[str, np.ndarray]  # every detector method on ``test``
    flagging: dict[str, float]  # thresholds chosen on dev, P/R/F1 on test; Brier scores

    def flagging_row(self) -> dict[str, float]:
        return {"n": self.n_test, **self.flagging}

    def table7_row(self) -> dict[str, object]:
        row: dict[str, object] = {"n": self.n_test, **_interval_cells(self.span, self.name, "verifier")}
        beaten = []
        for detector in (d for d in TABLE7_COLUMNS if d in self.span.point):
            row.update(_interval_cells(self.span, detector, detector))
            diff = self.span.difference(self.name, detector)
            row.update({f"Δ vs {detector}": diff["diff"], f"Δ vs {detector} lo": diff["lo"],
                        f"Δ vs {detector} hi": diff["hi"]})
            if diff["lo"] > 0:
                beaten.append(detector)
        row["beats"] = ", ".join(beaten) or "—"
        return row

    def table8_row(self) -> dict[str, object]:
        row: dict[str, object] = {"n": self.n_test}
        for name in (ALONE, WITH_GROUNDING, WITH_BASELINES):
            row.update(_interval_cells(self.complementarity, name, name))
        for label, (a, b) in {"Δ1": (WITH_GROUNDING, ALONE), "Δ2": (WITH_GROUNDING, WITH_BASELINES)}.items():
            diff = self.complementarity.difference(a, b)
            row.update({label: diff["diff"], f"{label} lo": diff["lo"], f"{label} hi": diff["hi"]})
        row.update({f"ρ {k}": v for k, v in self.spearman.items()})
        return row


def _interval_cells(result: BootstrapResult, method: str, label: str) -> dict[str, float]:
    auc, lo, hi = result.intervals().loc[method, ["auc", "lo", "hi"]]
    return {label: auc, f"{label} lo": lo, f"{label} hi": hi}


def compare_verifier(
    dev: pd.DataFrame, test: pd.DataFrame, rows: pd.DataFrame, name: str, seed: int = 0, n_resamples: int = 2000
) -> VerifierComparison | None:
    """Tables 7 and 8 for the verifier ``rows``; None when the sentences it scored lack
    either label in the development or the test partition."""
    vdev, vtest = join_scores(dev, rows), join_scores(test, rows)
    if any(set(part["label"]) != {0, 1} for part in (vdev, vtest)):
        return None
    y, groups = vtest["label"].to_numpy(), vtest["source_id"].to_numpy()
    detectors = method_scores(dev, vtest, seed)
    verifier = vtest["verifier"].to_numpy(dtype=float)
    columns = {name: verifier, **{d: detectors[d] for d in TABLE7_COLUMNS if d in detectors}}
    span = source_bootstrap(y, columns, groups, n_resamples, seed)
    classifiers = {
        ALONE: ["verifier"],
        WITH_GROUNDING: ["verifier", *GROUNDING],
        WITH_BASELINES: ["verifier", *BASELINES],
    }
    complementarity = source_bootstrap(
        y, {k: logistic_scores(vdev, vtest, f) for k, f in classifiers.items()}, groups, n_resamples, seed
    )
    spearman = {d: float(spearmanr(verifier, detectors[d]).statistic) for d in REFERENCE_COLUMNS}
    kind = rows.attrs.get("config", {}).get("verifier")
    # Brier applies to a kind whose scores are probabilities, built in or installed here (a kind
    # whose package is not installed here cannot say, so it gets none)
    known = kind in KINDS or kind in installed_kinds()
    is_probability = known and verifier_class(kind).scores_are_probabilities
    return VerifierComparison(name, len(vtest), span, complementarity, spearman, vtest, detectors,
                              flagging_cells(vdev, vtest, is_probability))


def flagging_cells(vdev: pd.DataFrame, vtest: pd.DataFrame, is_probability: bool) -> dict[str, float]:
    """What a user who flags sentences gets on test, the verifier against the sentence gap on
    the same sentences, each thresholded at its max-F1 point on dev; and the verifier's
    calibration: the Brier score of its raw score (when ``is_probability``, as the judge's
    1 − P(supported) is) and of a Platt calibration (an unpenalised logistic) fit on dev."""
    y_dev, y_test = vdev["label"].to_numpy(), vtest["label"].to_numpy()
    raw_dev, raw_test = vdev["verifier"].to_numpy(dtype=float), vtest["verifier"].to_numpy(dtype=float)
    cells: dict[str, float] = {}
    for label, dev_score, test_score in (("verifier", raw_dev, raw_test),
                                         ("sentence gap", -vdev["gap"].to_numpy(), -vtest["gap"].to_numpy())):
        report = flagging_report(dev_score, y_dev, test_score, y_test)
        cells.update({f"{label} {k}": report[k] for k in ("precision", "recall", "f1")})
        if label == "verifier":  # on the raw score: what `detect --verifier-threshold` takes
            cells["verifier threshold"] = report["threshold"]
    cells["Brier raw"] = brier_score_loss(y_test, raw_test) if is_probability else float("nan")
    calibration = LogisticRegression(C=np.inf).fit(raw_dev[:, None], y_dev)
    cells["Brier calibrated"] = brier_score_loss(y_test, calibration.predict_proba(raw_test[:, None])[:, 1])
    cells["Brier base rate"] = brier_score_loss(y_test, np.full(len(y_test), y_dev.mean()))
    return cells


def table7(comparisons: list[VerifierComparison]) -> pd.DataFrame:
    """One row per verifier: its span AUC, the detectors' and word overlap's (where the sentences
    carry it) on the same sentences, the paired differences, and ``beats``: the methods it beats
    with an interval excluding zero."""
    return _by_verifier({c.name: c.table7_row() for c in comparisons})


def flagging_table(comparisons: list[VerifierComparison]) -> pd.DataFrame:
    """One row per verifier: P/R/F1 at dev-chosen thresholds, its and the gap's; Brier scores."""
    return _by_verifier({c.name: c.flagging_row() for c in comparisons})


def table8(comparisons: list[VerifierComparison]) -> pd.DataFrame:
    """One row per verifier: the three classifiers' AUCs, Δ1, Δ2 with intervals, Spearman ρ."""
    return _by_verifier({c.name: c.table8_row() for c in comparisons})


def _by_verifier(rows: Mapping[str, Mapping[str, object]]) -> pd.DataFrame:
    """One row per verifier; the sentence count stays an integer (a table of numbers only
    would otherwise come out of the transpose as floats)."""
    frame = pd.DataFrame(rows).T
    return frame.astype({"n": int}) if len(frame) else frame
