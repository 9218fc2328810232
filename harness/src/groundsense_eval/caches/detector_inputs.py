"""The trained detector's inputs: each scored sentence's features as table columns
(:func:`detector_table`, with the answer-relative :func:`relative_features`), the token-level
aggregations (:mod:`.token_features`) added at dev-tuned thresholds (:func:`with_token_features`,
:func:`tuned_thresholds`), and each feature's orientation as a suspicion score. Used by the
detector-selection protocol (:mod:`..reports.selection`); the shipped detector uses none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd

from groundsense.features import GROUNDING, SIGNED, signed_features

from .extract import TOKEN_COLUMNS, FeatureSet
from .token_features import TOKEN_FEATURES, SentenceTokens

RELATIVE = ("gap_rel", "surprisal_rel")


def relative_features(values: dict[str, np.ndarray], answer: np.ndarray) -> dict[str, np.ndarray]:
    """Each sentence's gap and surprisal minus the token-weighted mean of its answer's
    (``answer`` gives each sentence's answer; NaN sentences are left out of the means).

    A domain's overall offset (transcripts are less predictable than product manuals)
    cancels in these, which should help a detector on a domain it never saw.
    """
    answer = np.asarray(answer)
    n = np.nan_to_num(np.asarray(values["n_tokens"], dtype=float))
    out = {}
    for name, feature in (("gap_rel", "gap"), ("surprisal_rel", "surprisal")):
        x = np.asarray(values[feature], dtype=float)
        ok = np.isfinite(x) & (n > 0)
        mean = np.full(x.shape, np.nan)
        for a in np.unique(answer):
            mine = answer == a
            weight = n[mine & ok]
            if weight.sum() > 0:
                mean[mine] = (x[mine & ok] * weight).sum() / weight.sum()
        out[name] = x - mean
    return out


SENTENCE_INPUTS = [*GROUNDING, "surprisal", "log_n_tokens", *SIGNED, *RELATIVE]
# Features that grow when the context supports the sentence: negated to score suspicion.
# (``drop_min``, the most negative leave-one-out drop, grows too: a sentence that contradicts
# a chunk gains likelihood without it, so its lowest drop falls below 0.)
SUPPORT_ORIENTED = {*GROUNDING, "drop_min", "gap_rest", "gap_rel", "jsd_max",
                    *(f for f in TOKEN_FEATURES if f.startswith(("gap", "tokdrop")))}
# The (dependent, unresolved) pairs tried for the token thresholds, in nats; ties go to the
# first pair in grid order. The a-priori values (2, 2) are in the grid.
THRESHOLD_GRID = tuple((d, u) for d in (1.0, 2.0, 3.0, 4.0) for u in (1.0, 2.0, 3.0, 4.0))


def detector_table(features: FeatureSet) -> pd.DataFrame:
    """The scored sentences of a feature set with every sentence input as a column (token
    features are added per fit by :func:`with_token_features`, whose thresholds are tuned)."""
    table = features.table.copy()
    table["log_n_tokens"] = np.log(table["n_tokens"].astype(float))
    table = table.assign(**signed_features(table["gap"].to_numpy(), table["drops"].tolist()))
    return table.assign(**relative_features({c: table[c].to_numpy() for c in ("gap", "surprisal", "n_tokens")},
                                            table["case_id"].to_numpy()))


def has_token_rows(table: pd.DataFrame) -> bool:
    """Whether the cache behind ``table`` kept per-token rows (``eval extract --token-rows``)."""
    return set(TOKEN_COLUMNS) <= set(table.columns)


def uses_token_features(features: Sequence[str]) -> bool:
    return bool(set(TOKEN_FEATURES) & set(features))


def with_token_features(table: pd.DataFrame, thresholds: tuple[float, float]) -> pd.DataFrame:
    """``table`` with the :data:`TOKEN_FEATURES` at ``(dependent, unresolved)`` nats."""
    tokens = SentenceTokens.of(table).features(*thresholds).set_axis(table.index)
    return pd.concat([table.drop(columns=list(TOKEN_FEATURES), errors="ignore"), tokens], axis=1)


def threshold_scores(dev: pd.DataFrame) -> pd.Series:
    """One dev partition's score of each pair of :data:`THRESHOLD_GRID`: the mean AUC at that
    pair of ``gap_dep`` and ``unresolved_share``, the features each threshold was introduced
    for (the dependent one also moves ``tokdrop_dep``, ``surprisal_dep`` and ``dep_share``)."""
    from sklearn.metrics import roc_auc_score

    y, tokens = dev["label"].to_numpy(), SentenceTokens.of(dev)

    def score(pair: tuple[float, float]) -> float:
        at_pair = tokens.features(*pair, names=("gap_dep", "unresolved_share"))
        return (roc_auc_score(y, suspicion(at_pair, "gap_dep"))
                + roc_auc_score(y, suspicion(at_pair, "unresolved_share"))) / 2

    return pd.Series([score(pair) for pair in THRESHOLD_GRID],
                     index=pd.MultiIndex.from_tuples(THRESHOLD_GRID, names=["dependent", "unresolved"]))


def token_threshold_sweep(devs: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`threshold_scores` of each dev partition, one column per benchmark."""
    return pd.DataFrame({name: threshold_scores(dev) for name, dev in devs.items()})


def tuned_thresholds(sweep: pd.DataFrame) -> tuple[float, float]:
    """The pair with the best mean over the sweep's columns (every benchmark counts the same;
    ties go to the first pair in grid order)."""
    # a label of the (dependent, unresolved) index: a pair of thresholds
    dependent, unresolved = cast("tuple[float, float]", sweep.mean(axis=1).idxmax())
    return dependent, unresolved


def suspicion(table: pd.DataFrame, feature: str) -> np.ndarray:
    """A single feature as a score, higher = more suspicious (orientation fixed in advance)."""
    values = table[feature].to_numpy(dtype=float)
    return -values if feature in SUPPORT_ORIENTED else values
