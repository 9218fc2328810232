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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .text import Span

GROUNDING = ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean")
BASELINES = ("surprisal", "n_tokens")
FEATURES = GROUNDING + BASELINES
SIGNED = ("drop_min", "neg_drop_mass", "gap_rest")


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


def signed_features(gap: np.ndarray, drops: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The :data:`SIGNED` features from each sentence's gap and per-chunk drops.

    ``drops`` holds one 1-D array per sentence (rows of a [S, K] array, or lists of
    different lengths, as in the feature cache); a sentence without drops gets NaN.
    """
    rows = [np.asarray(d, dtype=float) for d in drops]

    def per_sentence(fn) -> np.ndarray:
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
                   unresolved_nats: float = UNRESOLVED_NATS) -> dict[str, float]:
    """The :data:`TOKEN_FEATURES` of one sentence from its tokens' rows ([conditions, n], as
    in :func:`sentence_features`); NaN where undefined (no token; no leave-one-out rows).
    The two thresholds default to their a-priori values; the detector selection tunes them on
    dev partitions (docs/detector-selection.md, "Token thresholds").

    Orientation as the means': gap and drop aggregations are larger when the context
    supports the sentence; ``unresolved_share`` and the surprisals are larger when it does not.
    """
    logp, jsd = np.asarray(logp, dtype=float), np.asarray(jsd, dtype=float)
    if logp.shape[1] == 0:
        return dict.fromkeys(TOKEN_FEATURES, np.nan)
    gap = logp[0] - logp[1]
    surprisal, surprisal_noctx = -logp[0], -logp[1]
    dependent = surprisal_noctx > dependent_nats
    tokdrop = (logp[0] - logp[2:]).max(axis=0) if len(logp) > 2 else np.full(gap.shape, np.nan)
    low = np.sort(gap)[: max(1, int(np.ceil(0.2 * gap.size)))]

    def over_dependent(values: np.ndarray) -> float:
        return float(values[dependent].mean()) if dependent.any() else float(values.mean())

    return {
        "gap_dep": over_dependent(gap),
        "gap_wdep": float((gap * surprisal_noctx.clip(0)).sum() / max(surprisal_noctx.clip(0).sum(), 1e-9)),
        "gap_min": float(gap.min()),
        "gap_q10": float(np.quantile(gap, 0.1)),
        "gap_q25": float(np.quantile(gap, 0.25)),
        "gap_low20": float(low.mean()),
        "tokdrop_mean": float(tokdrop.mean()),
        "tokdrop_dep": over_dependent(tokdrop),
        "tokdrop_q10": float(np.quantile(tokdrop, 0.1)),
        "unresolved_share": float((surprisal[dependent] > unresolved_nats).mean()) if dependent.any() else 0.0,
        "surprisal_dep": over_dependent(surprisal),
        "surprisal_max": float(surprisal.max()),
        "surprisal_q90": float(np.quantile(surprisal, 0.9)),
        "jsd_max": float(jsd[1].max()),
        "dep_share": float(dependent.mean()),
    }


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
