import numpy as np
import pytest

from groundsense.calibration import Calibration, fit_calibration, shipped_calibration
from groundsense.errors import InputError


def _features(n=200, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(int)
    shift = np.where(labels, -1.0, 1.0)  # unsupported sentences react less to the context
    features = {name: shift + rng.normal(size=n) for name in ("gap", "jsd_noctx", "drop_max", "jsd_loo_max")}
    features.update(drop_mean=features["drop_max"] / 2, jsd_loo_mean=features["jsd_loo_max"] / 2,
                    surprisal=rng.random(n), n_tokens=np.full(n, 10.0))
    return features, labels


def test_sensitivity_standardises_with_calibration_statistics():
    features, labels = _features()
    cal = fit_calibration(features, "s", 5, labels=labels)
    for name, (mean, std) in cal.stats.items():
        assert mean == pytest.approx(features[name].mean()) and std == pytest.approx(features[name].std())
    score = cal.score("sensitivity", features)
    assert np.corrcoef(score, labels)[0, 1] > 0.5  # higher score = more suspicious


def test_labelled_threshold_meets_the_target_recall():
    features, labels = _features()
    cal = fit_calibration(features, "s", 5, labels=labels, target_recall=0.8)
    flagged = cal.score("sensitivity", features) >= cal.thresholds["sensitivity"]
    assert flagged[labels == 1].mean() >= 0.8
    stricter = fit_calibration(features, "s", 5, labels=labels, target_recall=0.5)
    assert stricter.thresholds["sensitivity"] > cal.thresholds["sensitivity"]


def test_unlabelled_threshold_flags_the_chosen_share(tmp_path):
    features, _ = _features()
    cal = fit_calibration(features, "s", 5, flag_rate=0.2)
    flagged = cal.score("gap", features) >= cal.thresholds["gap"]
    assert flagged.mean() == pytest.approx(0.2, abs=0.01)
    cal.save(tmp_path / "c.json")
    assert Calibration.load(tmp_path / "c.json") == cal


def test_one_class_labels_are_refused():
    features, labels = _features()
    with pytest.raises(InputError, match="both supported and unsupported"):
        fit_calibration(features, "s", 5, labels=np.zeros_like(labels))


def test_no_shipped_calibration_for_an_unknown_scorer():
    assert shipped_calibration("no-such-scorer", 5) is None


def test_a_shipped_calibration_serves_the_chunk_counts_it_was_fitted_on():
    shipped = shipped_calibration("smollm2-135m-instruct", None)
    assert shipped.chunk_counts == [2, 3, 5]
    assert all(shipped_calibration("smollm2-135m-instruct", n) == shipped for n in (2, 3, 5))
    assert shipped_calibration("smollm2-135m-instruct", 4) is None
    assert Calibration("s", 7, {}, {}).chunk_counts == [7]  # a file that does not record them: its K
