"""Resampling whole groups: the vectorised AUCs against scikit-learn's, and the flag metrics'
intervals (groundsense.calibration.resampling)."""

import numpy as np
import pytest
from sklearn.metrics import precision_recall_fscore_support, roc_auc_score

from groundsense.calibration.resampling import flag_intervals, group_aucs, group_draws, resample_aucs, weighted_auc

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


def test_flag_intervals_point_values_are_sklearns_and_inside_their_interval():
    rng = np.random.default_rng(3)
    y = rng.random(400) < 0.2
    flagged = np.where(y, rng.random(400) < 0.6, rng.random(400) < 0.25)
    groups = rng.integers(0, 60, 400)
    cells = flag_intervals(y, flagged, groups, n_resamples=500)
    precision, recall, f1, _ = precision_recall_fscore_support(y, flagged, average="binary")
    for name, expected in (("precision", precision), ("recall", recall), ("f1", f1), ("flag rate", flagged.mean())):
        value, lo, hi = cells[name]
        assert value == pytest.approx(expected)
        assert lo < value < hi


def test_one_source_drawn_every_time_gives_a_zero_width_interval():
    cells = flag_intervals(np.array([1, 0, 1, 0]), np.array([1, 1, 0, 0]), np.zeros(4), n_resamples=50)
    assert cells["precision"] == (0.5, 0.5, 0.5)
