"""`score="fused"` (`--score fused`): the lexical fusion scores and flags each sentence on the real
scorer, ranking its signals against the shipped fusion of the scorer's precision and mode, and
what it cannot honour is refused before anything is scored."""

import numpy as np
import pytest

from groundsense import Detector
from groundsense.calibration.adjudicator import Adjudicator
from groundsense.calibration.fusion import shipped_lexical_fusion
from groundsense.config import DetectorConfig
from groundsense.errors import InputError
from groundsense.inputs.files import load_example

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

EXAMPLE = load_example("passages-qa")  # two supported sentences, then one invented (Gustave Eiffel)


def detected(scorer, **options):
    detector = Detector(scorer, score="fused", **options)
    return detector.detect(answer=EXAMPLE["answer"], passages=EXAMPLE["passages"], question=EXAMPLE["question"])


@pytest.mark.parametrize("mode", ["full", "two_pass"])
def test_each_sentence_is_scored_by_the_shipped_fusion_of_its_mode_and_flagged_at_its_threshold(scorer, mode):
    result = detected(scorer, mode=mode)
    fusion = shipped_lexical_fusion(scorer.name, scorer.precision, mode)
    assert result.score_rule == "fused" and result.threshold == fusion.threshold
    scored = [s for s in result.sentences if s.status == "scored"]
    assert len(scored) == 3
    for sentence in scored:  # the fusion of the signals the result reports, one sentence at a time
        features = {name: np.array([sentence.features[name]]) for name in fusion.inputs}
        assert sentence.score == pytest.approx(fusion.score(fusion.signals(features))[0], abs=1e-12)
        assert sentence.flagged is (sentence.score >= fusion.threshold)
    assert [s.flagged for s in scored] == [False, False, True]  # the invented sentence, and it alone
    answer = fusion.answer_score(np.array([s.score for s in scored]))
    assert result.answer.score == pytest.approx(answer) and result.answer.threshold == fusion.answer_threshold
    assert result.answer.flagged is True and result.answer.n_flagged == 1


def test_detect_and_its_stream_score_fused_by_default_and_each_sentence_says_why(scorer):
    from groundsense.result import percentile

    detector = Detector(scorer)
    fusion = shipped_lexical_fusion(scorer.name, scorer.precision, "full")
    result = detector.detect(answer=EXAMPLE["answer"], passages=EXAMPLE["passages"], question=EXAMPLE["question"])
    stream = detector.stream(EXAMPLE["question"], passages=EXAMPLE["passages"])
    stream.feed(EXAMPLE["answer"])
    streamed = stream.close()
    for done in (result, streamed):
        assert done.score_rule == "fused" and done.threshold == fusion.threshold
    for sentence in result.sentences:  # each signal's rank; their mean is the score
        features = {name: np.array([sentence.features[name]]) for name in fusion.inputs}
        expected = fusion.ranks(fusion.signals(features))[:, 0]
        assert list(sentence.ranks) == list(fusion.signal_names)
        assert list(sentence.ranks.values()) == pytest.approx(expected.tolist(), abs=1e-12)
        assert sentence.score == pytest.approx(float(np.mean(expected)), abs=1e-12)
        ranks = {name: percentile(share) for name, share in sentence.ranks.items()}
        assert sentence.explanation.startswith(f"evidence unused {ranks['sensitivity']} percentile, missing words "
                                               f"{ranks['overlap_chunk']}, missing stems {ranks['stem_novel']}")
    assert result.to_dict()["sentences"][2]["explanation"] == result.sentences[2].explanation
    assert "; absent from the evidence: Gustave, Eiffel" in result.sentences[2].explanation


def test_a_chunk_count_the_calibration_does_not_serve_ranks_the_gap(scorer):
    """As the sensitivity score falls back to the gap where the shipped calibration does not
    serve the chunk count (it serves 2 to 5), the fused score falls back to two-pass mode's
    fusion, whose first signal is the gap score: here, the evidence as one passage."""
    result = Detector(scorer, score="fused").detect(answer=EXAMPLE["answer"], question=EXAMPLE["question"],
                                                    passages=[" ".join(EXAMPLE["passages"])])
    two_pass = shipped_lexical_fusion(scorer.name, scorer.precision, "two_pass")
    assert len(result.chunks) == 1 and result.threshold == two_pass.threshold
    for sentence in result.sentences:
        features = {name: np.array([sentence.features[name]]) for name in two_pass.inputs}
        assert sentence.score == pytest.approx(two_pass.score(two_pass.signals(features))[0], abs=1e-12)


