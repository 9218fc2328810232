"""A user's script, type-checked by CI's mypy run ([tool.mypy] files): the public names are
the real types a type checker sees, not ``Any``; ``assert_type`` fails the run where they are
not."""

from collections.abc import Callable

from typing_extensions import assert_type

import groundsense
from groundsense import (
    Cascade,
    Detection,
    DetectionResult,
    Detector,
    DetectorConfig,
    ResultRecord,
    SentenceRecord,
    make_detection,
)
from groundsense.calibration import RankFusion, shipped_fusion
from groundsense.inputs import CheckedRow, check_row
from groundsense.testing import ConformanceReport, check_detection
from groundsense.verification import ModelVerifier, SentenceInput, VerifierScores, make_verifier


def check(answer: str, passages: list[str]) -> None:
    detection = make_detection(DetectorConfig())
    assert_type(detection, Detection)
    assert_type(detection.detect(answer=answer, passages=passages), DetectionResult)
    assert_type(check_detection(detection), ConformanceReport)
    assert_type(Detector(), Detector)
    assert_type(groundsense.Cascade, type[Cascade])
    flagged: list[bool | None] = [s.flagged for s in Detector().detect(answer=answer, passages=passages).sentences]
    assert_type(flagged, list[bool | None])
    for s in Detector().detect(answer=answer, passages=passages).sentences:  # the README's loop
        assert_type(s.score, float | None)  # None: not scored, so the README prints it as it is
    record = Detector().detect(answer=answer, passages=passages).to_dict()  # what --json prints
    assert_type(record, ResultRecord)
    assert_type(record["sentences"][0], SentenceRecord)
    assert_type(record["answer"]["flagged"], bool | None)


def extend(spec: str) -> None:
    """A researcher's or extension's names, from the public modules (docs/architecture.md)."""
    verifier = make_verifier(spec)
    assert_type(verifier, ModelVerifier)
    assert_type(verifier.verify(SentenceInput.from_texts("q", ["a."], ["One."])), VerifierScores)
    assert_type(shipped_fusion(spec), RankFusion | None)


class Delegating(Detection):
    """A detection of one's own, its hook typed from the public names (docs/python.md)."""

    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        assert_type(check_row({"answer": "One.", "context": "Two."}), CheckedRow)
        assert_type(row.arguments["answer"], str)  # what the hook reads, not Any
        assert_type(row.arguments["question"], str)
        assert_type(row.arguments["context"], str | None)
        assert_type(row.arguments["passages"], list[str] | None)
        assert_type(row.options.get("k"), int | None)
        return Detector().with_options(**row.options).detect_checked(row, stop)

    def describe(self, chunks: int | None = None) -> dict:
        return {"kind": "delegating", "scorer": None}


class EveryOtherSentence:
    """A verifier of one's own that subclasses nothing: any object with score_sentences
    (docs/python.md), which a cascade takes for a type checker as at run time."""

    def score_sentences(self, question: str, chunks: list[str], sentences: list[str]) -> list[float]:
        return [float(i % 2) for i in range(len(sentences))]


def cascade_of_ones_own(detector: Detector) -> None:
    assert_type(Cascade(detector, EveryOtherSentence()), Cascade)
