"""The trained detector's inputs: the token and answer-relative features, and the token features at tuned
thresholds (committed token caches)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from groundsense_eval.caches.detector_inputs import (
    THRESHOLD_GRID,
    TOKEN_FEATURES,
    detector_table,
    relative_features,
    suspicion,
    token_threshold_sweep,
    tuned_thresholds,
    with_token_features,
)
from groundsense_eval.caches.extract import load_cache
from groundsense_eval.caches.token_features import SentenceTokens
from groundsense_eval.statistics.benchmark_result import partitioned

TOKENS = Path(__file__).parents[3] / "results" / "tokens"


@pytest.fixture(scope="module")
def tofueval_dev():
    tofueval = next(s for s in load_cache(TOKENS, "smollm2-135m-instruct")
                    if s.full_exact and s.benchmark == "tofueval")
    return partitioned(detector_table(tofueval))[0].head(400)  # enough for both labels, quick to sweep


def test_the_threshold_sweep_scores_the_token_features_it_tunes(tofueval_dev):
    sweep = token_threshold_sweep({"tofueval": tofueval_dev})
    assert list(sweep.index) == list(THRESHOLD_GRID) and list(sweep.columns) == ["tofueval"]
    dev = with_token_features(tofueval_dev, (3.0, 1.0))
    both = (roc_auc_score(dev["label"], suspicion(dev, "gap_dep"))
            + roc_auc_score(dev["label"], suspicion(dev, "unresolved_share"))) / 2
    assert sweep.loc[(3.0, 1.0), "tofueval"] == pytest.approx(both)
    assert sweep["tofueval"].nunique() > 1  # the thresholds move the score
    low, high = (with_token_features(dev, pair)["dep_share"].mean() for pair in [(1.0, 1.0), (4.0, 1.0)])
    assert low > high


def test_tuned_thresholds_take_the_best_mean_and_the_first_of_ties():
    sweep = pd.DataFrame({"a": 0.6, "b": 0.6}, index=pd.MultiIndex.from_tuples(THRESHOLD_GRID))
    assert tuned_thresholds(sweep) == THRESHOLD_GRID[0]
    sweep.loc[(3.0, 2.0), "a"], sweep.loc[(1.0, 4.0), "b"] = 0.9, 0.7
    assert tuned_thresholds(sweep) == (3.0, 2.0)
    assert tuned_thresholds(sweep[["b"]]) == (1.0, 4.0)


def test_suspicion_negates_the_features_that_grow_with_support():
    # a sentence that contradicts a chunk gains likelihood without it: a negative lowest drop
    table = pd.DataFrame({"gap": [2.0, 0.1], "drop_min": [0.0, -1.5], "neg_drop_mass": [0.0, 1.5],
                          "unresolved_share": [0.1, 0.8]})
    for feature in table:
        assert suspicion(table, feature)[1] > suspicion(table, feature)[0], feature


def token_features(logp: np.ndarray, jsd: np.ndarray) -> dict[str, float]:
    """One sentence's token features from its [conditions, n] rows, at the a-priori thresholds."""
    tokens = SentenceTokens.from_rows([logp[0]], [logp[1]], [jsd[1]], [logp[2:].ravel()])
    return tokens.features().iloc[0].to_dict()


def test_token_features_aggregate_a_sentence_s_tokens():
    # 4 tokens; rows: full, no context, without chunk 0, without chunk 1
    logp = np.array([
        [-0.1, -3.0, -0.5, -0.2],
        [-0.2, -4.0, -3.0, -0.1],
        [-0.1, -3.5, -2.0, -0.2],
        [-0.3, -3.0, -0.6, -0.2],
    ])
    jsd = np.array([[0, 0, 0, 0], [0.1, 0.4, 0.3, 0.0], [0, 0.1, 0.2, 0], [0.1, 0, 0, 0]], dtype=float)
    f = token_features(logp, jsd)
    gap = logp[0] - logp[1]  # [0.1, 1.0, 2.5, -0.1]
    dependent = np.array([False, True, True, False])  # no-context surprisal > 2 nats
    assert f["gap_dep"] == pytest.approx(gap[dependent].mean())
    assert f["gap_wdep"] == pytest.approx((gap * -logp[1]).sum() / -logp[1].sum())
    assert f["gap_min"] == pytest.approx(-0.1) and f["gap_low20"] == pytest.approx(-0.1)
    assert f["tokdrop_mean"] == pytest.approx(np.mean([0.2, 0.5, 1.5, 0.0]))
    assert f["tokdrop_dep"] == pytest.approx(np.mean([0.5, 1.5]))
    assert f["unresolved_share"] == pytest.approx(0.5)  # token 1 stays surprising (3 nats) with the context
    assert f["surprisal_max"] == pytest.approx(3.0) and f["jsd_max"] == pytest.approx(0.4)
    assert f["dep_share"] == pytest.approx(0.5)


def test_token_features_without_dependent_tokens_or_leave_one_out_rows():
    logp = np.array([[-0.1, -0.2], [-0.3, -0.4]])
    f = token_features(logp, np.zeros_like(logp))
    assert f["gap_dep"] == pytest.approx(0.2)  # no dependent token: the mean over all
    assert f["unresolved_share"] == 0.0 and np.isnan(f["tokdrop_mean"])
    assert all(np.isnan(v) for v in token_features(np.zeros((2, 0)), np.zeros((2, 0))).values())
    assert set(f) == set(TOKEN_FEATURES)


def test_relative_features_subtract_the_answer_s_token_weighted_mean():
    values = {"gap": np.array([1.0, 3.0, 5.0]), "surprisal": np.array([2.0, 2.0, 8.0]), "n_tokens": np.array([1, 3, 4])}
    out = relative_features(values, np.array(["a", "a", "b"]))
    assert out["gap_rel"] == pytest.approx([1.0 - 2.5, 3.0 - 2.5, 0.0])
    assert out["surprisal_rel"] == pytest.approx([0.0, 0.0, 0.0])
