"""Sentence scoring methods over the per-sentence feature table; higher score = more suspicious.

Feature orientation (from the scorer): ``gap``, ``jsd_noctx``, ``drop_*`` and ``jsd_loo_*`` are
larger when the context supports the sentence, so the training-free scores negate them. The
feature lists are the library's (:data:`groundsense.features.GROUNDING` and ``BASELINES``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from lightgbm import LGBMClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from groundsense.calibration import STANDARDISED, sensitivity_score, standardisation
from groundsense.features import BASELINES, GROUNDING

ABLATIONS: dict[str, Sequence[str]] = {
    **{feature: [feature] for feature in GROUNDING},
    "no-context view": ["gap", "jsd_noctx"],
    "leave-one-out view": ["drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean"],
    "all six": GROUNDING,
}


def answer_mean(values: pd.Series | np.ndarray, sentences: pd.DataFrame) -> pd.Series:
    """Per answer (``case_id``, in order of appearance), the mean of the sentences' ``values``
    weighted by their ``n_tokens``."""
    n = sentences["n_tokens"].astype(float)
    case = sentences["case_id"]
    weighted = pd.Series(values, index=sentences.index, dtype=float) * n
    return weighted.groupby(case, sort=False).sum() / n.groupby(case, sort=False).sum()


def add_answer_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Add ``answer_gap`` (token-weighted mean sentence gap of the answer) where the table does
    not carry it already."""
    table = table.copy()
    if "answer_gap" not in table.columns:
        table["answer_gap"] = table["case_id"].map(answer_mean(table["gap"], table))
    return table


def standardised_sum(dev: pd.DataFrame, test: pd.DataFrame) -> np.ndarray:
    """Training-free: the library's ``sensitivity`` score (-(sum of z-scores)) with its
    standardisation (:func:`groundsense.calibration.calibration.standardisation`) fitted on ``dev``."""
    stats = standardisation({f: dev[f].to_numpy() for f in STANDARDISED})
    return sensitivity_score(stats, {f: test[f].to_numpy() for f in STANDARDISED})


def lightgbm_scores(dev: pd.DataFrame, test: pd.DataFrame, features: Sequence[str], seed: int = 0) -> np.ndarray:
    """P(unsupported) on ``test`` from a small deterministic LightGBM fit on ``dev``."""
    model = LGBMClassifier(
        n_estimators=200,
        learning_rate=0.05,
        num_leaves=7,
        min_child_samples=20,
        random_state=seed,
        n_jobs=1,
        deterministic=True,
        force_col_wise=True,
        verbose=-1,
    )
    columns = list(features)
    model.fit(dev[columns].to_numpy(), dev["label"].to_numpy())
    return np.asarray(model.predict_proba(test[columns].to_numpy()))[:, 1]


def logistic_scores(
    dev: pd.DataFrame, test: pd.DataFrame, features: Sequence[str], target: str = "label"
) -> np.ndarray:
    """P(``target`` = 1) on ``test`` from a standardised logistic regression fit on ``dev``."""
    columns = list(features)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(dev[columns].to_numpy(dtype=float), dev[target].to_numpy())
    return model.predict_proba(test[columns].to_numpy(dtype=float))[:, 1]


def two_pass_scores(test: pd.DataFrame) -> dict[str, np.ndarray]:
    """The methods that need no leave-one-out pass and no fitting (answer columns required);
    ``word overlap`` (no model pass at all) where the table carries the lexical signals."""
    scores = {
        "perplexity": test["surprisal"].to_numpy(),
        "length": test["n_tokens"].to_numpy(dtype=float),
        "answer gap": -test["answer_gap"].to_numpy(),
        "sentence gap": -test["gap"].to_numpy(),
    }
    if "overlap_chunk" in test.columns:
        scores["word overlap"] = test["overlap_chunk"].to_numpy(dtype=float)
    return scores


def method_scores(dev: pd.DataFrame, test: pd.DataFrame, seed: int = 0) -> dict[str, np.ndarray]:
    """Every compared method's score for the ``test`` sentences (answer columns required).

    ``length`` scores longer sentences as more suspicious: a longer sentence carries more
    claims, so more chances to overlap an unsupported span. ``standardised sum`` is the
    library's ``sensitivity`` score rule; ``LightGBM`` (the six grounding features) and
    ``LightGBM + baselines`` (with surprisal and length) are the paper's trained scores.
    """
    return {
        **two_pass_scores(test),
        "standardised sum": standardised_sum(dev, test),
        "LightGBM": lightgbm_scores(dev, test, GROUNDING, seed),
        "LightGBM + baselines": lightgbm_scores(dev, test, [*GROUNDING, *BASELINES], seed),
    }


def ablation_scores(dev: pd.DataFrame, test: pd.DataFrame, seed: int = 0) -> dict[str, np.ndarray]:
    """LightGBM on each feature subset of :data:`ABLATIONS`, fit on dev, scored on test."""
    return {name: lightgbm_scores(dev, test, features, seed) for name, features in ABLATIONS.items()}
