"""The few-label fit's weights in a calibration file (groundsense.calibration.fitting), on synthetic features."""

import json

import numpy as np
import pytest

from groundsense.calibration.calibration import LOGISTIC_FEATURES, LOGISTIC_SIGNALS, Calibration, shipped_calibration
from groundsense.calibration.fitting import fit_detector, fit_weights
from groundsense.errors import InputError
from groundsense.lexical import LEXICAL

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def _features(n=600, seed=0, carrier="surprisal"):
    """Every per-sentence feature and lexical signal, where only ``carrier`` (which the
    four-feature sum ignores) separates the labels."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(int)
    features = {name: rng.normal(size=n) for name in ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max",
                                                      "jsd_loo_mean", "drop_min", "neg_drop_mass", "surprisal")}
    features.update({name: rng.random(n) for name in LEXICAL}, n_tokens=rng.integers(3, 30, size=n).astype(float))
    features[carrier] = features[carrier] + 2.0 * labels
    return features, labels


def test_the_fitted_score_is_the_log_odds_of_its_weights_and_survives_the_file(tmp_path):
    features, labels = _features()
    answers = np.arange(len(labels)) // 5
    fitted = fit_detector(features, labels, answers, "s", 5, made_with={"answers": 120})
    weights = fitted.weights
    assert set(weights["coefficients"]) == set(LOGISTIC_SIGNALS)  # the scorer's features and the lexical signals
    z = {f: (np.log(features["n_tokens"]) if f == "log_n_tokens" else features[f]) for f in LOGISTIC_SIGNALS}
    by_hand = weights["intercept"] + sum(c * (z[f] - weights["stats"][f][0]) / weights["stats"][f][1]
                                         for f, c in weights["coefficients"].items())
    score = fitted.score("sensitivity", features)
    assert score == pytest.approx(by_hand)
    assert weights["coefficients"]["surprisal"] > 0.5  # what separates the labels carries the weight
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(labels, score) > 0.8 > roc_auc_score(labels, fitted.score("gap", features))
    # its thresholds are fitted on its own score, by calibrate's rules
    assert fitted.thresholds["sensitivity"] in score
    assert fitted.made_with["threshold_rule"]["sentence"]["sensitivity"] == "best F1"
    fitted.save(tmp_path / "d.json")
    assert Calibration.load(tmp_path / "d.json") == fitted
    assert fitted.inputs == ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean", "surprisal",
                             "n_tokens", "drop_min", "neg_drop_mass", *LEXICAL)


def test_a_lexical_signal_that_carries_the_labels_carries_the_weight_unless_left_out(tmp_path):
    features, labels = _features(carrier="bigram_novel")
    answers = np.arange(len(labels)) // 5
    fitted = fit_detector(features, labels, answers, "s", 5)
    coefficients = fitted.weights["coefficients"]
    assert max(coefficients, key=lambda name: abs(coefficients[name])) == "bigram_novel"
    fitted.save(tmp_path / "d.json")
    assert Calibration.load(tmp_path / "d.json") == fitted  # a file with lexical weights loads
    scorer_only = fit_detector(features, labels, answers, "s", 5, names=LOGISTIC_FEATURES)
    assert set(scorer_only.weights["coefficients"]) == set(LOGISTIC_FEATURES)
    del features["bigram_novel"]  # the scorer's features alone need no lexical value to score
    assert np.isfinite(scorer_only.score("sensitivity", features)).all()


def test_a_file_without_weights_scores_the_four_feature_sum_as_before():
    features, _ = _features()
    shipped = shipped_calibration("smollm2-135m-instruct", None)
    assert shipped.weights == {} and shipped.inputs == ("gap", "jsd_noctx", "drop_max", "jsd_loo_max")
    by_hand = -sum((features[f] - m) / s for f, (m, s) in shipped.stats.items())
    assert np.array_equal(shipped.score("sensitivity", features), by_hand)


def test_weights_a_file_cannot_score_with_are_refused(tmp_path):
    features, labels = _features()
    fitted = fit_detector(features, labels, np.arange(len(labels)) // 5, "s", 5)
    fitted.save(tmp_path / "d.json")
    data = json.loads((tmp_path / "d.json").read_text())
    del data["weights"]["stats"]["surprisal"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="'weights' need an 'intercept'"):
        Calibration.load(tmp_path / "bad.json")
    data = json.loads((tmp_path / "d.json").read_text())
    data["weights"]["coefficients"]["judge"] = data["weights"]["stats"]["judge"] = 1.0  # not a detector value
    (tmp_path / "unknown.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="its weights name judge, which this groundsense does not compute"):
        Calibration.load(tmp_path / "unknown.json")


def test_one_label_is_refused():
    features, labels = _features()
    with pytest.raises(InputError, match="both supported and unsupported"):
        fit_weights(features, np.zeros_like(labels))
