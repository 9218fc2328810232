"""Analysis over a per-sentence feature table: span- and response-level AUCs, the gap threshold,
breakdowns by error type and task, the feature ablation, and source-level bootstrap intervals.

Expected columns: ``case_id, source_id, task, benchmark, sentence, start, end, label`` (1 =
unsupported), ``type``, the six grounding features, ``surprisal``, ``n_tokens``; optionally
``answer_gap`` (else derived) and ``partition`` (else a seeded 60/40
source-level split by task).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

from groundsense.calibration import best_f1_threshold

from ..data.split import DEV, TEST, assign_partition
from .bootstrap import BootstrapResult, source_bootstrap
from .methods import ablation_scores, add_answer_columns, answer_mean, method_scores

MOST_SUSPICIOUS, MEAN = "most suspicious sentence", "token-weighted mean"  # the answer-level aggregations


def auc_or_nan(y: np.ndarray, score: np.ndarray) -> float:
    """ROC AUC, or NaN when only one class is present."""
    return float(roc_auc_score(y, score)) if len(np.unique(y)) == 2 else float("nan")


def flagging_report(dev_score: np.ndarray, dev_label: np.ndarray, test_score: np.ndarray, test_label: np.ndarray
                    ) -> dict[str, float]:
    """Threshold on a score (higher = more suspicious) chosen on dev (max F1, as
    ``groundsense calibrate`` chooses it), and precision/recall/F1 of flagging at it on test."""
    threshold = best_f1_threshold(np.asarray(dev_score), dev_label)
    precision, recall, f1, _ = precision_recall_fscore_support(
        test_label, (np.asarray(test_score) >= threshold).astype(int), average="binary", zero_division=0
    )
    return {"threshold": threshold, "precision": float(precision), "recall": float(recall), "f1": float(f1)}


def threshold_report(dev: pd.DataFrame, test: pd.DataFrame) -> dict[str, float]:
    """Gap threshold chosen on dev (max F1), and precision/recall/F1 at it on test."""
    report = flagging_report(-dev["gap"].to_numpy(), dev["label"].to_numpy(),
                             -test["gap"].to_numpy(), test["label"].to_numpy())
    return report | {"threshold": -report["threshold"]}


def response_table(test: pd.DataFrame, scores: Mapping[str, np.ndarray]) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """One row per answer (``label``: any unsupported sentence) and each sentence method's answer
    scores: its most suspicious sentence, and its token-weighted mean over the answer's sentences.

    For the sentence gap these are the lowest sentence gap and the answer's mean gap. ``answer
    gap`` is left out: it scores every sentence with that mean already.
    """
    case = test["case_id"]
    responses = test.groupby(case, sort=False).agg(source_id=("source_id", "first"), task=("task", "first"),
                                                   label=("label", "max"))
    answer_scores = {}
    for name, score in scores.items():
        if name == "answer gap":
            continue
        score = pd.Series(score, index=test.index, dtype=float)
        answer_scores[f"{name}, {MOST_SUSPICIOUS}"] = score.groupby(case, sort=False).max().to_numpy()
        answer_scores[f"{name}, {MEAN}"] = answer_mean(score, test).to_numpy()
    return responses, answer_scores


def breakdown_by_type(test: pd.DataFrame, scores: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """AUC of each method for each kind of unsupported sentence against all grounded ones."""
    kinds = test["type"].fillna("untyped").where(test["label"] == 1, "grounded")
    grounded = (kinds == "grounded").to_numpy()
    rows = {}
    for kind in ["all unsupported", *sorted(set(kinds) - {"grounded"})]:
        positive = (kinds != "grounded").to_numpy() if kind == "all unsupported" else (kinds == kind).to_numpy()
        keep = positive | grounded
        rows[kind] = {"n": int(positive.sum()), **{m: auc_or_nan(positive[keep], s[keep]) for m, s in scores.items()}}
    return pd.DataFrame.from_dict(rows, orient="index")


def breakdown_by_task(test: pd.DataFrame, scores: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """AUC of each method within each task."""
    rows = {}
    y = test["label"].to_numpy()
    for task in sorted(test["task"].unique()):
        keep = (test["task"] == task).to_numpy()
        rows[task] = {
            "n": int(keep.sum()),
            "unsupported": int(y[keep].sum()),
            **{m: auc_or_nan(y[keep], s[keep]) for m, s in scores.items()},
        }
    return pd.DataFrame.from_dict(rows, orient="index")


@dataclass
class Evaluation:
    """All tables of one evaluation run; ``span`` and ``response`` carry the bootstrap results."""

    span: BootstrapResult
    response: BootstrapResult
    threshold: dict[str, float]
    by_type: pd.DataFrame
    by_task: pd.DataFrame
    ablation: BootstrapResult

    def levels(self) -> pd.DataFrame:
        """Table 4: each method's span AUC beside its answer-level AUCs, and each answer level
        minus the span AUC with its interval.

        The intervals are paired: the span and response bootstraps draw the same test sources
        (one seed over the same source ids), so their resamples line up.
        """
        both = BootstrapResult({**self.span.point, **self.response.point},
                               pd.concat([self.span.resamples, self.response.resamples], axis=1), self.span.level)
        aucs = both.intervals()
        rows = {}
        for method in self.span.point:
            if f"{method}, {MEAN}" not in both.point:
                continue
            rows[method] = _triple("sentence level", *aucs.loc[method])
            for aggregation in (MOST_SUSPICIOUS, MEAN):
                answer = f"{method}, {aggregation}"
                diff = both.difference(answer, method)
                rows[method] |= _triple(f"answer level, {aggregation}", *aucs.loc[answer])
                rows[method] |= _triple(f"Δ {aggregation} − sentence", diff["diff"], diff["lo"], diff["hi"])
        return pd.DataFrame.from_dict(rows, orient="index")

    def report(self) -> str:
        parts = [
            "Span-level AUC (test, 95% source bootstrap):",
            self.span.intervals().round(3).to_string(),
            "Differences against perplexity:",
            self.span.differences("perplexity").round(3).to_string(),
            "Differences against sentence gap:",
            self.span.differences("sentence gap").round(3).to_string(),
            f"Gap threshold (max F1 on dev): {self.threshold}",
            "Sentence level against answer level:",
            self.levels().round(3).to_string(),
            "By type (AUC against grounded sentences):",
            self.by_type.round(3).to_string(),
            "By task:",
            self.by_task.round(3).to_string(),
            "Feature ablation (LightGBM, fit on dev):",
            self.ablation.intervals().round(3).to_string(),
        ]
        return "\n".join(parts)


def _triple(name: str, value: float, lo: float, hi: float) -> dict[str, float]:
    return {name: value, f"{name} lo": lo, f"{name} hi": hi}


def evaluate(table: pd.DataFrame, seed: int = 0, n_resamples: int = 2000) -> Evaluation:
    """Fit on the development partition, score the test partition, bootstrap over test sources."""
    table = add_answer_columns(table)
    if "partition" not in table.columns:
        table = table.assign(partition=assign_partition(table, seed=seed))
    dev = table[table["partition"] == DEV].reset_index(drop=True)
    test = table[table["partition"] == TEST].reset_index(drop=True)
    y, groups = test["label"].to_numpy(), test["source_id"].to_numpy()
    scores = method_scores(dev, test, seed)
    responses, answer_scores = response_table(test, scores)
    return Evaluation(
        span=source_bootstrap(y, scores, groups, n_resamples, seed),
        response=source_bootstrap(
            responses["label"].to_numpy(), answer_scores, responses["source_id"].to_numpy(), n_resamples, seed
        ),
        threshold=threshold_report(dev, test),
        by_type=breakdown_by_type(test, scores),
        by_task=breakdown_by_task(test, scores),
        ablation=source_bootstrap(y, ablation_scores(dev, test, seed), groups, n_resamples, seed),
    )
