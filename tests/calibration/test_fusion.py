"""The fused score's math (groundsense.calibration.fusion: candidate J, and the lexical fusion F):
ranks as the evaluation's rank average computes them, the file round trip, the adapted
references, the shipped files, the weights `fit --fuse` fits and the lexical fusion's answer
rule."""

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from groundsense.calibration.fusion import (
    JUDGE_FUSION_SIGNALS as SIGNALS,
)
from groundsense.calibration.fusion import (
    LENGTH_AWARE_NOISY_OR,
    LEXICAL_FUSION_SIGNALS,
    RankFusion,
    answer_scores,
    reference_sample,
    shipped_lexical_fusion,
    top_two_mean,
)
from groundsense.calibration.judge_fusion import shipped_fusion
from groundsense.calibration.thresholds import forced_scores, youden_threshold
from groundsense.errors import InputError
from groundsense_eval.reports.fusion import label_free_score

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

STATS = {"gap": (-1.0, 2.0), "jsd_noctx": (0.1, 0.05), "drop_max": (0.5, 0.4), "jsd_loo_max": (0.02, 0.01)}


def fusion(references, threshold=0.5, answer_threshold=0.6):
    return RankFusion("judge:test", "tiny", STATS, references, threshold, answer_threshold, {"data": "test"})


def random_signals(rng, n):
    """Signals with ties, as the lexical ones and a judge's rounded probabilities have."""
    return {"sensitivity": rng.normal(size=n), "judge": rng.integers(0, 5, n) / 4,
            "overlap_chunk": rng.integers(0, 10, n) / 10, "stem_novel": rng.integers(0, 3, n) / 2,
            "bigram_novel": rng.uniform(size=n)}


def test_score_is_the_evaluations_rank_average_divided_by_the_signals():
    rng = np.random.default_rng(0)
    reference, rows = pd.DataFrame(random_signals(rng, 300)), pd.DataFrame(random_signals(rng, 50))
    fused = fusion({name: reference_sample(reference[name]) for name in SIGNALS})
    expected = label_free_score("rank average", reference, rows, SIGNALS) / len(SIGNALS)
    # measured: equal to the last bit on numpy's native and fallback SIMD paths; 1e-12 leaves room for other CPUs
    np.testing.assert_allclose(fused.score({name: rows[name].to_numpy() for name in SIGNALS}), expected, atol=1e-12)


def test_a_large_reference_keeps_evenly_spaced_order_statistics():
    values = np.random.default_rng(1).normal(size=20_000)
    kept = reference_sample(np.append(values, [np.nan, np.inf]))
    assert len(kept) == 1001 and kept[0] == values.min() and kept[-1] == values.max()
    assert kept == sorted(kept)
    x = np.linspace(-2, 2, 9)  # the compact ranks stay within a quantile step of the full sample's
    full = fusion({name: reference_sample(values, size=len(values)) for name in SIGNALS})
    small = fusion({name: kept for name in SIGNALS})
    values_of = {name: x for name in SIGNALS}
    assert np.abs(small.score(values_of) - full.score(values_of)).max() < 2e-3


def test_a_missing_signal_gives_no_fused_score():
    fused = fusion({name: [0.0, 1.0] for name in SIGNALS})
    values = {name: np.array([0.5, 0.5]) for name in SIGNALS}
    values["judge"] = np.array([np.nan, 2.0])
    assert np.isnan(fused.score(values)[0]) and fused.score(values)[1] == pytest.approx(0.6)


def test_answer_score_is_the_mean_of_the_top_two():
    assert top_two_mean(np.array([0.1, 0.9, 0.5, np.nan])) == pytest.approx(0.7)
    assert top_two_mean(np.array([0.3])) == 0.3
    assert np.isnan(top_two_mean(np.array([np.nan])))


def test_signals_of_sentence_features(tmp_path):
    fused = fusion({name: [0.0] for name in SIGNALS})
    features = {"gap": np.array([1.0]), "jsd_noctx": np.array([0.1]), "drop_max": np.array([0.5]),
                "jsd_loo_max": np.array([0.03]), "overlap_chunk": np.array([0.2]), "stem_novel": np.array([0.0]),
                "bigram_novel": np.array([0.4])}
    values = fused.signals(features, np.array([0.7]))
    assert values["sensitivity"][0] == pytest.approx(-(1.0 + 0 + 0 + 1.0))  # -(sum of z-scores)
    assert values["judge"][0] == 0.7 and values["bigram_novel"][0] == 0.4


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    fused = fusion({name: reference_sample(v) for name, v in random_signals(rng, 40).items()}, 0.61, 0.67)
    fused.save(tmp_path / "f.json")
    assert RankFusion.load(tmp_path / "f.json") == fused
    assert RankFusion.load(str(tmp_path / "f.json")) == fused


