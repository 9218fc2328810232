"""End to end with the real default scorer: no mocked model. The scorer's bookkeeping (how the
conditions' caches are kept, stacked and pieced) is checked against independent passes on the
real scorer at the shipped K, and on the tiny model at other K, for the other ways of keeping
the evidence, and for where the spans point."""

import gzip
import itertools
import json
import math
from dataclasses import FrozenInstanceError

import numpy as np
import pytest
from helpers.bridge_answer import ANSWER, PASSAGES, assert_same_sentence_features

from groundsense.calibration.adjudicator import answer_summary
from groundsense.calibration.calibration import shipped_calibration
from groundsense.config import DetectorConfig
from groundsense.errors import InputError
from groundsense.features import GROUNDING, assign_tokens, sentence_features
from groundsense.inputs.text import chunk_context, segment_sentences
from groundsense.pipeline.detector import Detector
from groundsense.result import ChunkSpan, DetectionResult, SentenceResult, Truncation
from groundsense.scorer.reference import independent_token_scores
from groundsense_eval.data.locations import BENCHMARK_PATHS, data_root

RAGTRUTH = data_root() / BENCHMARK_PATHS["ragtruth"]


def test_copied_sentence_reacts_more_than_an_invented_one_and_finds_its_passage(detector):
    result = detector.detect(answer=ANSWER, passages=PASSAGES, question="How long is the main span?")
    copied, invented = result.sentences
    assert copied.features["gap"] > invented.features["gap"]
    assert copied.features["drop_max"] > invented.features["drop_max"]
    assert copied.support is not None and copied.support.passage == 1
    assert copied.support.text == PASSAGES[1]
    assert copied.score < invented.score  # higher = more suspicious


def test_prefix_reuse_equals_independent_passes(scorer):
    context = " ".join(PASSAGES) + " The bridge is painted every year by a crew of about 30."
    chunks = chunk_context(context, 5)
    prompt = scorer.encode("Tell me about the bridge.", [c.removal.of(context) for c in chunks], ANSWER, 256)
    fast = scorer.score(prompt)
    slow = independent_token_scores(scorer, prompt)
    assert fast.logp.shape == slow.logp.shape == (2 + len(chunks), len(prompt.answer.ids))
    assert np.abs(fast.logp - slow.logp).max() <= 1e-4
    assert np.abs(fast.jsd - slow.jsd).max() <= 1e-4
    assert_same_sentence_features(fast, slow, prompt, GROUNDING + ("surprisal",))
    assert fast.tokens_processed < slow.tokens_processed



def test_identical_conditions_give_zero_features_on_the_real_scorer(scorer):
    # Chunks with no tokens: every condition is the same prompt.
    prompt = scorer.encode("", [], ANSWER, 256)
    prompt.chunks.extend([[], []])
    scores = scorer.score(prompt)
    spans = segment_sentences(ANSWER)
    values = sentence_features(scores.logp, scores.jsd, assign_tokens(prompt.answer.offsets, spans), len(spans)).values
    for name in GROUNDING:  # zero within fp32 noise: the project's exactness bar, 1e-4
        assert np.abs(values[name]).max() <= 1e-4, name


def test_jsd_features_are_within_bounds(detector):
    result = detector.detect(answer=ANSWER, passages=PASSAGES)
    for s in result.sentences:
        for name in ("jsd_noctx", "jsd_loo_max", "jsd_loo_mean"):
            assert 0 <= s.features[name] <= math.log(2)


