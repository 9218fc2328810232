import zipfile

import numpy as np
import pytest

from groundsense.calibration.adjudicator import Adjudicator
from groundsense.calibration.calibration import Calibration, fit_calibration, shipped_calibration
from groundsense.config import DetectorConfig
from groundsense.errors import InputError
from groundsense.weights import DEFAULT_SCORER

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


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


def test_an_unreachable_target_names_the_threshold_that_missed_it():
    features, labels = _features()
    with pytest.raises(InputError, match=r"the \w+ score's sentence threshold: no threshold reached precision 0.9999"):
        fit_calibration(features, "s", 5, labels=labels, target_precision=0.9999)


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
    assert shipped.chunk_counts == [2, 3, 4, 5]
    assert all(shipped_calibration("smollm2-135m-instruct", n) == shipped for n in (2, 3, 4, 5))
    assert shipped_calibration("smollm2-135m-instruct", 6) is None
    assert Calibration("s", 7, {}, {}).chunk_counts == [7]  # a file that does not record them: its K


def test_a_bf16_scorer_takes_the_calibration_fitted_on_bf16_features():
    fp32, bf16 = (shipped_calibration(DEFAULT_SCORER, 5, precision) for precision in ("fp32", "bf16"))
    assert "-bf16-" in bf16.made_with["source"] and "-bf16-" not in fp32.made_with["source"]
    assert bf16.chunk_counts == fp32.chunk_counts and bf16.thresholds != fp32.thresholds
    for precision, calibration in (("fp32", fp32), ("bf16", bf16)):
        assert Adjudicator(DetectorConfig(precision=precision)).calibration_for(5)[0] == calibration


def test_bf16_takes_the_fp32_calibration_where_none_was_fitted_on_bf16(tmp_path, monkeypatch):
    from groundsense.calibration import calibration as module

    fp32 = shipped_calibration(DEFAULT_SCORER, 5)
    (tmp_path / "calibrations").mkdir()
    fp32.save(tmp_path / "calibrations" / f"{DEFAULT_SCORER}-k5.json")
    monkeypatch.setattr(module.resources, "files", lambda package: tmp_path)
    assert shipped_calibration(DEFAULT_SCORER, 5, "bf16") == fp32


def _answers(labels, size=5):
    """Answer ids of consecutive sentences, ``size`` to an answer."""
    return np.arange(len(labels)) // size


def test_the_answer_threshold_is_fitted_on_each_answers_most_suspicious_sentence():
    features, labels = _features(400)
    answers = _answers(labels)
    cal = fit_calibration(features, "s", 5, labels=labels, answers=answers)
    for detector in ("sensitivity", "gap"):
        score = cal.score(detector, features)
        top = np.array([score[answers == a].max() for a in np.unique(answers)])
        unsupported = np.array([labels[answers == a].max() for a in np.unique(answers)])

        def youden(t, top=top, unsupported=unsupported):  # recall minus false-positive rate of top >= t
            return (top[unsupported == 1] >= t).mean() - (top[unsupported == 0] >= t).mean()

        threshold, sentence = cal.answer_thresholds[detector], cal.thresholds[detector]
        assert threshold in top or threshold == sentence  # a threshold is one of the scores it was chosen among
        assert threshold <= sentence and cal.threshold(detector, "answer") == threshold  # a flagged sentence blocks
        rule = cal.made_with["threshold_rule"]["answer"][detector]
        if rule.startswith("Youden"):  # no threshold at or below the sentence one does better
            assert all(youden(other) <= youden(threshold) + 1e-12 for other in top[top <= sentence])
        else:
            assert threshold == sentence and rule.startswith("the sentence threshold")
    older = Calibration("s", 5, cal.stats, {"gap": 0.5}, answer_thresholds={"gap": 0.9})  # a file fitted before the cap
    assert older.threshold("gap", "answer") == 0.5
    assert set(cal.made_with["on_calibration_set"]) == {"sentence", "answer"}
    no_answers = fit_calibration(features, "s", 5, labels=labels)  # no answer ids, no answer threshold:
    assert no_answers.answer_thresholds == {}  # an answer is flagged when any sentence is
    assert no_answers.threshold("gap", "answer") == no_answers.threshold("gap") == no_answers.thresholds["gap"]
    one_class = fit_calibration(features, "s", 5, labels=labels, answers=np.zeros_like(labels))  # one answer
    assert one_class.answer_thresholds == {} and one_class.thresholds == cal.thresholds
    assert "not fitted" in one_class.made_with["threshold_rule"]["answer"]["gap"]


