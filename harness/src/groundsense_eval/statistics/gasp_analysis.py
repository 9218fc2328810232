"""Reproduce the GASP authors' published analysis (``ANALYSIS.md``, ``THRESHOLD_FIX.md``) from
their released per-sentence and per-response feature tables.

Their protocol: LightGBM (300 trees, learning rate 0.05, 31 leaves, seed 42) scored out of fold
under 5-fold CV (``StratifiedKFold`` for responses, ``StratifiedGroupKFold`` by response for
sentences, both shuffled with seed 42); the printed AUC is the *mean* of 1,000 bootstrap
resamples (responses resampled with replacement; sentences by response), all drawn in order
from one ``numpy.random.default_rng(0)`` stream. The raw features have "higher = grounded"
orientation, so raw AUCs below 0.5 mean the feature works; their threshold-only line printed
AUC(+sum) = 0.327 where the detector score is -sum (AUC 0.673).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from lightgbm import LGBMClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from groundsense.calibration import resample_aucs

from ..data.locations import reference_dir

GROUND = ["gap", "jsd_noctx", "drop_max", "jsd_loo_max"]
BASELINES = ["mean_surprisal", "length"]
SENTENCE_FILE = "qwen2.5-1.5b-k5-sentence.csv"
RESPONSE_FILE = "qwen2.5-1.5b-k5-response.csv"
_RESAMPLES = 1000

# (label, feature columns) in the order ANALYSIS.md prints them; the order fixes the RNG stream.
LEVEL_METHODS: list[tuple[str, list[str]]] = [
    ("perplexity", ["mean_surprisal"]),
    ("length", ["length"]),
    ("grounding (GASP)", GROUND),
    ("grounding + baselines", GROUND + BASELINES),
    *[(c, [c]) for c in GROUND],
    ("no-context only", ["gap", "jsd_noctx"]),
    ("leave-one-out only", ["drop_max", "jsd_loo_max"]),
    ("likelihood only", ["gap", "drop_max"]),
    ("divergence only", ["jsd_noctx", "jsd_loo_max"]),
]
AGGREGATIONS: list[tuple[str, list[str]]] = [
    ("aggregation = max", ["gap", "jsd_noctx", "drop_max", "jsd_loo_max"]),
    ("aggregation = mean", ["gap", "jsd_noctx", "drop_mean", "jsd_loo_mean"]),
    ("aggregation = top-2 sum", ["gap", "jsd_noctx", "drop_top2", "jsd_loo_top2"]),
]


def load_reference_table(path: str | Path) -> pd.DataFrame:
    """Read a GASP feature CSV and derive the per-chunk aggregates and ``length``.

    ``chunk_drops``/``chunk_jsds`` are JSON lists (one value per chunk, logp(full) - logp(chunk
    removed) and the JSD): ``drop_max/mean/top2`` and ``jsd_loo_max/mean/top2`` are their max,
    mean and sum of the two largest. ``length`` is ``n_tok`` (sentences) or ``n_ans`` (responses).
    """
    table = pd.read_csv(path)
    for column, prefix in (("chunk_drops", "drop"), ("chunk_jsds", "jsd_loo")):
        values = table[column].map(json.loads)
        table[f"{prefix}_max"] = values.map(lambda v: float(np.max(v)) if v else np.nan)
        table[f"{prefix}_mean"] = values.map(lambda v: float(np.mean(v)) if v else np.nan)
        table[f"{prefix}_top2"] = values.map(lambda v: float(np.sum(sorted(v)[-2:])) if v else np.nan)
    table["length"] = table["n_ans"] if "n_ans" in table.columns else table["n_tok"]
    return table


def _folds(table: pd.DataFrame, grouped: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    y = table["label"].to_numpy()
    if grouped:
        splitter = StratifiedGroupKFold(5, shuffle=True, random_state=42)
        return list(splitter.split(table, y, table["resp_id"]))
    return list(StratifiedKFold(5, shuffle=True, random_state=42).split(table, y))


def out_of_fold_scores(
    table: pd.DataFrame, columns: list[str], grouped: bool, folds: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> np.ndarray:
    """The authors' LightGBM, fit per fold, predicting P(unsupported) on the held-out fold
    (``folds``: the table's, when already split; the split is seeded, so always the same)."""
    x, y = table[columns].to_numpy(), table["label"].to_numpy()
    scores = np.zeros(len(table))
    for train, held_out in folds or _folds(table, grouped):
        model = LGBMClassifier(
            n_estimators=300, learning_rate=0.05, num_leaves=31, random_state=42, n_jobs=1, verbose=-1
        )
        model.fit(x[train], y[train])
        scores[held_out] = np.asarray(model.predict_proba(x[held_out]))[:, 1]
    return scores


def threshold_only_scores(
    table: pd.DataFrame, grouped: bool = True, folds: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> np.ndarray:
    """Training-free score -(sum of z-scored GROUND features), z statistics from each training fold."""
    scores = np.zeros(len(table))
    features = table[GROUND]
    for train, held_out in folds or _folds(table, grouped):
        mean, std = features.iloc[train].mean(), features.iloc[train].std() + 1e-9
        scores[held_out] = -((features.iloc[held_out] - mean) / std).sum(axis=1).to_numpy()
    return scores


class _AuthorsBootstrap:
    """Replays the authors' single RNG stream: each call draws exactly what theirs drew."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def counts(self, table: pd.DataFrame, grouped: bool) -> np.ndarray:
        if not grouped:
            n = len(table)
            return np.stack([np.bincount(self.rng.integers(0, n, n), minlength=n) for _ in range(_RESAMPLES)])
        _, group_index = np.unique(table["resp_id"].to_numpy(), return_inverse=True)
        n_groups = int(group_index.max()) + 1
        draws = [np.bincount(self.rng.choice(n_groups, size=n_groups), minlength=n_groups) for _ in range(_RESAMPLES)]
        return np.stack(draws)[:, group_index]


def _summary(values: np.ndarray) -> dict[str, float]:
    values = values[~np.isnan(values)]
    return {"value": float(values.mean()), "lo": float(np.percentile(values, 2.5)),
            "hi": float(np.percentile(values, 97.5))}


def reproduce_analysis(directory: str | Path | None = None) -> pd.DataFrame:
    """The Qwen2.5-1.5B (K=5) section of ``ANALYSIS.md`` plus the corrected threshold-only AUC.

    Returns rows indexed by ``(section, method)`` with ``value`` (bootstrap mean for the
    bootstrapped sections, plain AUC otherwise), ``lo`` and ``hi`` (NaN where not bootstrapped).
    Sections: ``response``, ``sentence``, ``aggregation``, ``threshold``.
    """
    folder = reference_dir(directory)
    sentences = load_reference_table(folder / SENTENCE_FILE)
    responses = load_reference_table(folder / RESPONSE_FILE)
    boot = _AuthorsBootstrap()
    rows: dict[tuple[str, str], dict[str, float]] = {}
    splits = {"response": _folds(responses, False), "sentence": _folds(sentences, True)}  # seeded: split once
    for section, table, grouped in (("response", responses, False), ("sentence", sentences, True)):
        y, folds = table["label"].to_numpy(), splits[section]
        scores = {}
        for label, columns in LEVEL_METHODS:
            scores[label] = out_of_fold_scores(table, columns, grouped, folds)
            rows[(section, label)] = _summary(resample_aucs(y, scores[label], boot.counts(table, grouped)))
        counts = boot.counts(table, grouped)
        diff = resample_aucs(y, scores["grounding (GASP)"], counts) - resample_aucs(y, scores["perplexity"], counts)
        rows[(section, "grounding vs perplexity")] = {**_summary(diff), "p": float(np.mean(diff <= 0))}
    y = sentences["label"].to_numpy()
    for label, columns in AGGREGATIONS:
        scores_ = out_of_fold_scores(sentences, columns, True, splits["sentence"])
        rows[("aggregation", label)] = _summary(resample_aucs(y, scores_, boot.counts(sentences, True)))
    for column in ["drop_max", "jsd_loo_max", "gap"]:
        rows[("threshold", f"raw {column}")] = {"value": roc_auc_score(y, sentences[column])}
    z = (sentences[GROUND] - sentences[GROUND].mean()) / (sentences[GROUND].std() + 1e-9)
    rows[("threshold", "standardized sum (as published, sign-flipped)")] = {"value": roc_auc_score(y, z.sum(axis=1))}
    rows[("threshold", "threshold-only (grouped CV, per-fold)")] = {
        "value": roc_auc_score(y, threshold_only_scores(sentences, folds=splits["sentence"]))
    }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["section", "method"])
    return frame