def _ragtruth_case(task):
    with gzip.open(RAGTRUTH, "rt", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["split"] == "test" and row["task_type"] == task:
                return row


@pytest.mark.data
@pytest.mark.parametrize("task", ["Summary", "Data2txt"])
def test_offsets_round_trip_on_ragtruth_answers(tiny_scorer, task):
    """Plumbing: where the spans point does not depend on the scores, so the tiny model serves."""
    row = _ragtruth_case(task)
    result = Detector(tiny_scorer, k=5, calibration=False).detect(answer=row["output"], context=row["context"],
                                                                  question=row["query"])
    assert result.sentences and any(s.support is not None for s in result.sentences)
    for s in result.sentences:
        assert row["output"][s.start : s.end] == s.text
        if s.support is not None:
            assert row["context"][s.support.start : s.support.end] == s.support.text
    assert len(result.chunks) == 5


def test_long_context_is_cut_and_reported(scorer):
    short = Detector(scorer, k=3, max_context_tokens=20, calibration=False)
    context = " ".join(PASSAGES * 3)
    result = short.detect(answer=ANSWER, context=context)
    assert result.truncated.context and result.truncated.context_tokens_removed > 0
    assert result.chunks[-1].end < len(context)


@pytest.mark.parametrize("as_passages", [True, False])
def test_a_term_only_the_cut_evidence_holds_is_named_apart_from_one_it_lacks(tiny_scorer, as_passages):
    """The flag's reason must not call "absent" what the budget cut off: the reviewer is told
    which terms lie only in the cut evidence (plumbing: the terms do not depend on the scores)."""
    passages = ["The bridge opened in 1937 after four years of work.",
                "Gustave Eiffel painted the bridge red in 1990."]
    evidence = {"passages": passages} if as_passages else {"context": " ".join(passages)}
    answer = "The bridge opened in 1937. Gustave Eiffel painted it blue in 1990."
    cut = Detector(tiny_scorer, mode="two_pass", max_context_tokens=14, calibration=False).detect(
        answer=answer, **evidence)
    assert cut.truncated.context
    opened, painted = cut.sentences
    assert opened.absent == opened.in_cut_evidence == [] and opened.explanation is None
    assert painted.absent == ["Gustave", "Eiffel", "1990", "painted", "blue"]
    assert painted.in_cut_evidence == ["Gustave", "Eiffel", "1990", "painted"]
    assert painted.explanation == ("absent from the evidence: blue; "
                                   "only in the evidence cut to fit the budget: Gustave, Eiffel, 1990, painted")
    assert painted.to_dict()["in_cut_evidence"] == painted.in_cut_evidence
    whole = Detector(tiny_scorer, mode="two_pass", calibration=False).detect(answer=answer, **evidence)
    assert not whole.truncated.context
    assert whole.sentences[1].absent == ["blue"] and whole.sentences[1].in_cut_evidence == []
    assert whole.sentences[1].explanation == "absent from the evidence: blue"


def test_sentences_past_the_answer_cap_are_unscored_not_supported(scorer):
    capped = Detector(scorer, max_answer_tokens=16, calibration=False)
    result = capped.detect(answer=ANSWER, passages=PASSAGES)
    first, second = result.sentences
    assert first.status == "scored"
    assert second.status == "unscored" and second.score is None and second.flagged is None
    assert result.truncated.answer_tokens_unscored > 0
    assert result.answer.flagged is not False


def test_two_pass_mode_scores_with_the_gap_only(scorer):
    two = Detector(scorer, mode="two_pass", score="sensitivity")
    result = two.detect(answer=ANSWER, passages=PASSAGES)
    assert result.score_rule == "gap"
    for s in result.sentences:
        assert s.drops == [] and s.support is None
        assert s.score == pytest.approx(-s.features["gap"])


def test_the_shipped_calibration_is_the_one_fitted_on_the_chunks_scored(scorer):
    """Passages ignore K, so the calibration is looked up by the chunks scored: the shipped one,
    fitted on answers scored in 2 to 5 chunks, judges those at any K, and the gap score
    (whose threshold does not depend on the chunks) the others."""
    shipped = shipped_calibration(scorer.name, None)
    three = Detector(scorer, k=7, score="sensitivity").detect(answer=ANSWER, passages=PASSAGES)
    assert len(three.chunks) == 3 and three.score_rule == "sensitivity"
    assert three.threshold == shipped.thresholds["sensitivity"]
    assert all(s.flagged is not None for s in three.sentences)
    more = ["The bridge is in San Francisco.", "It carries US Route 101.", "It is painted International Orange."]
    six = Detector(scorer, k=5, score="sensitivity").detect(answer=ANSWER, passages=[*PASSAGES, *more])
    assert len(six.chunks) == 6 and six.score_rule == "gap" and six.threshold == shipped.thresholds["gap"]
    assert [s.score for s in six.sentences] == [-s.features["gap"] for s in six.sentences]


def test_a_target_recall_or_precision_moves_the_threshold_along_the_shipped_curve(scorer):
    shipped = shipped_calibration(scorer.name, None)
    base = Detector(scorer, score="sensitivity").detect(answer=ANSWER, passages=PASSAGES)
    for target in ({"target_recall": 0.95}, {"target_recall": 0.3}, {"target_precision": 0.2}):
        result = Detector(scorer, score="sensitivity", **target).detect(answer=ANSWER, passages=PASSAGES)
        assert result.threshold == shipped.threshold("sensitivity", "sentence", *DetectorConfig(**target).targets)
        assert result.answer.threshold == result.threshold  # the answer is flagged when any sentence is
        assert [s.score for s in result.sentences] == [s.score for s in base.sentences]  # where flags fall, only
        assert [s.flagged for s in result.sentences] == [s.score >= result.threshold for s in result.sentences]
    lenient = Detector(scorer, score="sensitivity", target_recall=0.95).detect(answer=ANSWER, passages=PASSAGES)
    strict = Detector(scorer, score="sensitivity", target_recall=0.3).detect(answer=ANSWER, passages=PASSAGES)
    assert lenient.threshold < strict.threshold
    assert sum(s.flagged for s in lenient.sentences) >= sum(s.flagged for s in strict.sentences)
    with pytest.raises(InputError, match="needs a labelled calibration"):
        Detector(scorer, calibration=False, target_recall=0.9)
    top = {d: max(precision for _, precision, _ in shipped.curves[d]) for d in ("sensitivity", "gap")}
    assert top["gap"] < 0.3 <= top["sensitivity"]  # the gap also judges (other chunk counts), so it must reach it
    with pytest.raises(InputError, match=f"the gap score: no threshold reached precision 0.3 .* at most "
                                         f"{top['gap']:.3f}\\). It must reach it too: it judges the answers scored"):
        Detector(scorer, score="sensitivity", target_precision=0.3)
    with pytest.raises(InputError, match="the sensitivity score: no threshold reached precision 0.5"):
        Detector(scorer, score="sensitivity", target_precision=0.5)  # the detector asked for is checked first


def _sentence(score, flagged, status="scored"):
    return SentenceResult(0, 0, 1, "x", score, flagged, {"n_tokens": 1.0, "gap": 0.0}, [], [], None, status=status)


@pytest.mark.parametrize("scores, flags, threshold, verdict", [
    ([1.0, 3.0], [False, True], 2.5, True),  # the most suspicious sentence reaches the answer threshold
    ([1.0, 3.0], [False, True], 3.5, True),  # a flagged sentence flags the answer (a cascade's verifier may flag one)
    ([1.0, 2.0], [False, False], 1.5, True),  # no sentence flagged, yet the answer is (a lower answer threshold)
    ([1.0, None], [False, None], 3.5, None),  # a sentence not judged: never cleared
    ([1.0, None], [False, None], 0.5, True),
    ([1.0, 3.0], [False, True], None, True),  # no answer threshold: flagged when any sentence is
    ([1.0, None], [False, None], None, None),
])
def test_the_answer_verdict_is_the_answer_threshold_on_its_most_suspicious_sentence(scores, flags, threshold, verdict):
    sentences = [_sentence(s, f, "scored" if s is not None else "unscored") for s, f in zip(scores, flags)]
    summary = answer_summary(sentences, threshold)
    assert summary.flagged is verdict
    assert summary.score == max(s for s in scores if s is not None) and summary.threshold == threshold


def test_a_nan_score_leaves_the_answer_verdict_to_the_others_in_any_order():
    for scores, flags in (([math.nan, 5.0], [False, True]), ([5.0, math.nan], [True, False])):
        summary = answer_summary([_sentence(s, f) for s, f in zip(scores, flags)], 1.0)
        assert summary.flagged is True and summary.score == 5.0


def test_a_result_is_frozen_and_its_typed_chunks_print_as_the_json_contract_says():
    sentences = [_sentence(2.0, True)]
    result = DetectionResult("s", "full", "exact", "sensitivity", 1.0, sentences, answer_summary(sentences, 1.0),
                             Truncation(), chunks=[ChunkSpan(0, 0, 5), ChunkSpan(1, 7, 12, passage=1)])
    with pytest.raises(FrozenInstanceError):
        result.warnings = ["changed after it was built"]
    with pytest.raises(FrozenInstanceError):
        result.sentences[0].flagged = False
    assert result.to_dict()["chunks"] == [{"index": 0, "start": 0, "end": 5, "passage": None},
                                          {"index": 1, "start": 7, "end": 12, "passage": 1}]


def test_given_sentence_spans_are_used(detector):
    result = detector.detect(answer=ANSWER, passages=PASSAGES, sentences=[(0, 10), (10, len(ANSWER))])
    assert [(s.start, s.end) for s in result.sentences] == [(0, 10), (10, len(ANSWER))]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"answer": "  ", "passages": PASSAGES}, "answer is empty"),
        ({"answer": ANSWER, "context": " \n "}, "evidence is empty"),
        ({"answer": ANSWER, "passages": []}, "evidence is empty"),
        ({"answer": ANSWER}, "evidence is empty"),
        ({"answer": ANSWER, "context": "x", "passages": ["y"]}, "not both"),
        ({"answer": ANSWER, "context": "x", "sentences": [(0, 999)]}, "inside the answer"),
    ],
)
def test_bad_input_is_refused_with_a_message(detector, kwargs, message):
    with pytest.raises(InputError, match=message):
        detector.detect(**kwargs)


