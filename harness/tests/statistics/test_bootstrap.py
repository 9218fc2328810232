import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from groundsense_eval.statistics.bootstrap import source_bootstrap

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


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
