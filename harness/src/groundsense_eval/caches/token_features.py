"""Token-level aggregations of each cached sentence's per-token scores (candidates beyond the
paper's means; where each comes from is in docs/token-features.md), for every sentence of a
table at once.

The values equal numpy's per-sentence definitions to the bit (``gap[dependent].mean()``,
``np.quantile``, ...), so the reports built on them do not move: a mean is the same pairwise
sum when the sentences of one length are summed as the rows of one array, a quantile is the
same arithmetic on the same two sorted values, and minima, maxima and counts are exact in any
order. harness/tests/caches/test_token_features.py checks them against the definitions sentence by sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np
import pandas as pd

TOKEN_FEATURES = (
    "gap_dep", "gap_wdep", "gap_min", "gap_q10", "gap_q25", "gap_low20",
    "tokdrop_mean", "tokdrop_dep", "tokdrop_q10",
    "unresolved_share", "surprisal_dep", "surprisal_max", "surprisal_q90", "jsd_max", "dep_share",
)
# A token is *evidence-dependent* when the scorer finds it surprising without the context:
# no-context surprisal above DEPENDENT_NATS. It is *unresolved* when it stays surprising with
# the context: surprisal above UNRESOLVED_NATS. The selection tunes both on dev partitions.
DEPENDENT_NATS = 2.0
UNRESOLVED_NATS = 2.0


@dataclass(frozen=True)
class Segments:
    """Consecutive runs of a flat array: run ``i`` is ``values[starts[i]:starts[i] + lengths[i]]``."""

    lengths: np.ndarray

    @cached_property
    def starts(self) -> np.ndarray:
        return np.cumsum(self.lengths) - self.lengths

    @classmethod
    def of_mask(cls, owner: np.ndarray, mask: np.ndarray, n: int) -> Segments:
        """The runs of ``values[mask]``, where ``owner`` gives each value's run among ``n``."""
        return cls(np.bincount(owner[mask], minlength=n))

    def rows(self, values: np.ndarray, length: int, which: np.ndarray) -> np.ndarray:
        """The first ``length`` values of runs ``which`` as the C-ordered rows of one array."""
        return values[self.starts[which][:, None] + np.arange(length)]

    def head_sums(self, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each run's sum of its first ``counts`` values, pairwise as np.sum sums a 1-D array: the
        runs of one count are summed as the rows of one array, each row on its own."""
        out = np.zeros(len(self.lengths))
        for count in np.unique(counts[counts > 0]):
            which = np.flatnonzero(counts == count)
            out[which] = np.add.reduce(self.rows(values, int(count), which), axis=1)
        return out

    def sums(self, values: np.ndarray) -> np.ndarray:
        return self.head_sums(values, self.lengths)

    def head_means(self, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each run's mean of its first ``counts`` values (NaN where it has none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, self.head_sums(values, counts) / counts, np.nan)

    def means(self, values: np.ndarray) -> np.ndarray:
        """Each run's ``values[run].mean()`` to the bit (NaN for an empty run)."""
        return self.head_means(values, self.lengths)

    def reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """``ufunc.reduce`` of each run (NaN for an empty run): for min and max, exact in any order."""
        out = np.full(len(self.lengths), np.nan)
        filled = self.lengths > 0
        out[filled] = ufunc.reduceat(values, self.starts[filled])
        return out

    def quantiles(self, ordered: np.ndarray, q: float) -> np.ndarray:
        """``np.quantile(run, q)`` of each run (numpy's default, linear method) from ``ordered``,
        each run sorted: the same operations on the same two values; NaN when a run holds a NaN."""
        out = np.full(len(self.lengths), np.nan)
        filled = np.flatnonzero(self.lengths > 0)
        n, starts = self.lengths[filled], self.starts[filled]
        virtual = (n - 1) * q
        below = np.minimum(np.floor(virtual).astype(int), n - 1)
        gamma = virtual - below
        a, b = ordered[starts + below], ordered[starts + np.minimum(below + 1, n - 1)]
        between = np.where(gamma >= 0.5, b - (b - a) * (1 - gamma), a + (b - a) * gamma)
        value = np.where(virtual >= n - 1, ordered[starts + n - 1], between)
        out[filled] = np.where(np.isnan(ordered[starts + n - 1]), np.nan, value)
        return out


@dataclass(frozen=True)
class SentenceTokens:
    """Every sentence's per-token scores as flat arrays (sentence after sentence), read once
    from a table with token rows and aggregated at any pair of thresholds."""

    sentences: Segments
    owner: np.ndarray  # each token's sentence
    logp_full: np.ndarray
    logp_noctx: np.ndarray
    jsd_noctx: np.ndarray
    tokdrop: np.ndarray  # the largest leave-one-out drop of each token; NaN without leave-one-out rows

    @classmethod
    def of(cls, table: pd.DataFrame) -> SentenceTokens:
        """From the token columns of a cache table (``eval extract --token-rows``)."""
        full = [np.asarray(v, dtype=float) for v in table["tok_logp_full"]]
        loo = [np.asarray(v, dtype=float) for v in table["tok_logp_loo"]]
        return cls.from_rows(full, [np.asarray(v, dtype=float) for v in table["tok_logp_noctx"]],
                             [np.asarray(v, dtype=float) for v in table["tok_jsd_noctx"]], loo)

    @classmethod
    def from_rows(cls, full: Sequence[np.ndarray], noctx: Sequence[np.ndarray], jsd_noctx: Sequence[np.ndarray],
                  loo: Sequence[np.ndarray]) -> SentenceTokens:
        """From each sentence's token rows: log p with the full context and without it, the
        no-context JSD, and the leave-one-out log p (K rows of the sentence's tokens, flat)."""
        sentences = Segments(np.array([len(f) for f in full], dtype=int))
        owner = np.repeat(np.arange(len(full)), sentences.lengths)
        logp_full = np.concatenate([*full, np.zeros(0)])
        loo_lengths = np.array([len(x) for x in loo], dtype=int)
        loo_owner = np.repeat(np.arange(len(loo)), loo_lengths)
        offset = np.arange(loo_lengths.sum()) - np.repeat(np.cumsum(loo_lengths) - loo_lengths, loo_lengths)
        token = sentences.starts[loo_owner] + offset % np.maximum(sentences.lengths[loo_owner], 1)
        tokdrop = np.full(len(logp_full), -np.inf)
        with np.errstate(invalid="ignore"):  # a NaN score stays NaN, as in max()
            np.maximum.at(tokdrop, token, logp_full[token] - np.concatenate([*loo, np.zeros(0)]))
        tokdrop[(loo_lengths == 0)[owner]] = np.nan
        return cls(sentences, owner, logp_full, np.concatenate([*noctx, np.zeros(0)]),
                   np.concatenate([*jsd_noctx, np.zeros(0)]), tokdrop)

    def features(self, dependent_nats: float = DEPENDENT_NATS, unresolved_nats: float = UNRESOLVED_NATS,
                 names: Sequence[str] = TOKEN_FEATURES) -> pd.DataFrame:
        """The :data:`TOKEN_FEATURES` in ``names`` of every sentence, one row each; NaN where
        undefined (a sentence without tokens; no leave-one-out rows).

        Orientation as the means': gap and drop aggregations are larger when the context
        supports the sentence; ``unresolved_share`` and the surprisals are larger when it does not.
        """
        n = len(self.sentences.lengths)
        gap, surprisal, surprisal_noctx = self.logp_full - self.logp_noctx, -self.logp_full, -self.logp_noctx
        dependent = surprisal_noctx > dependent_nats
        dependents = Segments.of_mask(self.owner, dependent, n)
        has_dependent = dependents.lengths > 0
        tokens = self.sentences

        def over_dependent(values: np.ndarray) -> np.ndarray:
            return np.where(has_dependent, dependents.means(values[dependent]), tokens.means(values))

        def ordered(values: np.ndarray) -> np.ndarray:
            return values[np.lexsort((values, self.owner))]

        ordered_gap = cache(lambda: ordered(gap))  # three features read it; sorted once, if asked for

        def lowest_fifth_mean() -> np.ndarray:
            counts = np.maximum(1, np.ceil(0.2 * tokens.lengths).astype(int))
            return tokens.head_means(ordered_gap(), np.where(tokens.lengths > 0, counts, 0))

        def unresolved_share() -> np.ndarray:
            unresolved = np.bincount(self.owner[dependent & (surprisal > unresolved_nats)], minlength=n)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(has_dependent, unresolved / dependents.lengths, 0.0)

        def weighted_gap() -> np.ndarray:
            weight = surprisal_noctx.clip(0)
            return tokens.sums(gap * weight) / np.maximum(tokens.sums(weight), 1e-9)

        features = {
            "gap_dep": lambda: over_dependent(gap),
            "gap_wdep": weighted_gap,
            "gap_min": lambda: tokens.reduce(np.minimum, gap),
            "gap_q10": lambda: tokens.quantiles(ordered_gap(), 0.1),
            "gap_q25": lambda: tokens.quantiles(ordered_gap(), 0.25),
            "gap_low20": lowest_fifth_mean,
            "tokdrop_mean": lambda: tokens.means(self.tokdrop),
            "tokdrop_dep": lambda: over_dependent(self.tokdrop),
            "tokdrop_q10": lambda: tokens.quantiles(ordered(self.tokdrop), 0.1),
            "unresolved_share": unresolved_share,
            "surprisal_dep": lambda: over_dependent(surprisal),
            "surprisal_max": lambda: tokens.reduce(np.maximum, surprisal),
            "surprisal_q90": lambda: tokens.quantiles(ordered(surprisal), 0.9),
            "jsd_max": lambda: tokens.reduce(np.maximum, self.jsd_noctx),
            "dep_share": lambda: np.bincount(self.owner[dependent], minlength=n) / np.maximum(tokens.lengths, 1),
        }
        empty = tokens.lengths == 0
        return pd.DataFrame({name: np.where(empty, np.nan, features[name]()) for name in names})
