"""F's answer aggregation, chosen again (docs/detector-selection.md, "F's answer aggregation,
chosen again"; issue #52): F's sentence score as it will ship, each signal ranked against the
shipped calibration's RAGTruth training answers, and four ways to aggregate an answer's
sentences, compared on the dev partitions by their lowest answer AUC over the three benchmarks
and RAGTruth's three tasks. No test partition is read.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from groundsense.calibration import (
    LEXICAL_FUSION_SIGNALS,
    RankFusion,
    length_aware_noisy_or,
    top_two_mean,
    unsupported_probability,
)

from ..caches.extract import FeatureSet
from ..statistics.benchmark_result import partitioned
from .tables import markdown_table

SIGNALS = LEXICAL_FUSION_SIGNALS["full"]  # F's (docs/results/selection-F.md)
AGGREGATIONS = ("the maximum", "the mean of the top two", "the noisy-OR", "the length-aware noisy-OR")
# The protocol's choice, frozen when its dev table (docs/results/aggregation-F.md) was committed,
# before any test figure of it existed; the report refuses a dev table that chooses otherwise.
CHOSEN = "the length-aware noisy-OR"


def signal_values(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """F's signals of ``rows`` (:func:`.fusion.fusion_table` rows), by name."""
    return {name: rows[name].to_numpy(float) for name in SIGNALS}


def training_fusion(training: pd.DataFrame) -> RankFusion:
    """F with each signal's reference from the training sentences, as a fusion file keeps it;
    its :meth:`~RankFusion.score` of :func:`signal_values` is F (NaN where a signal is)."""
    unranked = RankFusion(None, "", {}, dict.fromkeys(SIGNALS, []), 0.0, 0.0)
    return unranked.with_references(signal_values(training))


def probability_map(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The intercept and coefficient of a logistic map from an F score to P(unsupported), fitted
    on the training sentences' (score, label) (:func:`~groundsense.calibration.fusion.unsupported_probability`)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression().fit(np.asarray(scores)[:, None], np.asarray(labels, dtype=int))
    return float(model.intercept_[0]), float(model.coef_[0, 0])


def aggregated(rows: pd.DataFrame, score: np.ndarray, probability: np.ndarray) -> pd.DataFrame:
    """Per answer (in order of first appearance): its label (any unsupported sentence) and each
    of :data:`AGGREGATIONS` of its sentences' scores (the noisy-ORs as ``−Σ log(1 − p)``, in the
    same order as ``1 − ∏(1 − p)``)."""
    frame = rows[["case_id", "label"]].assign(s=score, p=probability)
    by = frame.groupby("case_id", sort=False)
    return pd.DataFrame({
        "label": by["label"].max(),
        "the maximum": by["s"].max(),
        "the mean of the top two": by["s"].apply(lambda s: top_two_mean(s.to_numpy())),
        "the noisy-OR": -by["p"].apply(lambda p: np.log1p(-np.clip(p.to_numpy(), 0, 1 - 1e-9)).sum()),
        "the length-aware noisy-OR": by["p"].apply(lambda p: length_aware_noisy_or(p.to_numpy())),
    })


def dev_sets(tables: Mapping[str, pd.DataFrame], seed: int) -> dict[str, pd.DataFrame]:
    """Each benchmark's dev partition, then RAGTruth's by task: the six sets of the protocol."""
    devs = {name: partitioned(table, seed)[0] for name, table in tables.items()}
    sets = dict(devs)
    if "ragtruth" in devs:
        rag = devs["ragtruth"]
        sets |= {f"ragtruth · {task}": rag[rag["task"] == task] for task in sorted(rag["task"].unique())}
    return sets


def aggregation_table(training: pd.DataFrame, tables: Mapping[str, pd.DataFrame], seed: int = 0) -> pd.DataFrame:
    """Answer AUC of each aggregation (rows) on each dev set (columns), and each one's lowest."""
    from sklearn.metrics import roc_auc_score

    fusion = training_fusion(training)
    trained = training.assign(f=fusion.score(signal_values(training))).dropna(subset=["f"])
    intercept, coefficient = probability_map(trained["f"].to_numpy(), trained["label"].to_numpy())
    aucs: dict[str, dict[str, float]] = {}
    for name, rows in dev_sets(tables, seed).items():
        score = fusion.score(signal_values(rows))
        if np.isnan(score).any():
            raise ValueError(f"{int(np.isnan(score).sum())} sentences of {name}'s dev partition lack one of F's "
                             f"signals {SIGNALS}: run `groundsense eval lexical` on its cache first")
        answers = aggregated(rows, score, unsupported_probability(score, intercept, coefficient))
        for aggregation in AGGREGATIONS:
            aucs.setdefault(aggregation, {})[name] = roc_auc_score(answers["label"], answers[aggregation])
    table = pd.DataFrame.from_dict(aucs, orient="index")
    return table.assign(lowest=table.min(axis=1))


def chosen(table: pd.DataFrame) -> str:
    """The aggregation whose lowest answer AUC is highest (the first in :data:`AGGREGATIONS` on ties)."""
    return str(table["lowest"].idxmax())


def aggregation_report(training: FeatureSet, training_table: pd.DataFrame, sets: Mapping[str, FeatureSet],
                       tables: Mapping[str, pd.DataFrame], command: str, seed: int = 0) -> str:
    """The Markdown report: the dev table and its choice, refused unless it is :data:`CHOSEN`."""
    table = aggregation_table(training_table, tables, seed)
    choice = chosen(table)
    if choice != CHOSEN:
        raise ValueError(f"the dev table now chooses {choice}, not the frozen {CHOSEN}: the data or the code "
                         "changed since the choice was committed")
    sets_line = "; ".join(f"{name}: {fs.key}, {fs.table['case_id'].nunique()} answers scored"
                          for name, fs in sets.items())
    return "\n".join([
        "# F's answer aggregation, chosen on the dev partitions", "", f"`{command}`", "",
        "Protocol and rule: docs/detector-selection.md (\"F's answer aggregation, chosen again\"). No test "
        f"partition is read. Data: {sets_line}. F's references and its noisy-OR's probability map: "
        f"{training.key}, {training_table['case_id'].nunique():,} RAGTruth training answers "
        f"({len(training_table):,} sentences).", "",
        "## Answer AUC on each dev set", "",
        "F is the mean of the ranks of `" + "`, `".join(SIGNALS) + "` among the training sentences' values. "
        "Answer label: any unsupported sentence. *lowest*: the aggregation's lowest AUC over the six sets.", "",
        markdown_table(table), "",
        f"Chosen: **{choice}** (the highest lowest), frozen in `groundsense_eval.reports.aggregation.CHOSEN` "
        "before any test figure of it existed.", "",
    ])
