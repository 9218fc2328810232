"""Sentence features from per-token condition scores (pure numpy).

Every feature is a mean over the sentence's answer tokens. Row 0 of the token scores is
the full context, row 1 no context, row ``2 + k`` the context without chunk ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .text import Span

GROUNDING = ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean")
BASELINES = ("surprisal", "n_tokens")
FEATURES = GROUNDING + BASELINES


@dataclass(frozen=True)
class SentenceFeatures:
    values: dict[str, np.ndarray]  # feature name -> [n_sentences]; NaN where undefined
    drops: np.ndarray  # [n_sentences, K]: logp_full - logp_without_k
    jsds: np.ndarray  # [n_sentences, K]: JSD(p_full, p_without_k)


def assign_tokens(offsets: np.ndarray, spans: list[Span]) -> np.ndarray:
    """Sentence index of each token (the one it overlaps most), or -1 for tokens that
    fall between sentences (whitespace)."""
    starts = np.array([s.start for s in spans])[:, None]
    ends = np.array([s.end for s in spans])[:, None]
    overlap = np.minimum(offsets[:, 1], ends) - np.maximum(offsets[:, 0], starts)  # [S, T]
    owner = overlap.argmax(axis=0)
    return np.where(overlap.max(axis=0) > 0, owner, -1)


def sentence_features(logp: np.ndarray, jsd: np.ndarray, owner: np.ndarray, n_sentences: int) -> SentenceFeatures:
    """Average token scores over each sentence's tokens.

    ``logp`` and ``jsd`` are [conditions, tokens]; with only two rows (two-pass mode) the
    leave-one-out features are NaN and ``drops``/``jsds`` have zero columns.
    """
    members = (owner[None, :] == np.arange(n_sentences)[:, None]).astype(float)  # [S, T]
    n_tokens = members.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = lambda rows: (rows @ members.T) / n_tokens  # noqa: E731  [C, T] -> [C, S]
        logp_mean, jsd_mean = mean(logp), mean(jsd)
    drops = (logp_mean[0] - logp_mean[2:]).T  # [S, K]
    jsds = jsd_mean[2:].T
    has_loo = drops.shape[1] > 0
    reduce = lambda fn, x: fn(x, axis=1) if has_loo else np.full(n_sentences, np.nan)  # noqa: E731
    values = {
        "gap": logp_mean[0] - logp_mean[1],
        "jsd_noctx": jsd_mean[1],
        "drop_max": reduce(np.max, drops),
        "drop_mean": reduce(np.mean, drops),
        "jsd_loo_max": reduce(np.max, jsds),
        "jsd_loo_mean": reduce(np.mean, jsds),
        "surprisal": -logp_mean[0],
        "n_tokens": n_tokens,
    }
    return SentenceFeatures(values, drops, jsds)