def test_answers_over_the_same_evidence_reuse_its_encoding(scorer):
    from groundsense.scorer import Scorer

    chunks = [p + " " for p in PASSAGES]
    rows = 2 + len(chunks)
    first = scorer.encode("q", chunks, ANSWER, 256)
    second = scorer.encode("another question", chunks, "The bridge opened in 1937.", 256)
    third = scorer.encode("another question", chunks, "The bridge is orange.", 256)
    scorer.score(first)
    reused = scorer.score(second)  # same evidence, new question: no evidence token encoded again
    assert reused.tokens_processed == rows * (len(second.middle) + len(second.answer.ids) - 1)
    same_question = scorer.score(third)  # and the same question as well: only the answer
    assert same_question.tokens_processed == rows * len(third.answer.ids)
    for prompt, warm in ((second, reused), (third, same_question)):
        cold = Scorer.from_model(scorer.model, scorer.tokenizer, scorer.name, evidence_cache_bytes=0).score(prompt)
        assert cold.tokens_processed > warm.tokens_processed
        assert np.abs(cold.logp - warm.logp).max() <= 1e-4 and np.abs(cold.jsd - warm.jsd).max() <= 1e-4
        slow = independent_token_scores(scorer, prompt)
        assert np.abs(slow.logp - warm.logp).max() <= 1e-4 and np.abs(slow.jsd - warm.jsd).max() <= 1e-4


