"""Adapting a labelled calibration to a domain without labels: what each rule re-estimates,
what it keeps, its stability, and `groundsense calibrate --adapt` end to end."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from groundsense.calibration.adaptation import (
    METHODS,
    DomainSentences,
    adapt,
    flagged_share,
    judged_scores,
    stability,
    unsupported_share,
)
from groundsense.calibration.calibration import STANDARDISED, Calibration, fit_calibration, shipped_calibration
from groundsense.calibration.fusion import LexicalFusions
from groundsense.cli import cli
from groundsense.errors import InputError
from groundsense.lexical import LEXICAL

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def sentences(n_answers=300, shift=0.0, seed=0, unsupported=0.15):
    """Synthetic sentence features: unsupported sentences have a lower gap and smaller drops;
    ``shift`` moves every feature of the domain by a constant (a domain's offset)."""
    rng = np.random.default_rng(seed)
    answers = np.repeat(np.arange(n_answers), 4)
    labels = (rng.random(len(answers)) < unsupported).astype(int)
    base = rng.normal(size=(len(answers), len(STANDARDISED))) + np.where(labels[:, None], -1.0, 0.0)
    features = {name: base[:, i] + 1.0 + shift for i, name in enumerate(STANDARDISED)}
    return features, labels, answers


@pytest.fixture(scope="module")
def labelled_base():
    features, labels, answers = sentences()
    return fit_calibration(features, "scorer", 5, labels=labels, answers=answers, made_with={"chunk_counts": [5]})


def domain(shift=0.0, seed=1, unsupported=0.15, n_answers=300):
    features, _, answers = sentences(n_answers, shift, seed, unsupported)
    return DomainSentences(features, answers, np.full(len(answers), 5))


# Re-standardised on a domain that a constant shifted, a calibration scores its sentences as the
# unadapted one scores them unshifted, up to float rounding: at most 4.4e-15 apart, measured with
# numpy's native SIMD paths and with its baseline ones forced (CONTRIBUTING, "Tests on every CPU").
ROUNDING = 1e-12


def scored_alike(adapted: Calibration, domain: DomainSentences, base: Calibration, base_domain: DomainSentences) -> int:
    """Check that ``adapted`` scores ``domain`` as ``base`` scores ``base_domain``, within
    ROUNDING, and flags each sentence alike unless its score lies within ROUNDING of the
    threshold (rounding may put it on either side); return how many lie there."""
    got, expected = judged_scores(adapted, domain), judged_scores(base, base_domain)
    assert got.keys() == expected.keys()
    near = 0
    for score_rule, (scores, threshold) in got.items():
        base_scores, base_threshold = expected[score_rule]
        np.testing.assert_allclose(scores, base_scores, rtol=0, atol=ROUNDING)
        clear = np.abs(base_scores - base_threshold) > ROUNDING
        assert ((scores >= threshold) == (base_scores >= base_threshold))[clear].all()
        near += int((~clear).sum())
    return near


def test_restandardising_undoes_a_domain_offset(labelled_base):
    same, shifted = domain(), domain(shift=-1.5)
    # unadapted, the offset moves every score: the base flags far more of the shifted domain
    assert flagged_share(labelled_base, shifted) > flagged_share(labelled_base, same) + 0.3
    adapted = adapt(labelled_base, shifted, "restandardise")
    assert adapted.thresholds == labelled_base.thresholds  # kept in z-sum space
    for name in STANDARDISED:
        assert adapted.stats[name][0] == pytest.approx(shifted.features[name].mean())
    near = scored_alike(adapted, shifted, adapt(labelled_base, same, "restandardise"), same)
    assert near == 0  # the thresholds were fitted on other sentences: none of these lies on one


def test_quantile_matching_flags_the_labelled_sets_share(labelled_base):
    shifted = domain(shift=2.0)
    adapted = adapt(labelled_base, shifted, "quantile")
    assert adapted.stats == labelled_base.stats
    share = labelled_base.made_with["on_calibration_set"]["sentence"]["sensitivity"]["flag_rate"]
    assert flagged_share(adapted, shifted) == pytest.approx(share, abs=0.01)


def test_the_mixture_estimates_a_larger_share_where_more_is_unsupported(labelled_base):
    few, many = domain(unsupported=0.05, seed=2), domain(unsupported=0.6, seed=3)
    shares = [adapt(labelled_base, d, "mixture").made_with["adaptation"]["estimated_unsupported_share"]["sensitivity"]
              for d in (few, many)]
    assert shares[0] < shares[1]
    rng = np.random.default_rng(0)
    assert unsupported_share(np.r_[rng.normal(0, 1, 800), rng.normal(6, 1, 200)]) == pytest.approx(0.2, abs=0.03)


@pytest.mark.parametrize("method", METHODS)
def test_an_adapted_file_says_what_it_is_and_round_trips(labelled_base, method, tmp_path):
    adapted = adapt(labelled_base, domain(), method, source="mine.jsonl")
    made = adapted.made_with
    assert made["answers"] == 300 and made["n_sentences"] == 1200 and made["labelled"] is False
    assert made["adaptation"]["method"] == method and made["chunk_counts"] == [5]
    assert adapted.answer_thresholds["sensitivity"] <= adapted.thresholds["sensitivity"]
    adapted.save(tmp_path / "a.json")
    assert Calibration.load(tmp_path / "a.json") == adapted
    with pytest.raises(InputError, match="adapted to a domain"):  # the labelled curve does not hold there
        adapted.threshold("sensitivity", target_recall=0.8)


def test_quantile_and_mixture_need_a_labelled_base():
    features, _, answers = sentences()
    unlabelled = fit_calibration(features, "scorer", 5, answers=answers, made_with={"chunk_counts": [5]})
    for method in ("quantile", "mixture"):
        with pytest.raises(InputError, match="fitted with labels"):
            adapt(unlabelled, domain(), method)
    with pytest.raises(InputError, match="must be one of"):
        adapt(unlabelled, domain(), "median")


def test_a_domain_in_chunk_counts_the_base_does_not_serve_moves_only_the_gap(labelled_base):
    other = domain(shift=-1.0)
    other = DomainSentences(other.features, other.answers, np.full(len(other.answers), 3))
    adapted = adapt(labelled_base, other, "restandardise")
    assert adapted.stats == labelled_base.stats  # no sentence reaches the sensitivity score
    assert adapted.thresholds["gap"] != labelled_base.thresholds["gap"]


def test_stability_brackets_the_estimate(labelled_base):
    mine = domain(n_answers=120)
    spread = stability(labelled_base, mine, adapt(labelled_base, mine, "quantile"), n_resamples=50)
    low, high = spread["flagged_share_interval"]
    assert low <= spread["flagged_share"] <= high and low < high
    assert spread["threshold"][0] < spread["threshold"][1]


def test_the_shipped_calibration_can_be_adapted():
    shipped = shipped_calibration("smollm2-135m-instruct", None)
    adapted = adapt(shipped, domain(), "restandardise")
    assert adapted.chunk_counts == shipped.chunk_counts and adapted.leave_one_out == shipped.leave_one_out


@pytest.mark.slow  # scores with the real scorer
def test_calibrate_adapt_end_to_end(tmp_path, cli_scorer):
    rows = [
        {"question": "How long is the main span?",
         "passages": ["The bridge opened in 1937.", "Its main span is 4,200 feet."],
         "answer": "Its main span is 4,200 feet long. It was painted gold in 1990.", "labels": []},
        {"passages": ["Paris is the capital of France.", "The Seine flows through Paris."],
         "answer": "The Seine flows through Paris. Paris has ten million bridges.", "labels": []},
    ]
    source = tmp_path / "mine.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    output = tmp_path / "adapted.json"
    run = CliRunner().invoke
    shipped = shipped_calibration("smollm2-135m-instruct", None)
    base = tmp_path / "base.json"
    shipped.save(base)
    out = run(cli, ["calibrate", str(source), "--adapt", str(base), "-o", str(output), "-k", "2", "--no-progress"])
    if cli_scorer.name != shipped.scorer:  # the tiny scorer: the base is the real one's
        assert out.exit_code == 2 and "fitted for scorer" in out.output and not output.exists()
        return
    assert out.exit_code == 0, out.output
    adapted = Calibration.load(output)
    assert adapted.made_with["answers"] == 2 and adapted.made_with["adaptation"]["method"] == "restandardise"
    assert "from 2 answers: flags" in out.stderr and "warning: only 2 answers" in out.stderr
    assert "labels were not read" in out.stderr
    assert adapted.made_with["adaptation"]["stability"]["resamples"] == 200
    detected = run(cli, ["detect", "--calibration", str(output), "--json", "-k", "2"], input=json.dumps(rows[0]))
    assert detected.exit_code == 0, detected.output
    assert json.loads(detected.output)["threshold"] == pytest.approx(adapted.thresholds["sensitivity"])
    output.unlink()
    refused = run(cli, ["calibrate", str(source), "--adapt", str(base), "-o", str(output), "-k", "7"])
    assert refused.exit_code == 2 and "chunks" in refused.output and not output.exists()
    targeted = run(cli, ["calibrate", str(source), "--adapt", "shipped", "-o", str(output), "--target-recall", "0.8"])
    assert targeted.exit_code == 2 and "reads no labels" in targeted.output


@pytest.mark.slow  # scores with the real scorer
def test_calibrate_adapt_writes_the_fused_scores_fusions_by_default(tmp_path, cli_scorer):
    from groundsense.calibration.fusion import LexicalFusions

    rows = [
        {"question": "How long is the main span?",
         "passages": ["The bridge opened in 1937.", "Its main span is 4,200 feet."],
         "answer": "Its main span is 4,200 feet long. It was painted gold in 1990."},
        {"context": "The clinic opens at 8 am on weekdays. It is closed on public holidays. Bring your insurance "
                    "card. The pharmacy closes at 6 pm. Parking is free for the first hour.",
         "answer": "The clinic opens at 8 am. It also opens on Sundays."},
    ]
    source, output = tmp_path / "mine.jsonl", tmp_path / "fusions.json"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    run = CliRunner().invoke
    out = run(cli, ["calibrate", str(source), "--adapt", "shipped", "-o", str(output), "--no-progress"])
    if cli_scorer.name != "smollm2-135m-instruct":  # the tiny scorer: the shipped fusions are the real one's
        assert out.exit_code == 2 and "holds the fusions of scorer smollm2-135m-instruct" in out.output
        return
    assert out.exit_code == 0, out.output
    assert "re-estimated from 2 answers" in out.stderr and f"Detect with --fusion {output}" in out.stderr
    adapted, shipped = LexicalFusions.load(output), LexicalFusions.shipped("smollm2-135m-instruct", "fp32")
    # the full-mode fusion from the context's answer (5 chunks) and the 2-passage one, which its statistics serve
    assert adapted.full.references != shipped.full.references and adapted.full.threshold == shipped.full.threshold
    assert adapted.two_pass.made_with["adaptation"]["n_sentences"] == 4
    detected = run(cli, ["detect", "--fusion", str(output), "--json"], input=json.dumps(rows[0]))
    assert detected.exit_code == 0, detected.output
    result = json.loads(detected.output)
    assert result["score_rule"] == "fused" and result["threshold"] == pytest.approx(adapted.full.threshold)
    shipped_result = json.loads(run(cli, ["detect", "--json"], input=json.dumps(rows[0])).output)
    assert [s["score"] for s in result["sentences"]] != [s["score"] for s in shipped_result["sentences"]]
    refused = run(cli, ["detect", "--fusion", str(output), "--score", "sensitivity"], input=json.dumps(rows[0]))
    assert refused.exit_code == 2 and "drop --fusion or --score sensitivity" in refused.output
    old = run(cli, ["calibrate", str(source), "--adapt", "shipped", "--score", "sensitivity", "-o",
                    str(tmp_path / "calibration.json"), "--no-progress"])
    assert old.exit_code == 0 and Calibration.load(tmp_path / "calibration.json").made_with["adaptation"]
    method = run(cli, ["calibrate", str(source), "--adapt", str(output), "--method", "quantile", "-o", str(output)])
    assert method.exit_code == 2 and "--score sensitivity" in method.output
    labelled = run(cli, ["calibrate", str(source), "--score", "fused", "-o", str(tmp_path / "x.json")])
    assert labelled.exit_code == 2 and "add --adapt" in labelled.output


@pytest.mark.slow  # the real detector
def test_adapting_on_detections_made_in_python(detector):
    from groundsense.config import DetectorConfig
    from groundsense.pipeline.detector import Detector

    rows = [{"question": "How long is the main span?",
             "answer": "Its main span is 4,200 feet long. It was painted gold.",
             "passages": ["The bridge opened in 1937.", "Its main span is 4,200 feet.", "It is in San Francisco."]},
            {"answer": "The Seine flows through Paris. Paris has ten million bridges.",
             "passages": ["Paris is the capital of France.", "The Seine flows through Paris.", "It rains often."]}]
    results = detector.detect_many(rows, progress=False)
    mine = DomainSentences.from_results(results)
    assert list(mine.answers) == [0, 0, 1, 1] and set(mine.chunk_counts) == {3}
    assert mine.features["gap"][0] == pytest.approx(results[0].sentences[0].features["gap"])
    adapted = adapt(shipped_calibration("smollm2-135m-instruct", None), mine)
    again = Detector.from_config(DetectorConfig(), detector.scorer, calibration=adapted).detect(**rows[1])
    assert again.threshold == pytest.approx(adapted.thresholds["sensitivity"]) and again.score_rule == "sensitivity"
    # the default score's fusions, as calibration.md adapts them (3 chunks: the statistics serve full mode)
    shipped = LexicalFusions.shipped(detector.scorer.name, detector.config.precision)
    fusions = shipped.adapted_to(mine)
    assert fusions.full.made_with["adaptation"]["n_sentences"] == fusions.two_pass.made_with["adaptation"][
        "n_sentences"] == 4 and fusions.full.references != shipped.full.references
    two_pass = Detector(detector.scorer, k=5, mode="two_pass").detect(**rows[1])
    with pytest.raises(InputError, match="detection 0 was made in two_pass mode: adapting reads full mode's"):
        DomainSentences.from_results([two_pass])
    fused = Detector(detector.scorer, k=5, fusion=fusions).detect(**rows[1])
    assert fused.score_rule == "fused" and fused.threshold == pytest.approx(fusions.full.threshold)
    assert [s.score for s in fused.sentences] != [s.score for s in detector.detect(**rows[1]).sentences]


def test_a_fitted_file_adapts_with_its_weights():
    from groundsense.calibration.fitting import fit_detector

    features, labels, answers = sentences()
    features = {**features, "jsd_loo_mean": features["jsd_loo_max"] / 2, "drop_mean": features["drop_max"] / 2,
                "surprisal": features["gap"] + 3, "n_tokens": np.full(len(answers), 12.0),
                "drop_min": features["drop_max"] - 1, "neg_drop_mass": np.abs(features["drop_max"]),
                **{name: np.abs(features["gap"]) / (i + 1) for i, name in enumerate(LEXICAL)}}
    fit, cross_validation = {"model": "logistic regression"}, {"better": True}  # what `groundsense fit` records
    fitted = fit_detector(features, labels, answers, "scorer", 5, made_with={
        "chunk_counts": [5], "fit": fit, "cross_validation": cross_validation})
    shifted = DomainSentences({f: v - 1.5 if f != "n_tokens" else v for f, v in features.items()}, answers,
                              np.full(len(answers), 5))
    adapted = adapt(fitted, shifted, "restandardise")
    assert adapted.weights["coefficients"] == fitted.weights["coefficients"]
    # the weights' record stays with them; the comparison on the base's labelled rows is the base's
    assert adapted.made_with["fit"] == fit and "cross_validation" not in adapted.made_with
    assert adapted.made_with["adaptation"]["base_cross_validation"] == cross_validation
    assert adapted.weights["stats"]["gap"][0] == pytest.approx(fitted.weights["stats"]["gap"][0] - 1.5)
    same = DomainSentences(features, answers, np.full(len(answers), 5))
    assert scored_alike(adapted, shifted, fitted, same) == 1  # the sentence whose score the threshold is
    older = DomainSentences({**features, **dict.fromkeys(LEXICAL, np.full(len(answers), np.nan))}, answers,
                            np.full(len(answers), 5))  # rows scored before the lexical signals existed
    with pytest.raises(InputError, match="reads overlap_chunk, .* which no sentence of mine.jsonl has"):
        adapt(fitted, older, "restandardise", source="mine.jsonl")
