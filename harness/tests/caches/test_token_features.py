"""The token features of every sentence at once equal their per-sentence numpy definitions to
the bit, on random sentences and on the committed token-row caches."""

from pathlib import Path

import numpy as np
import pytest
from helpers.cached_tokens import token_rows

from groundsense_eval.caches.extract import load_cache
from groundsense_eval.caches.token_features import TOKEN_FEATURES, SentenceTokens

TOKENS = Path(__file__).resolve().parents[3] / "results" / "tokens"


def defined(logp: np.ndarray, jsd: np.ndarray, dependent_nats: float, unresolved_nats: float) -> dict[str, float]:
    """One sentence's features as docs/token-features.md defines them, with numpy's own means,
    quantiles and extremes ([conditions, n] rows: full, no context, without chunk k)."""
    if logp.shape[1] == 0:
        return dict.fromkeys(TOKEN_FEATURES, np.nan)
    gap, surprisal, surprisal_noctx = logp[0] - logp[1], -logp[0], -logp[1]
    dependent = surprisal_noctx > dependent_nats
    tokdrop = (logp[0] - logp[2:]).max(axis=0) if len(logp) > 2 else np.full(gap.shape, np.nan)

    def over_dependent(values):
        return values[dependent].mean() if dependent.any() else values.mean()

    return {
        "gap_dep": over_dependent(gap),
        "gap_wdep": (gap * surprisal_noctx.clip(0)).sum() / max(surprisal_noctx.clip(0).sum(), 1e-9),
        "gap_min": gap.min(),
        "gap_q10": np.quantile(gap, 0.1),
        "gap_q25": np.quantile(gap, 0.25),
        "gap_low20": np.sort(gap)[: max(1, int(np.ceil(0.2 * gap.size)))].mean(),
        "tokdrop_mean": tokdrop.mean(),
        "tokdrop_dep": over_dependent(tokdrop),
        "tokdrop_q10": np.quantile(tokdrop, 0.1),
        "unresolved_share": (surprisal[dependent] > unresolved_nats).mean() if dependent.any() else 0.0,
        "surprisal_dep": over_dependent(surprisal),
        "surprisal_max": surprisal.max(),
        "surprisal_q90": np.quantile(surprisal, 0.9),
        "jsd_max": jsd[1].max(),
        "dep_share": dependent.mean(),
    }


def assert_defined(sentences: list[tuple[np.ndarray, np.ndarray]], dependent_nats: float, unresolved_nats: float):
    tokens = SentenceTokens.from_rows([logp[0] for logp, _ in sentences], [logp[1] for logp, _ in sentences],
                                      [jsd[1] for _, jsd in sentences], [logp[2:].ravel() for logp, _ in sentences])
    table = tokens.features(dependent_nats, unresolved_nats)
    assert list(table.columns) == list(TOKEN_FEATURES)
    for i, (logp, jsd) in enumerate(sentences):
        want = defined(logp, jsd, dependent_nats, unresolved_nats)
        got = table.iloc[i].to_dict()
        differ = {k: (got[k], float(v)) for k, v in want.items()
                  if not (got[k] == v or (np.isnan(got[k]) and np.isnan(v)))}
        assert not differ, (i, logp.shape, differ)


def random_sentence(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = int(rng.choice([0, 1, 2, 3, 7, 8, 9, 17, int(rng.integers(1, 300))]))
    rows = 2 + int(rng.choice([0, 1, 5]))
    logp = -rng.exponential(rng.uniform(0.5, 4), size=(rows, n))
    if n and rng.random() < 0.3:
        logp[:, : n // 2] = np.round(logp[:, : n // 2])  # ties
    if n and rng.random() < 0.05:
        logp[int(rng.integers(rows)), int(rng.integers(n))] = np.nan
    jsd = np.vstack([np.zeros(n), rng.uniform(0, 0.7, size=(rows - 1, n))])
    return logp, jsd


@pytest.mark.parametrize("thresholds", [(2.0, 2.0), (1.0, 4.0), (4.0, 1.0)])
def test_every_sentence_at_once_equals_the_definitions_to_the_bit(thresholds):
    rng = np.random.default_rng(7)
    assert_defined([random_sentence(rng) for _ in range(400)], *thresholds)


@pytest.mark.skipif(not TOKENS.is_dir(), reason="results/tokens is absent")
def test_the_committed_token_caches_give_the_definitions_to_the_bit():
    for features in load_cache(TOKENS, "smollm2-135m-instruct"):
        rows = features.table.sample(n=min(1500, len(features.table)), random_state=0)
        assert_defined([token_rows(row) for row in rows.itertuples()], 2.0, 3.0)
