"""The verdict every integration reports, on the real default scorer."""

import subprocess
import sys

import pytest
from helpers.integration_example import INVENTED, SUPPORTED

from groundsense.config import DetectorConfig
from groundsense.detection import Detection
from groundsense.errors import GroundsenseError, InputError
from groundsense.inputs.text import segment_sentences
from groundsense.integrations.common import GroundingReport, check, evidence_arguments, evidence_texts
from groundsense.pipeline.detector import Detector
from groundsense.result import AnswerSummary, DetectionResult, SentenceResult, Truncation
from groundsense.service.alignscore import alignscore_response


@pytest.mark.slow
def test_report_names_the_invented_sentence_and_drops_it(detector, example):
    report = check(example["answer"], example["passages"], example["question"], detector)

    assert [s.text for s in report.unsupported] == [INVENTED]
    assert report.unjudged == []
    assert report.score == pytest.approx(2 / 3)
    assert report.passing is False
    assert report.grounded_answer == SUPPORTED
    assert INVENTED in report.feedback and "2 of 3 sentences supported" in report.feedback


@pytest.mark.slow
def test_a_supported_answer_passes(detector, example):
    report = check(SUPPORTED, example["passages"], example["question"], detector)

    assert report.passing is True and report.score == 1.0
    assert report.grounded_answer == SUPPORTED and report.rejected == []


def test_an_answer_flagged_as_a_whole_does_not_pass(answer_rule_detector, example):
    """The integrations' verdict is the answer verdict: an answer that the detection's answer rule
    flags with every sentence judged supported fails, and none of it is kept as grounded."""
    report = check(SUPPORTED, example["passages"], example["question"], answer_rule_detector)

    assert report.result.answer.flagged is True and report.rejected == []
    assert report.score == pytest.approx(2 / 3)  # its verdict one more judgement against it: 1 only where it passes
    assert report.passing is False and report.flagged_as_a_whole and report.grounded_answer == ""
    assert "The answer as a whole is flagged: its answer score" in report.feedback
    assert alignscore_response(report.result.to_dict()) == {"alignscore": pytest.approx(1 / 3)}  # NeMo blocks < 0.5


@pytest.mark.slow
def test_unjudged_sentences_fail_closed(scorer, example):
    """Past the answer token cap a sentence is not judged: it never counts as supported."""
    capped = Detector(scorer, k=5, max_answer_tokens=20)
    report = check(example["answer"], example["passages"], example["question"], capped)

    assert report.unjudged, "the cap should leave the last sentence unjudged"
    assert report.passing is False and report.score < 1
    for sentence in report.unjudged:
        assert sentence.text not in report.grounded_answer
        assert "not judged" in report.reason(sentence) and sentence.text in report.feedback


@pytest.mark.slow
def test_an_uncalibrated_detector_is_refused(scorer, example):
    with pytest.raises(GroundsenseError, match="no flag threshold"):
        check(example["answer"], example["passages"], detection=Detector(scorer, k=5, calibration=False))


@pytest.mark.parametrize(
    "answer, flags, kept",
    [
        ("One.\n\nTwo is invented. Three.", [False, True, False], "One.\n\nThree."),
        ("One. Two is invented.\n\nThree.", [False, True, False], "One.\n\nThree."),
        ("One.  Two.", [False, False], "One.  Two."),
        ("Invented. One.", [True, False], "One."),
        ("One. Not judged.", [False, None], "One."),
    ],
)
def test_grounded_answer_keeps_the_separators_of_kept_sentences(answer, flags, kept):
    from groundsense.inputs.text import segment_sentences
    from groundsense.result import AnswerSummary, DetectionResult, SentenceResult, Truncation

    spans = segment_sentences(answer)
    assert len(spans) == len(flags)
    sentences = [
        SentenceResult(i, span.start, span.end, span.of(answer), 0.0, flag, {}, [], [], None)
        for i, (span, flag) in enumerate(zip(spans, flags))
    ]
    verdict = True if True in flags else None if None in flags else False
    summary = AnswerSummary(0.0, 0.0, len(flags), flags.count(True), flags.count(None), verdict)
    result = DetectionResult("s", "full", "exact", "sensitivity", 1.0, sentences, summary, Truncation())
    assert GroundingReport(answer, result).grounded_answer == kept


class AllSupported(Detection):
    """A calibrated detection with no model that judges every sentence supported and counts its calls:
    for what an integration does with the detection it is given."""

    config = DetectorConfig()

    def __init__(self):
        self.calls = 0

    def detect_checked(self, row, stop=None):
        self.calls += 1
        answer = row.arguments["answer"]
        sentences = [SentenceResult(i, span.start, span.end, span.of(answer), 0.0, False, {}, [], [], None)
                     for i, span in enumerate(segment_sentences(answer))]
        summary = AnswerSummary(None, None, len(sentences), 0, 0, False)
        return DetectionResult("none", "full", None, "gap", 1.0, sentences, summary, Truncation())

    def describe(self, chunks=None):
        return {"kind": "all-supported", "scorer": None, "threshold": 1.0}


