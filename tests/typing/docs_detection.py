from collections.abc import Callable

from groundsense import (
    AnswerSummary,
    Detection,
    DetectionOptions,
    DetectionResult,
    SentenceResult,
    Truncation,
    segment_sentences,
)
from groundsense.inputs import CheckedRow
from groundsense.testing import check_detection


def share_found(sentence: str, chunk: str) -> float:
    """The share of the sentence's words that the chunk holds."""
    words, found = sentence.lower().split(), set(chunk.lower().split())
    return sum(word in found for word in words) / max(len(words), 1)


class WordOverlap(Detection):
    """Flags a sentence when under half its words stand in any one passage."""

    options = DetectionOptions(k=5, mode="full")  # the only k and mode a request may ask for (the default)

    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        self.with_options(**row.options)  # refuses a request's other k or mode
        given = row.arguments
        answer, chunks = given["answer"], given["passages"] or [given["context"] or ""]
        spans = row.spans or segment_sentences(answer)
        scores = [1.0 - max(share_found(span.of(answer), chunk) for chunk in chunks) for span in spans]
        sentences = [SentenceResult(i, span.start, span.end, span.of(answer), score, score >= 0.5,
                                    features={}, drops=[], jsds=[], support=None)
                     for i, (span, score) in enumerate(zip(spans, scores))]
        flagged = sum(score >= 0.5 for score in scores)
        summary = AnswerSummary(None, None, len(sentences), flagged, 0, flagged > 0, score=max(scores))
        return DetectionResult("word-overlap", "lexical", None, "word-overlap", 0.5, sentences, summary, Truncation())

    def describe(self, chunks: int | None = None) -> dict[str, object]:
        return {"kind": "word-overlap", "scorer": None, "threshold": 0.5}


report = check_detection(WordOverlap())   # raises ConformanceError at the first violation
print(report)                             # what it checked, and what it skipped (here: the stream)
