import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from groundsense.eval.statistics.bootstrap import group_aucs, group_draws, resample_aucs, source_bootstrap, weighted_auc

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def test_weighted_auc_equals_sklearn_with_sample_weights_and_ties():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    score = np.round(rng.normal(size=200), 1)  # many ties
    weights = rng.integers(0, 4, (15, 200))
    expected = [roc_auc_score(y, score, sample_weight=w) for w in weights]
    # measured: 1.1e-16 apart at most, on numpy's native and fallback SIMD paths; 1e-12 leaves room for other CPUs
    np.testing.assert_allclose(weighted_auc(y, score, weights), expected, atol=1e-12)


def test_weighted_auc_is_nan_without_both_classes():
    y = np.array([0, 0, 1, 1])
    out = weighted_auc(y, np.array([0.1, 0.2, 0.3, 0.4]), np.array([[1, 1, 0, 0], [1, 0, 1, 0]]))
    assert np.isnan(out[0]) and out[1] == 1.0


def test_group_draws_resample_whole_groups():
    groups = np.array(["a", "a", "b", "c", "c", "c"])
    draws, index = group_draws(groups, 50, seed=0)
    assert draws.shape == (50, 3) and index.tolist() == [0, 0, 1, 2, 2, 2]
    assert (draws.sum(axis=1) == 3).all()
    np.testing.assert_array_equal(group_draws(groups, 50, seed=0)[0], draws)


@pytest.mark.parametrize("seed", range(5))
def test_group_aucs_equal_weighted_auc_exactly(seed):
    rng = np.random.default_rng(seed)
    n, n_groups = int(rng.integers(20, 400)), int(rng.integers(1, 40))
    y = rng.integers(0, 2, n)
    score = np.round(rng.normal(size=n), seed % 3)  # ties, from many to few
    draws, index = group_draws(rng.integers(0, n_groups, n), 300, seed)
    np.testing.assert_array_equal(group_aucs(y, score, index, draws), resample_aucs(y, score, draws[:, index]))


def test_group_aucs_are_nan_without_both_classes():
    out = group_aucs(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 0, 1, 1]),
                     np.array([[2, 0], [1, 1]]))
    assert np.isnan(out[0]) and out[1] == 1.0


def test_intervals_and_paired_difference_on_hand_made_data():
    y = np.array([0, 1] * 20)
    groups = np.repeat(np.arange(20), 2)
    perfect = y + 0.0
    reversed_ = -perfect
    result = source_bootstrap(y, {"perfect": perfect, "reversed": reversed_}, groups, n_resamples=300, seed=0)
    table = result.intervals()
    assert table.loc["perfect"].tolist() == [1.0, 1.0, 1.0]
    assert table.loc["reversed"].tolist() == [0.0, 0.0, 0.0]
    diff = result.difference("perfect", "reversed")
    assert diff == {"diff": 1.0, "lo": 1.0, "hi": 1.0, "significant": True}


def test_point_estimate_is_the_full_sample_auc_and_noise_is_not_significant():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 600)
    groups = rng.integers(0, 120, 600)
    signal = y + rng.normal(size=600)
    noise_a, noise_b = rng.normal(size=600), rng.normal(size=600)
    result = source_bootstrap(y, {"signal": signal, "a": noise_a, "b": noise_b}, groups, n_resamples=400, seed=2)
    assert result.point["signal"] == pytest.approx(roc_auc_score(y, signal))
    lo, hi = result.intervals().loc["signal", ["lo", "hi"]]
    assert lo < result.point["signal"] < hi
    assert result.difference("signal", "a")["significant"]
    assert not result.difference("a", "b")["significant"]
    assert set(result.differences("a").index) == {"signal", "b"}
