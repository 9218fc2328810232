"""The cascade wrapper end to end: the real default scorer, then a real (lexical) verifier."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from groundsense.config import DetectorConfig
from groundsense.detection import Detection
from groundsense.errors import InputError, VerifierError
from groundsense.verification import Cascade, escalation_mask
from groundsense.verification.lexical import LexicalOverlapVerifier, overlap

PASSAGES = [
    "The Golden Gate Bridge opened to traffic on May 27, 1937, after four years of construction.",
    "The bridge's main span is 4,200 feet long, the longest in the world until 1964.",
]
ANSWER = (
    "The bridge's main span is 4,200 feet long. "
    "The bridge was designed by Gustave Eiffel and painted red to honour the city's Chinese community."
)


def test_escalation_takes_the_most_suspicious_share_and_skips_nan():
    scores = np.array([0.1, 0.9, np.nan, 0.5, 0.9])
    assert escalation_mask(scores, 0.5).tolist() == [False, True, False, False, True]
    assert escalation_mask(scores, 0.75).tolist() == [False, True, False, True, True]
    assert escalation_mask(scores, 0.05).tolist() == [False, True, False, False, False]  # ties: earlier first
    assert escalation_mask(scores, 0.0).sum() == 0 and escalation_mask(scores, 1.0).sum() == 4
    with pytest.raises(InputError):
        escalation_mask(scores, 1.5)


def test_a_cascade_streams_only_over_a_detectors_stream():
    # The cascade gives its verifier the chunks of the detector stream's evidence: over a
    # detection whose stream has none it failed with an AttributeError at the first flagged sentence.
    class Streams(Detection):
        config = DetectorConfig()

        def detect_checked(self, row, stop=None):
            raise AssertionError("not called")

        def describe(self, chunks=None):
            return {"kind": "streams", "scorer": "none"}

        def stream(self, question="", context=None, passages=None, score_every=16):
            return SimpleNamespace(text="", chunks=1, feed=lambda delta: [], close=lambda: None)

    with pytest.raises(InputError, match="AnswerStream, which has the evidence it scored, not a SimpleNamespace"):
        Cascade(Streams(), LexicalOverlapVerifier()).stream(passages=PASSAGES)


def test_lexical_overlap_finds_the_copied_chunk():
    sentence = "The main span is 4,200 feet long."
    assert overlap(sentence, PASSAGES)[1] == 1.0
    scores = LexicalOverlapVerifier().score_sentences("", PASSAGES, [sentence, "Eiffel painted it red."])
    assert scores[0] == 0.0 and scores[1] > 0.5


def test_cascade_escalates_the_suspicious_sentence_to_the_verifier(detector):
    alone = detector.detect(answer=ANSWER, passages=PASSAGES)
    cascade = Cascade(detector, LexicalOverlapVerifier(), escalate=0.5)
    result = cascade.detect(answer=ANSWER, passages=PASSAGES)
    copied, invented = result.sentences
    assert invented.verifier_score is not None and invented.verifier_score > 0.5 and invented.flagged is True
    assert copied.verifier_score is None and copied.flagged == alone.sentences[0].flagged
    assert copied.score == pytest.approx(alone.sentences[0].score)
    data = result.to_dict()
    assert data["cascade"] == {"verifier": "lexical-overlap", "escalate": 0.5, "threshold": 0.5, "n_escalated": 1}
    assert data["sentences"][1]["verifier_score"] == invented.verifier_score
    assert result.answer.n_flagged >= 1 and result.answer.flagged is True


def test_cascade_at_full_escalation_lets_the_verifier_clear_the_copied_sentence(detector):
    result = Cascade(detector, LexicalOverlapVerifier(), escalate=1.0).detect(answer=ANSWER, passages=PASSAGES)
    copied, invented = result.sentences
    assert copied.verifier_score < 0.2 and copied.flagged is False
    assert invented.flagged is True


def test_cascade_takes_any_object_with_score_sentences_and_rejects_one_without(detector):
    class Constant:  # not a Verifier subclass: the method is what counts
        def score_sentences(self, question, chunks, sentences):
            return [0.9] * len(sentences)

    result = Cascade(detector, Constant(), escalate=1.0).detect(answer=ANSWER, passages=PASSAGES)
    assert result.cascade["verifier"] == "Constant" and all(s.flagged for s in result.sentences)
    with pytest.raises(TypeError, match=r"needs a score_sentences\(question, chunks, sentences\) method, and object"):
        Cascade(detector, object())  # a wrong type, as a detection that is none is
    with pytest.raises(TypeError, match=r"^Constant is a class, not a verifier: pass an instance of it"):
        Cascade(detector, Constant)  # it has score_sentences, unbound: it read as "and ABCMeta has none"


def test_a_verifier_that_miscounts_its_scores_is_blamed_not_the_input(detector):
    """It was an InputError ('cannot be scored as given': exit 2 and HTTP 422 blaming the request)."""
    class OneScore:
        def score_sentences(self, question, chunks, sentences):
            return [0.9]

    with pytest.raises(VerifierError, match=r"^the verifier OneScore returned 1 scores for 2 sentences: a verifier "
                                            "returns one score per sentence"):
        Cascade(detector, OneScore(), escalate=1.0).detect(answer=ANSWER, passages=PASSAGES)


def test_attribution_rebuilds_the_chunks_the_detector_scored(scorer, detector):
    from groundsense.inputs.text import join_passages
    from groundsense_eval.caches.attribution import case_chunks
    from groundsense_eval.data.cases import Case, LabelledSentence

    context = " ".join(PASSAGES) + " Its colour, International Orange, was chosen to stand out in fog."
    cases = [
        Case("t:1", "s1", "QA", "", context, None, ANSWER, [LabelledSentence(0, 10, False)], "test"),
        Case("t:2", "s2", "QA", "", None, PASSAGES, ANSWER, [LabelledSentence(0, 10, False)], "test"),
    ]
    config = {"k": detector.config.k, "max_context_tokens": 40}  # a cap that cuts the context
    chunks = case_chunks(cases, scorer, config)
    for case in cases:
        small = type(detector)(scorer, k=detector.config.k, calibration=False, max_context_tokens=40)
        result = small.detect(answer=case.answer, context=case.context, passages=case.passages)
        text = case.context if case.context is not None else join_passages(case.passages)[0]
        assert chunks[case.id] == [text[c.start : c.end] for c in result.chunks]
        assert result.truncated.context


def test_cascade_with_the_llm_judge_scores_what_the_judge_scores_alone(detector):
    from groundsense.inputs.text import Span
    from groundsense.verification.judge import JudgeVerifier
    from groundsense.verification.verifier import SentenceInput

    judge = JudgeVerifier(detector.scorer)  # the default scorer is an instruct model: it can judge
    result = Cascade(detector, judge, escalate=1.0).detect(answer=ANSWER, passages=PASSAGES)
    assert result.cascade["verifier"] == "judge:smollm2-135m-instruct" and result.cascade["n_escalated"] == 2
    spans = [Span(s.start, s.end) for s in result.sentences]
    alone = judge.verify(SentenceInput("", ANSWER, spans, passages=PASSAGES)).score
    for sentence, expected in zip(result.sentences, alone):
        assert 0.0 <= sentence.verifier_score <= 1.0
        assert sentence.verifier_score == pytest.approx(expected, abs=1e-4)
        assert sentence.flagged is bool(expected >= 0.5)


class Fixed:
    """A verifier that gives every sentence the same score (None: it could not judge one)."""

    def __init__(self, score):
        self.score, self.name = score, f"fixed-{score}"

    def score_sentences(self, question, chunks, sentences):
        return [self.score] * len(sentences)


def test_a_cascade_keeps_the_detectors_answer_rule_on_the_sentences_it_did_not_clear(answer_rule_detector):
    alone = answer_rule_detector.detect(answer=ANSWER, passages=PASSAGES)
    assert alone.answer.flagged is True and alone.answer.n_flagged == 0  # by the answer rule alone
    unescalated = Cascade(answer_rule_detector, Fixed(0.0), escalate=0.0).detect(answer=ANSWER, passages=PASSAGES)
    assert unescalated.answer == alone.answer and unescalated.cascade["n_escalated"] == 0
    one_cleared = Cascade(answer_rule_detector, Fixed(0.0), escalate=0.5).detect(answer=ANSWER, passages=PASSAGES)
    assert [s.flagged for s in one_cleared.sentences] == [False, False] and one_cleared.cascade["n_escalated"] == 1
    assert one_cleared.answer.flagged is True  # the rule still fires on the sentence the verifier did not read
    assert one_cleared.answer.score < alone.answer.score
    all_cleared = Cascade(answer_rule_detector, Fixed(0.0), escalate=1.0).detect(answer=ANSWER, passages=PASSAGES)
    assert all_cleared.answer.flagged is False and all_cleared.answer.score is None


def test_a_sentence_the_verifier_could_not_judge_is_undecided_never_supported(detector):
    result = Cascade(detector, Fixed(None), escalate=1.0).detect(answer=ANSWER, passages=PASSAGES)
    assert [s.flagged for s in result.sentences] == [None, None]
    assert result.answer.flagged is not False  # never cleared (here the detector's answer rule flags it)
    assert all(math.isnan(s.verifier_score) for s in result.sentences)