@pytest.mark.parametrize("k, held", [(2, "tiny_scorer"), pytest.param(5, "scorer", marks=pytest.mark.slow),
                                     (8, "tiny_scorer")])
def test_separate_and_batched_conditions_equal_independent_passes_whole_and_streamed(request, k, held):
    """Both ways of running the conditions' tails, one forward call per condition or every
    condition in one call (their caches, of different lengths, left-padded and masked), give
    the reference's scores for a whole answer and for one fed in uneven pieces."""
    from groundsense.scorer import Scorer
    from groundsense.scorer.passes import StackedCaches

    scorer = request.getfixturevalue(held)

    context = " ".join(PASSAGES * 3)
    chunks = chunk_context(context, k)
    assert len(chunks) == k
    prompt = scorer.encode("Tell me about the bridge.", [c.removal.of(context) for c in chunks], ANSWER, 256)
    slow = independent_token_scores(scorer, prompt)
    ids = prompt.answer.ids
    cuts = [0, 1, 4, 11, len(ids)]
    for batched in (False, True):
        way = Scorer.from_model(scorer.model, scorer.tokenizer, scorer.name, batch_conditions=batched)
        whole = way.score(prompt)
        conditions = way.open_conditions(prompt.prefix, prompt.chunks, prompt.middle)
        assert isinstance(conditions.caches, StackedCaches) == batched
        pieces = [way.score_next(conditions, ids[a:b]) for a, b in itertools.pairwise(cuts)]
        streamed = np.hstack([p.logp for p in pieces]), np.hstack([p.jsd for p in pieces])
        for logp, jsd in ((whole.logp, whole.jsd), streamed):
            assert np.abs(logp - slow.logp).max() <= 1e-4, batched
            assert np.abs(jsd - slow.jsd).max() <= 1e-4, batched