def test_an_unreadable_file_is_refused(tmp_path):
    (tmp_path / "bad.json").write_text('{"verifier": "judge:x"}')
    with pytest.raises(InputError, match="cannot read fusion file"):
        RankFusion.load(tmp_path / "bad.json")
    fused = fusion({name: [0.0] for name in SIGNALS})
    fused.references["judge"] = []
    fused.save(tmp_path / "empty.json")
    with pytest.raises(InputError, match="no reference for judge"):
        RankFusion.load(tmp_path / "empty.json")


def test_adapted_takes_the_references_from_the_domain_and_keeps_the_thresholds():
    rng = np.random.default_rng(3)
    base = fusion({name: reference_sample(v) for name, v in random_signals(rng, 100).items()}, 0.6, 0.65)
    domain = {name: values + 5 for name, values in random_signals(rng, 200).items()}  # shifted: ranks move
    adapted = base.adapted(domain, source="rows.jsonl")
    assert adapted.references == {name: reference_sample(domain[name]) for name in SIGNALS}
    assert (adapted.threshold, adapted.answer_threshold) == (0.6, 0.65)
    assert adapted.made_with["adaptation"]["n_sentences"] == 200
    assert adapted.made_with["adaptation"]["source"] == "rows.jsonl" and adapted.made_with["data"] == "test"
    assert base.references != adapted.references  # a copy: the base is unchanged
    np.testing.assert_allclose(np.median(adapted.score(domain)), 0.5, atol=0.05)
    # what the base said of its references describes them no more: it is kept as the base's
    described = {**base.made_with, "references": "the base's sample", "n_sentences": 100}
    again = replace(base, made_with=described).adapted(domain, source="a.jsonl").adapted(domain, source="b.jsonl")
    assert "references" not in again.made_with and "n_sentences" not in again.made_with
    assert again.made_with["adaptation"]["source"] == "b.jsonl" and again.made_with["data"] == "test"
    earlier = again.made_with["adaptation"]["base"]["adaptation"]
    assert earlier["source"] == "a.jsonl" and earlier["base"]["references"] == "the base's sample"


def test_adapting_on_no_finite_signal_is_refused():
    base = fusion({name: [0.0] for name in SIGNALS})
    with pytest.raises(InputError, match="judge"):
        base.adapted({**{name: np.zeros(3) for name in SIGNALS}, "judge": np.full(3, np.nan)})


def test_the_shipped_fusion_is_the_1_5b_judges():
    shipped = shipped_fusion("judge:qwen2.5-coder-1.5b-instruct")
    assert shipped is not None and shipped.verifier == "judge:qwen2.5-coder-1.5b-instruct"
    assert all(0 < len(shipped.references[name]) <= 1001 for name in SIGNALS)
    assert 0 < shipped.threshold < 1 and 0 < shipped.answer_threshold < 1
    assert shipped_fusion("judge:qwen2.5-coder-0.5b-instruct") is None


def labelled_signals(rng, n, carried_by="bigram_novel"):
    """Signals of which only ``carried_by`` tells the labels apart; the others are noise."""
    labels = (rng.random(n) < 0.3).astype(int)
    values = random_signals(rng, n)
    values[carried_by] = values[carried_by] + 1.5 * labels
    return values, labels


def test_a_weighted_score_is_the_fitted_log_odds_of_the_ranks():
    fused = fusion({name: [0.0, 1.0, 2.0] for name in SIGNALS})
    weights = {"intercept": -1.0, "coefficients": {name: i + 1.0 for i, name in enumerate(SIGNALS)}}
    weighted = RankFusion(**{**vars(fused), "weights": weights})
    values = {name: np.array([0.5, 1.5, 3.0]) for name in SIGNALS}
    values["judge"] = np.array([0.5, np.nan, 3.0])
    ranks = fused.ranks(values)  # a row per signal
    np.testing.assert_allclose(ranks[:, 0], [1 / 3] * 5)
    np.testing.assert_allclose(ranks[:, 2], [1.0] * 5)
    score = weighted.score(values)
    assert score[0] == pytest.approx(-1.0 + 15 / 3) and score[2] == pytest.approx(-1.0 + 15.0)
    assert np.isnan(score[1])  # a missing signal: no score, weighted or not
    np.testing.assert_allclose(fused.score(values), ranks.mean(axis=0))  # no weights: the average, as before


