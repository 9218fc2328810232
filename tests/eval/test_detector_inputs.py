"""The trained detector's inputs: token features at tuned thresholds (committed token caches)."""

from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from groundsense.eval.caches.detector_inputs import (
    THRESHOLD_GRID,
    detector_table,
    suspicion,
    token_threshold_sweep,
    tuned_thresholds,
    with_token_features,
)
from groundsense.eval.caches.extract import load_cache
from groundsense.eval.statistics.benchmark_result import partitioned

TOKENS = Path(__file__).parents[2] / "results" / "tokens"


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
