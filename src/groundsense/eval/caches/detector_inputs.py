"""The trained detector's inputs: each scored sentence's features as table columns
(:func:`detector_table`, with the answer-relative :func:`relative_features`), the token-level
aggregations (:func:`token_features`) added at dev-tuned thresholds (:func:`with_token_features`,
:func:`tuned_thresholds`), and each feature's orientation as a suspicion score. Used by the
detector-selection protocol (:mod:`..reports.selection`); the shipped detector uses none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache

import numpy as np
import pandas as pd

from ...features import GROUNDING, SIGNED, signed_features
from .extract import TOKEN_COLUMNS, FeatureSet

# Token-level aggregations of one sentence's per-token scores (candidates beyond the paper's
# means; where each comes from is in docs/token-features.md). A token is *evidence-dependent*
# when the scorer finds it surprising without the context: no-context surprisal above
# DEPENDENT_NATS.
TOKEN_FEATURES = (
    "gap_dep", "gap_wdep", "gap_min", "gap_q10", "gap_q25", "gap_low20",
    "tokdrop_mean", "tokdrop_dep", "tokdrop_q10",
    "unresolved_share", "surprisal_dep", "surprisal_max", "surprisal_q90", "jsd_max", "dep_share",
)
DEPENDENT_NATS = 2.0
UNRESOLVED_NATS = 2.0


def token_features(logp: np.ndarray, jsd: np.ndarray, dependent_nats: float = DEPENDENT_NATS,
                   unresolved_nats: float = UNRESOLVED_NATS, names: Sequence[str] = TOKEN_FEATURES) -> dict[str, float]:
    """The :data:`TOKEN_FEATURES` (those in ``names``, each computed only if asked for) of one
    sentence from its tokens' rows ([conditions, n], as in :func:`groundsense.features.sentence_features`);
    NaN where undefined (no token; no leave-one-out rows). The two thresholds default to their
    a-priori values; the detector selection tunes them on dev partitions
    (docs/detector-selection.md, "Token thresholds").

    Orientation as the means': gap and drop aggregations are larger when the context
    supports the sentence; ``unresolved_share`` and the surprisals are larger when it does not.
    """
    logp, jsd = np.asarray(logp, dtype=float), np.asarray(jsd, dtype=float)
    if logp.shape[1] == 0:
        return dict.fromkeys(names, np.nan)
    gap = logp[0] - logp[1]
    surprisal, surprisal_noctx = -logp[0], -logp[1]
    dependent = surprisal_noctx > dependent_nats
    tokdrop = (logp[0] - logp[2:]).max(axis=0) if len(logp) > 2 else np.full(gap.shape, np.nan)

    def over_dependent(values: np.ndarray) -> float:
        return mean(values[dependent]) if dependent.any() else mean(values)

    gap_sorted = cache(lambda: np.sort(gap))  # three features read it; sorted once, if asked for

    def lowest_fifth_mean() -> float:
        return mean(gap_sorted()[: max(1, int(np.ceil(0.2 * gap.size)))])

    def unresolved_share() -> float:
        return mean(surprisal[dependent] > unresolved_nats) if dependent.any() else 0.0

    features = {
        "gap_dep": lambda: over_dependent(gap),
        "gap_wdep": lambda: float((gap * surprisal_noctx.clip(0)).sum() / max(surprisal_noctx.clip(0).sum(), 1e-9)),
        "gap_min": lambda: float(gap.min()),
        "gap_q10": lambda: sorted_quantile(gap_sorted(), 0.1),
        "gap_q25": lambda: sorted_quantile(gap_sorted(), 0.25),
        "gap_low20": lowest_fifth_mean,
        "tokdrop_mean": lambda: mean(tokdrop),
        "tokdrop_dep": lambda: over_dependent(tokdrop),
        "tokdrop_q10": lambda: sorted_quantile(np.sort(tokdrop), 0.1),
        "unresolved_share": unresolved_share,
        "surprisal_dep": lambda: over_dependent(surprisal),
        "surprisal_max": lambda: float(surprisal.max()),
        "surprisal_q90": lambda: sorted_quantile(np.sort(surprisal), 0.9),
        "jsd_max": lambda: float(jsd[1].max()),
        "dep_share": lambda: mean(dependent),
    }
    return {name: features[name]() for name in names}


def mean(values: np.ndarray) -> float:
    """``values.mean()`` to the bit (the same sum, divided by the count) without np.mean's
    per-call overhead, which the token features pay about a million times per selection report."""
    return float(values.sum() / values.size)


def sorted_quantile(ordered: np.ndarray, q: float) -> float:
    """``np.quantile(values, q)`` of ``ordered``, the values sorted: numpy's default (linear)
    method, operation for operation, so the result is the same to the bit. The selection reports
    take four quantiles of every sentence at each tuned threshold pair, and np.quantile's
    per-call overhead made most of their time."""
    n = ordered.size
    if np.isnan(ordered[-1]):  # np.sort puts NaN last; np.quantile of anything with a NaN is NaN
        return float("nan")
    virtual = (n - 1) * q  # numpy's virtual index for the linear method
    if virtual >= n - 1:
        return float(ordered[-1])
    if virtual < 0:
        return float(ordered[0])
    below = int(np.floor(virtual))
    gamma, a, b = virtual - below, float(ordered[below]), float(ordered[below + 1])
    return b - (b - a) * (1 - gamma) if gamma >= 0.5 else a + (b - a) * gamma


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
    tokens = pd.DataFrame([token_features(*token_rows(row), *thresholds) for row in table.itertuples()],
                          index=table.index, columns=list(TOKEN_FEATURES))
    return pd.concat([table.drop(columns=list(TOKEN_FEATURES), errors="ignore"), tokens], axis=1)


def threshold_scores(dev: pd.DataFrame) -> pd.Series:
    """One dev partition's score of each pair of :data:`THRESHOLD_GRID`: the mean AUC at that
    pair of ``gap_dep`` and ``unresolved_share``, the features each threshold was introduced
    for (the dependent one also moves ``tokdrop_dep``, ``surprisal_dep`` and ``dep_share``)."""
    from sklearn.metrics import roc_auc_score

    y, rows = dev["label"].to_numpy(), [token_rows(row) for row in dev.itertuples()]

    def score(pair: tuple[float, float]) -> float:
        at_pair = pd.DataFrame([token_features(*r, *pair, names=("gap_dep", "unresolved_share")) for r in rows])
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
    return tuple(sweep.mean(axis=1).idxmax())


def token_rows(row) -> tuple[np.ndarray, np.ndarray]:
    """One cached sentence's [conditions, n] log p and JSD rows (as the detector builds them)."""
    n = len(row.tok_logp_full)
    loo_logp = np.asarray(row.tok_logp_loo, dtype=float).reshape(-1, n) if n else np.zeros((0, 0))
    loo_jsd = np.asarray(row.tok_jsd_loo, dtype=float).reshape(-1, n) if n else np.zeros((0, 0))
    logp = np.vstack([row.tok_logp_full, row.tok_logp_noctx, loo_logp]) if n else np.zeros((2, 0))
    jsd = np.vstack([np.zeros(n), row.tok_jsd_noctx, loo_jsd]) if n else np.zeros((2, 0))
    return logp, jsd


def suspicion(table: pd.DataFrame, feature: str) -> np.ndarray:
    """A single feature as a score, higher = more suspicious (orientation fixed in advance)."""
    values = table[feature].to_numpy(dtype=float)
    return -values if feature in SUPPORT_ORIENTED else values