def test_weighted_fits_the_logistic_regression_of_the_standardised_ranks():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(4)
    values, labels = labelled_signals(rng, 600)
    values["judge"][:5] = np.nan  # left out of the fit
    base = fusion({name: [0.0] for name in SIGNALS}).with_references(values)
    weighted = base.weighted(values, labels)
    ranks = base.ranks(values)
    rows = np.isfinite(ranks).all(axis=0)
    x = ranks[:, rows].T
    model = LogisticRegression(C=0.1, solver="newton-cholesky").fit((x - x.mean(0)) / x.std(0), labels[rows])
    np.testing.assert_allclose(weighted.score(values)[rows], model.decision_function((x - x.mean(0)) / x.std(0)),
                               atol=1e-6)  # the standardisation folded into the weights of the ranks
    assert np.isnan(weighted.score(values)[:5]).all()
    coefficients = weighted.made_with["fit"]["standardised"]["coefficients"]
    assert max(coefficients, key=lambda name: abs(coefficients[name])) == "bigram_novel"
    assert weighted.made_with["fit"]["n_sentences"] == rows.sum()
    assert (weighted.references, weighted.threshold) == (base.references, base.threshold) and base.weights is None


def test_thresholded_fits_the_sentence_and_answer_thresholds_by_calibrates_rules():
    from groundsense.calibration.thresholds import labelled_threshold

    rng = np.random.default_rng(5)
    values, labels = labelled_signals(rng, 400)
    answers = np.arange(400) // 4
    weighted = fusion({name: [0.0] for name in SIGNALS}).with_references(values).weighted(values, labels)
    fitted = weighted.thresholded(values, labels, answers)
    scores = weighted.score(values)
    assert fitted.threshold == labelled_threshold(scores, labels, None, None)[0]  # the best F1
    top = np.array([top_two_mean(scores[answers == a]) for a in range(100)])
    unsupported = np.array([labels[answers == a].max() for a in range(100)])
    assert fitted.answer_threshold == labelled_threshold(top, unsupported, None, None, fitted.threshold)[0]
    assert fitted.answer_threshold <= fitted.threshold
    assert fitted.made_with["threshold_rule"]["sentence"] == "best F1"
    assert fitted.made_with["n_answers"] == 100 and set(fitted.made_with["on_labelled_set"]) == {"sentence", "answer"}
    at_recall = weighted.thresholded(values, labels, answers, target_recall=0.9)
    assert (at_recall.score(values)[labels == 1] >= at_recall.threshold).mean() >= 0.9
    every_answer = weighted.thresholded(values, labels, np.arange(400) // 100)  # each answer holds an unsupported one
    assert every_answer.answer_threshold == every_answer.threshold
    assert "not fitted" in every_answer.made_with["threshold_rule"]["answer"]


def test_a_fusion_fitted_on_labels_keeps_its_curve_for_targets_and_one_re_referenced_or_reweighted_does_not():
    rng = np.random.default_rng(6)
    values, labels = labelled_signals(rng, 400)
    referenced = fusion({name: [0.0] for name in SIGNALS}).with_references(values)
    fitted = referenced.thresholded(values, labels, np.arange(400) // 4)
    scores = fitted.score(values)
    for target in (0.5, 0.9):  # on the sentences it was fitted on, the threshold met the target recall
        threshold = fitted.target_threshold(target, None)
        assert (scores[labels == 1] >= threshold).mean() >= target
    at_precision = fitted.target_threshold(None, 0.6)
    assert labels[scores >= at_precision].mean() >= 0.6 - 0.01  # the curve keeps precision to 4 places
    for copy in (fitted.with_references(values), fitted.adapted(values), fitted.weighted(values, labels)):
        assert copy.curves is None
        with pytest.raises(InputError, match="keeps no precision-recall curve"):
            copy.target_threshold(0.8, None)


def test_weights_survive_the_file_and_a_fusion_without_them_is_written_as_before(tmp_path):
    rng = np.random.default_rng(6)
    values, labels = labelled_signals(rng, 200)
    weighted = fusion({name: [0.0] for name in SIGNALS}).with_references(values).weighted(values, labels)
    weighted.save(tmp_path / "w.json")
    loaded = RankFusion.load(tmp_path / "w.json")
    assert loaded == weighted and set(loaded.weights["coefficients"]) == set(SIGNALS)
    np.testing.assert_array_equal(loaded.score(values), weighted.score(values))
    plain = fusion({name: [0.0] for name in SIGNALS})
    plain.save(tmp_path / "plain.json")
    assert "weights" not in json.loads((tmp_path / "plain.json").read_text())
    assert RankFusion.load(tmp_path / "plain.json").weights is None


def test_the_shipped_fusion_loads_unweighted_and_saves_byte_for_byte(tmp_path):
    from importlib import resources

    from groundsense.calibration.fusion import FOLDER
    from groundsense.calibration.judge_fusion import SHIPPED_JUDGE, shipped_name

    shipped = shipped_fusion(SHIPPED_JUDGE)
    assert shipped is not None and shipped.weights is None
    shipped.save(tmp_path / "again.json")
    path = resources.files("groundsense") / FOLDER / shipped_name(SHIPPED_JUDGE)
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("weights", [
    {"intercept": 0.0, "coefficients": {"judge": 1.0}},  # not every signal
    {"intercept": "0", "coefficients": dict.fromkeys(SIGNALS, 1.0)},
    {"coefficients": dict.fromkeys(SIGNALS, 1.0)},
    [1, 2],
])
def test_bad_weights_are_refused(tmp_path, weights):
    data = json.loads(json.dumps(vars(fusion({name: [0.0] for name in SIGNALS}))))
    (tmp_path / "bad.json").write_text(json.dumps({**data, "weights": weights}))
    with pytest.raises(InputError, match="its 'weights' need"):
        RankFusion.load(tmp_path / "bad.json")


SHIPPED = "src/groundsense/calibrations"
LEXICAL_FILES = {("full", "fp32"): "fusion-lexical-smollm2-135m-instruct-k5.json",
                 ("two_pass", "fp32"): "fusion-lexical-smollm2-135m-instruct-two-pass.json",
                 ("full", "bf16"): "fusion-lexical-smollm2-135m-instruct-bf16-k5.json",
                 ("two_pass", "bf16"): "fusion-lexical-smollm2-135m-instruct-bf16-two-pass.json"}


def lexical_fusion(mode="full", answer_rule=None):
    names = LEXICAL_FUSION_SIGNALS[mode]
    return RankFusion(None, "tiny", STATS if mode == "full" else {}, {name: [0.0, 1.0, 2.0, 3.0] for name in names},
                      0.5, 0.6, {"data": "test"}, answer_rule=answer_rule)


def test_the_lexical_fusion_ranks_sensitivity_or_the_gap_with_the_lexical_signals_and_no_judge():
    full, two_pass = lexical_fusion("full"), lexical_fusion("two_pass")
    assert full.signal_names == ("sensitivity", "overlap_chunk", "stem_novel", "bigram_novel")
    assert full.inputs == ("gap", "jsd_noctx", "drop_max", "jsd_loo_max", "overlap_chunk", "stem_novel", "bigram_novel")
    assert two_pass.inputs == ("gap", "overlap_chunk", "stem_novel", "bigram_novel")
    features = {"gap": np.array([-1.5]), "overlap_chunk": np.array([1.0]), "stem_novel": np.array([2.0]),
                "bigram_novel": np.array([3.0])}
    values = two_pass.signals(features)
    assert values["gap"].tolist() == [1.5]  # the gap score: higher = more suspicious
    # ranks among [0, 1, 2, 3], ties counted half: 1.5 -> 2/4; 1.0 -> 1.5/4; 2.0 -> 2.5/4; 3.0 -> 3.5/4
    assert two_pass.score(values).tolist() == pytest.approx([(2 + 1.5 + 2.5 + 3.5) / 16])
    with pytest.raises(ValueError, match="ranks a judge's scores"):
        fusion({name: [0.0] for name in SIGNALS}).signals({**features, **{f: np.array([0.0]) for f in STATS}})


def test_the_length_aware_noisy_or_of_an_answer():
    rule = {"aggregation": LENGTH_AWARE_NOISY_OR, "intercept": -1.0, "coefficient": 2.0}
    fused = lexical_fusion(answer_rule=rule)
    scores = np.array([0.2, 0.9, np.nan, 0.5])
    p = 1 / (1 + np.exp(-(-1.0 + 2.0 * scores[[0, 1, 3]])))
    assert fused.answer_score(scores) == pytest.approx(-np.log(1 - p).sum() / np.sqrt(3))
    assert fused.answer_score(scores[:1]) == pytest.approx(-np.log(1 - p[0]))  # one sentence: the noisy-OR
    assert np.isnan(fused.answer_score(np.array([np.nan])))
    assert lexical_fusion().answer_score(scores) == top_two_mean(scores)  # without an answer rule


def test_a_noisy_or_answer_threshold_is_not_capped_at_the_sentence_one():
    rng = np.random.default_rng(5)
    n = 600
    labels = (rng.random(n) < 0.2).astype(int)
    values = {name: rng.normal(size=n) + labels for name in LEXICAL_FUSION_SIGNALS["full"]}
    rule = {"aggregation": LENGTH_AWARE_NOISY_OR, "intercept": -3.0, "coefficient": 4.0}
    fused = lexical_fusion(answer_rule=rule).with_references(values)
    answers = np.arange(n) // 6
    fitted = fused.thresholded(values, labels, answers)
    scores = fused.score(values)
    top, unsupported = answer_scores(answers, scores, labels, fused.answer_score)
    with_flag = answer_scores(answers, scores >= fitted.threshold, labels, np.max)[0] > 0
    assert fitted.answer_threshold == youden_threshold(forced_scores(top, with_flag), unsupported)
    assert fitted.made_with["threshold_rule"] == {
        "sentence": "best F1", "answer": "best Youden's J of the verdict (a flagged sentence, or the threshold)"}
    # the verdict it is fitted on: its flag rate is the share of answers flagged by a sentence or by the threshold
    verdict = with_flag | (top >= fitted.answer_threshold)
    assert fitted.made_with["on_labelled_set"]["answer"]["flag_rate"] == round(float(verdict.mean()), 4)


@pytest.mark.parametrize(("mode", "precision"), list(LEXICAL_FILES))
def test_the_shipped_lexical_fusions_load_for_their_mode_and_precision(mode, precision, tmp_path):
    path = f"{SHIPPED}/{LEXICAL_FILES[(mode, precision)]}"
    shipped = shipped_lexical_fusion("smollm2-135m-instruct", precision, mode)
    assert shipped == RankFusion.load(path)
    assert shipped.verifier is None and shipped.signal_names == LEXICAL_FUSION_SIGNALS[mode]
    assert shipped.answer_rule["aggregation"] == LENGTH_AWARE_NOISY_OR and shipped.made_with["precision"] == precision
    assert 0 < shipped.threshold < 1 and shipped.made_with["n_answers"] == 1500
    shipped.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == open(path).read()


@pytest.mark.parametrize(("change", "message"), [
    ({"references": {"sensitivity": [0.0], "judge": [0.0]}}, "must be of one of these signal sets"),
    ({"answer_rule": {"aggregation": "noisy-OR", "intercept": 0.0, "coefficient": 1.0}}, "'answer_rule' needs"),
    ({"answer_rule": {"aggregation": LENGTH_AWARE_NOISY_OR, "intercept": "x", "coefficient": 1.0}},
     "'answer_rule' needs"),
    ({"curves": {"sentence": [[0.5, 0.2]]}}, "'curves' need a 'sentence' list"),
    ({"curves": {"answer": []}}, "'curves' need a 'sentence' list"),
])
def test_a_fusion_file_of_unknown_signals_answer_rule_or_curves_is_refused(change, message, tmp_path):
    data = json.loads(open(f"{SHIPPED}/{LEXICAL_FILES[('full', 'fp32')]}").read())
    (tmp_path / "bad.json").write_text(json.dumps({**data, **change}))
    with pytest.raises(InputError, match=message):
        RankFusion.load(tmp_path / "bad.json")


def test_the_lexical_fusions_score_a_served_sentence_by_full_modes_fusion_and_any_other_by_two_pass_modes():
    from groundsense.calibration.fusion import LexicalFusions

    shipped = LexicalFusions.shipped("smollm2-135m-instruct", "fp32")
    rng = np.random.default_rng(4)
    features = {name: rng.normal(size=6) for name in ("gap", "jsd_noctx", "drop_max", "jsd_loo_max")}
    features |= {name: rng.uniform(size=6) for name in ("overlap_chunk", "stem_novel", "bigram_novel")}
    served = np.array([True, False, True, False, True, False])
    scores = shipped.score(features, served)
    full, two_pass = (f.score(f.signals(features)) for f in (shipped.full, shipped.two_pass))
    assert scores.tolist() == np.where(served, full, two_pass).tolist()
    assert (full != two_pass).all()  # the two fusions rank different signals
