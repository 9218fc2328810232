"""Sentence features from per-token condition scores (pure numpy).

Every feature is a mean over the sentence's answer tokens. Row 0 of the token scores is
the full context, row 1 no context, row ``2 + k`` the context without chunk ``k``.

The :data:`SIGNED` features keep the sign of the leave-one-out drops (a sentence that
contradicts a chunk may *gain* likelihood when that chunk is removed): ``drop_min`` (the
most negative drop), ``neg_drop_mass`` (the sum of the negative drops' sizes) and
``gap_rest`` (the likelihood gain of the context without its best chunk over no context,
``gap - drop_max``). They are reported, not used by the detectors; on RAGTruth they do not
separate conflicting from baseless sentences (docs/results.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .inputs.text import Span
from .lexical import LEXICAL

__all__ = ["GROUNDING", "BASELINES", "FEATURES", "SIGNED", "SENTENCE_VALUES", "SentenceFeatures",
           "sentence_features", "signed_features", "support_chunk"]

GROUNDING = ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean")
BASELINES = ("surprisal", "n_tokens")
FEATURES = GROUNDING + BASELINES
SIGNED = ("drop_min", "neg_drop_mass", "gap_rest")
# Every value a sentence result's ``features`` holds: the scorer's, then the words' (groundsense.lexical).
SENTENCE_VALUES = FEATURES + SIGNED + LEXICAL


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
        **signed_features(logp_mean[0] - logp_mean[1], drops),
    }
    return SentenceFeatures(values, drops, jsds)


def signed_features(gap: np.ndarray, drops: Sequence[np.ndarray | Sequence[float]]) -> dict[str, np.ndarray]:
    """The :data:`SIGNED` features from each sentence's gap and per-chunk drops.

    ``drops`` holds one 1-D array per sentence (rows of a [S, K] array, or lists of
    different lengths, as in the feature cache); a sentence without drops gets NaN.
    """
    rows = [np.asarray(d, dtype=float) for d in drops]

    def per_sentence(fn: Callable[[np.ndarray], Any]) -> np.ndarray:
        return np.array([fn(d) if d.size else np.nan for d in rows], dtype=float).reshape(len(rows))

    return {
        "drop_min": per_sentence(np.min),
        "neg_drop_mass": per_sentence(lambda d: np.clip(-d, 0.0, None).sum()),
        "gap_rest": np.asarray(gap, dtype=float) - per_sentence(np.max),
    }


def support_chunk(drops: np.ndarray) -> int | None:
    """The chunk whose removal lowers the sentence's likelihood most, or None when no
    chunk's removal lowers it (then nothing supports the sentence)."""
    drops = np.nan_to_num(np.asarray(drops, dtype=float), nan=-np.inf)
    if not drops.size or not (drops > 0).any():
        return None
    return int(np.argmax(drops))