def test_long_evidence_encoded_in_pieces_equals_independent_passes(tiny_scorer):
    from groundsense.scorer.passes import ENCODE_PIECE

    scorer = tiny_scorer

    context = " ".join(PASSAGES * 20)  # several pieces of ENCODE_PIECE tokens
    chunks = chunk_context(context, 3)
    prompt = scorer.encode("q", [c.removal.of(context) for c in chunks], ANSWER, 256)
    assert sum(map(len, prompt.chunks)) > 2 * ENCODE_PIECE
    fast, slow = scorer.score(prompt), independent_token_scores(scorer, prompt)
    assert np.abs(fast.logp - slow.logp).max() <= 1e-4 and np.abs(fast.jsd - slow.jsd).max() <= 1e-4


def test_one_cache_for_every_condition_equals_kept_caches_and_independent_passes(tiny_scorer):
    """With no evidence kept for later answers, every condition reuses one cache in turn."""
    from groundsense.scorer import Scorer

    scorer = tiny_scorer

    single = Scorer.from_model(scorer.model, scorer.tokenizer, scorer.name, evidence_cache_bytes=0)
    context = " ".join(PASSAGES * 8)  # the leave-one-out tails span more than one encoding piece
    chunks = chunk_context(context, 5)
    prompt = scorer.encode("q", [c.removal.of(context) for c in chunks], ANSWER, 256)
    scorer.forget_evidence()
    one, kept, slow = single.score(prompt), scorer.score(prompt), independent_token_scores(scorer, prompt)
    assert one.tokens_processed == kept.tokens_processed < slow.tokens_processed
    assert np.abs(one.logp - slow.logp).max() <= 1e-4 and np.abs(one.jsd - slow.jsd).max() <= 1e-4
    assert np.abs(one.logp - kept.logp).max() <= 1e-4  # fp32 noise between the two paths: the exactness bar


def test_a_bf16_streams_close_is_detects_result_and_keeps_what_feed_returned(tiny_scorer):
    """In bf16 a stream's steps round otherwise than detect's passes: the close scores the answer
    again, so its result is detect's exactly, and ``in_flight`` keeps the verdicts feed gave."""
    import copy

    import torch

    from groundsense import Scorer

    model = copy.deepcopy(tiny_scorer.model).to(torch.bfloat16)
    scorer = Scorer.from_model(model, tiny_scorer.tokenizer, "tiny-random-llama", precision="bf16")
    detector = Detector(scorer, calibration=False, k=2)
    passages = ["The bridge opened in 1937 after four years of work.", "Its main span is 4,200 feet long."]
    answer = "The bridge opened in 1937. Its main span is 4,200 feet. It was painted gold in 1990."
    stream = detector.stream(passages=passages)
    fed = [s for start in range(0, len(answer), 4) for s in stream.feed(answer[start : start + 4])]
    result = stream.close()
    spans = [(s.start, s.end) for s in result.sentences]
    reference = detector.detect(answer, passages=passages, sentences=spans)
    assert result.precision == "bf16" and fed
    assert [(v.index, v.score) for v in result.in_flight] == [(s.index, s.score) for s in fed]
    assert {k: v for k, v in result.to_dict().items() if k != "in_flight"} == reference.to_dict()


def test_threads_calling_one_detector_over_one_evidence_get_what_one_thread_gets(detector):
    """Threads take turns on the scorer (its kept evidence, stop flag and tokenizer are shared):
    without that, two calls over the same evidence extended one cache and failed in attention."""
    from concurrent.futures import ThreadPoolExecutor

    from helpers.same_result import assert_same

    answers = [ANSWER, "The bridge opened in 1937. It is painted red."]
    alone = [detector.detect(answer=answer, passages=PASSAGES) for answer in answers]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: detector.detect(answer=answers[i % 2], passages=PASSAGES), range(8)))
    for i, result in enumerate(together):
        assert_same(result, alone[i % 2], tol=1e-6)