def test_a_target_picks_the_threshold_the_stored_curve_says_met_it(tmp_path):
    features, labels = _features(1000)
    cal = fit_calibration(features, "s", 5, labels=labels, answers=_answers(labels))
    cal.save(tmp_path / "c.json")
    cal = Calibration.load(tmp_path / "c.json")  # the curves survive the file
    score = cal.score("sensitivity", features)
    for recall in (0.3, 0.6, 0.9):
        threshold = cal.threshold("sensitivity", target_recall=recall)
        assert (score[labels == 1] >= threshold).mean() >= recall
        assert (score[labels == 1] > threshold).mean() < recall + 0.02  # the highest such point of the curve
    lenient, strict = (cal.threshold("sensitivity", target_precision=p) for p in (0.5, 0.8))
    assert strict > lenient and labels[score >= strict].mean() >= 0.8
    # a target is a sentence operating point: the answer is then flagged when any sentence is
    assert cal.threshold("gap", "answer", target_recall=0.9) == cal.threshold("gap", target_recall=0.9)
    assert cal.threshold("sensitivity") == cal.thresholds["sensitivity"]
    assert cal.threshold("gap", "answer") == cal.answer_thresholds["gap"]
    curve = Calibration("s", 5, {}, {}, curves={"gap": [[0.0, 0.3, 1.0], [1.0, 0.5, 0.4]]})
    assert curve.threshold("gap", target_precision=0.4) == 1.0
    with pytest.raises(InputError, match="reached at most 0.500"):
        curve.threshold("gap", target_precision=0.6)


def test_a_calibration_without_curves_says_how_to_get_a_target():
    features, _ = _features()
    unlabelled = fit_calibration(features, "s", 5, flag_rate=0.2)
    # the answer is flagged when any sentence is
    assert unlabelled.threshold("gap", "answer") == unlabelled.thresholds["gap"]
    with pytest.raises(InputError, match="refit it with labelled rows"):
        unlabelled.threshold("gap", target_recall=0.8)


def test_a_calibration_loads_from_a_zipped_package(tmp_path):
    # A package imported from a zip gives its data files (the shipped calibrations) as
    # Traversables, not paths: Calibration.load reads them too.
    features, _ = _features()
    cal = fit_calibration(features, "s", 5, flag_rate=0.2)
    cal.save(tmp_path / "c.json")
    with zipfile.ZipFile(tmp_path / "package.zip", "w") as archive:
        archive.write(tmp_path / "c.json", "calibrations/c.json")
    assert Calibration.load(zipfile.Path(tmp_path / "package.zip", "calibrations/c.json")) == cal


def test_an_adjudicator_of_a_config_naming_no_scorer_judges_as_the_default_scorer():
    # None names the default scorer: its shipped calibration judges, and the result names it
    # (it looked for a calibration of a scorer called "None", found none and flagged nothing).
    calibration, detector = Adjudicator(DetectorConfig()).calibration_for(5)
    assert calibration == shipped_calibration(DEFAULT_SCORER, 5) and calibration is not None
    assert detector == "sensitivity"


@pytest.mark.parametrize(("text", "message"), [
    ("[1, 2]", "holds no JSON object"), ("{not json", "Expecting property name"), ('{"scorer": "x"}', "'stats'"),
    ('{"references": {}}', "is a fusion, not a calibration: it is one mode's lexical fusion"),
])
def test_a_file_that_is_no_calibration_says_what_it_is(tmp_path, text, message):
    path = tmp_path / "odd.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        Calibration.load(path)