@pytest.mark.parametrize(("options", "message"), [
    ({"calibration": "src/groundsense/calibrations/smollm2-135m-instruct-k5.json"}, "drop --calibration"),
    ({"calibration": False}, "calibration=False asks for no flags"),
    ({"precision": "int8"}, "at int8 has none"),
    ({"scorer": "some/other-model"}, "some/other-model at fp32 has none"),
])
def test_what_the_fused_score_cannot_honour_is_refused_and_the_default_then_is_sensitivity(options, message):
    from groundsense.calibration.loaded import load_files

    given = {"scorer": "smollm2-135m-instruct", "precision": "fp32", **options}
    with pytest.raises(InputError, match=message):
        Adjudicator(*load_files(DetectorConfig(score="fused", **given)))
    assert Adjudicator(*load_files(DetectorConfig(**given))).config.score == "sensitivity"  # the default's


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_default_score_is_the_fused_one_where_its_fusions_ship(precision):
    adjudicator = Adjudicator(DetectorConfig(scorer="smollm2-135m-instruct", precision=precision))
    assert DetectorConfig().score == "auto" and adjudicator.config.score == "fused"
    shipped = shipped_lexical_fusion("smollm2-135m-instruct", precision, "full")
    assert adjudicator.describe(5) == {"score_rule": "fused", "calibration": "shipped",
                                       "threshold": shipped.threshold, "answer_threshold": shipped.answer_threshold}


@pytest.mark.parametrize(("target", "mode"), [({"target_recall": 0.8}, "full"), ({"target_precision": 0.25}, "full"),
                                              ({"target_recall": 0.8}, "two_pass")])
def test_a_target_moves_the_fused_sentence_threshold_along_its_curve_and_answers_follow_the_sentences(
        scorer, target, mode):
    fusion = shipped_lexical_fusion(scorer.name, scorer.precision, mode)
    curve = np.array(fusion.curves["sentence"])  # [threshold, precision, recall] on the training sentences
    result = detected(scorer, mode=mode, **target)
    if "target_recall" in target:  # the highest threshold that still caught that share
        expected = curve[curve[:, 2] >= target["target_recall"], 0].max()
    else:  # the lowest whose flags were that share right
        expected = curve[curve[:, 1] >= target["target_precision"], 0].min()
    assert result.score_rule == "fused" and result.threshold == expected != fusion.threshold
    assert all(s.flagged is bool(s.score >= expected) for s in result.sentences)
    assert result.answer.threshold is None and result.answer.flagged is any(s.flagged for s in result.sentences)


def test_a_target_the_fused_curve_never_reached_is_refused():
    with pytest.raises(InputError, match="the fused score: no threshold reached precision 0.99"):
        Adjudicator(DetectorConfig(scorer="smollm2-135m-instruct", precision="fp32", target_precision=0.99))


def test_an_unknown_score_is_refused():
    with pytest.raises(InputError, match="score must be one of auto, fused, sensitivity"):
        DetectorConfig(score="lexical")


@pytest.mark.slow  # loads the real scorer in the command
def test_detect_scores_fused_by_default_on_the_command_line_and_takes_score_sensitivity():
    import json

    from helpers.cli import run

    for score in ([], ["--score", "fused"]):  # the default, and asked for
        done = run("detect", "--example", "passages-qa", *score, "--json")
        assert done.exit_code == 0, done.output
        result = json.loads(done.stdout)
        assert result["score_rule"] == "fused" and [s["flagged"] for s in result["sentences"]] == [False, False, True]
    done = run("detect", "--example", "passages-qa", "--score", "sensitivity", "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["score_rule"] == "sensitivity", done.output


@pytest.mark.parametrize(("share", "text"), [(0.0, "1st"), (0.021, "2nd"), (0.03, "3rd"), (0.111, "11th"),
                                             (0.125, "12th"), (0.13, "13th"), (0.215, "21st"), (0.29, "29th"),
                                             (0.881, "88th"), (1.0, "99th")])
def test_a_rank_reads_as_an_ordinal_percentile(share, text):
    from groundsense.result import percentile

    assert percentile(share) == text