def test_detector_is_the_deprecated_old_name_of_detection(example):
    from groundsense.integrations.langchain import GroundsenseRunnable

    detection, answer, passages = AllSupported(), example["answer"], example["passages"]
    with pytest.warns(DeprecationWarning, match=r"check\(\): detector= is deprecated, pass detection="):
        old = check(answer, passages, detector=detection)
    assert detection.calls == 1 and old.passing
    assert old.result.to_dict() == check(answer, passages, detection=detection).result.to_dict()

    with pytest.warns(DeprecationWarning, match=r"GroundsenseRunnable\(\): detector= is deprecated") as caught:
        runnable = GroundsenseRunnable(detector=detection)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert runnable.detection is detection
    assert runnable.invoke({"answer": answer, "documents": passages}).passing and detection.calls == 3
    with pytest.warns(DeprecationWarning, match=r"GroundsenseRunnable.detector is deprecated, use .*\.detection"):
        assert runnable.detector is detection

    for call in (lambda: check(answer, passages, detection=detection, detector=detection),
                 lambda: GroundsenseRunnable(detection=detection, detector=detection)):
        with pytest.raises(TypeError, match="takes detection= or detector= .*not both"):
            call()


def test_evidence_is_read_from_framework_documents_and_nodes():
    import dspy
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore, TextNode

    items = ["a", Document(page_content="b"), TextNode(text="c"), NodeWithScore(node=TextNode(text="d"), score=0.5),
             {"text": "e"}]
    assert evidence_texts(items) == ["a", "b", "c", "d", "e"]
    assert evidence_texts("one context") == ["one context"]
    for one in (Document(page_content="b"), TextNode(text="c"), {"page_content": "f"}):  # a document not in a list
        assert len(evidence_texts(one)) == 1
    for bad in (None, 3, [object()]):
        with pytest.raises(InputError):
            evidence_texts(bad)
    with pytest.raises(InputError, match=r"evidence is a mapping \('doc-1', 'doc-2'…\), whose keys are no passages"):
        evidence_texts({"doc-1": "The bridge opened in 1937.", "doc-2": "Its span is 4,200 feet."})
    with pytest.raises(InputError, match=r"evidence is a mapping \('passages'…\)"):  # it iterates its keys
        evidence_texts(dspy.Prediction(passages=["The bridge opened in 1937."]))
    assert evidence_arguments("one context") == {"context": "one context"}
    assert evidence_arguments(("a", {"text": "b"})) == {"passages": ["a", "b"]}


def test_a_series_of_passages_is_read_as_its_values_not_taken_for_a_mapping():
    """A pandas Series has keys() (its index) but iterates its values: the passages, or no evidence."""
    import numpy as np
    import pandas as pd

    assert evidence_texts(pd.Series(["a", "b"], index=["doc-1", "doc-2"])) == ["a", "b"]
    assert evidence_texts(pd.Series([], dtype=object)) == []  # no evidence, not "a mapping (…)"
    with pytest.raises(InputError, match="cannot read a passage's text from a ndarray"):
        evidence_texts(pd.Series([np.array([1, 2]), np.array([3, 4])]))


@pytest.mark.slow
def test_one_string_of_evidence_is_a_context_as_every_entry_point_reads_it(detector):
    """A string is split into K chunks, as `detect --context`, MCP and the AlignScore route split it."""
    from groundsense.inputs.files import load_example

    clinical = load_example("clinical-summary")
    report = check(clinical["answer"], clinical["context"], clinical["question"], detector)
    direct = detector.detect(answer=clinical["answer"], context=clinical["context"], question=clinical["question"])
    assert len(report.result.chunks) == len(direct.chunks) == 5
    assert report.result.to_dict() == direct.to_dict()


def test_the_core_never_imports_an_integration():
    code = (
        "import sys, groundsense.cli, groundsense.pipeline.detector, groundsense.service.app, groundsense.rows.batch\n"
        "bad = sorted(m for m in sys.modules if m.startswith('groundsense.integrations') "
        "or m.split('.')[0] in {'guardrails', 'llama_index', 'langchain_core', 'ragas', 'mcp', 'pydantic_ai'})\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow  # loads the default detection, as an integration given none does
def test_an_integration_given_no_detection_scores_fused_and_says_why(example):
    from groundsense.integrations.common import default_detection

    assert default_detection().describe()["score_rule"] == "fused"  # the default score
    report = check(example["answer"], example["passages"], example["question"])
    assert report.result.score_rule == "fused" and [s.text for s in report.unsupported] == [INVENTED]
    reason = report.reason(report.unsupported[0])
    assert f"≥ threshold {report.result.threshold:.3f}); evidence unused " in reason  # its ranks, then
    assert "missing word pairs" in reason and "absent from the evidence: Gustave, Eiffel" in reason  # its terms


def test_the_score_is_1_only_where_the_answer_passes():
    from groundsense.result import support_score

    assert support_score([False, False], answer_flagged=False) == 1.0
    assert support_score([False, False], answer_flagged=True) == pytest.approx(2 / 3)  # flagged as a whole
    assert support_score([False, False]) == pytest.approx(2 / 3)  # a verdict not given is no clearance
    assert support_score([False, True, None], answer_flagged=True) == pytest.approx(1 / 3)
