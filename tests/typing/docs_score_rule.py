from collections.abc import Callable
from dataclasses import replace

from groundsense import Detection, DetectionOptions, DetectionResult, Detector
from groundsense.inputs import CheckedRow
from groundsense.testing import check_detection


class NegativeGap(Detection):
    """Flags a sentence whose `gap` feature is at most -threshold (its score: minus the gap)."""

    def __init__(self, detector: Detector, threshold: float = 0.5) -> None:
        self.detector, self.threshold = detector, threshold

    @property
    def options(self) -> DetectionOptions:
        return self.detector.options

    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        self.with_options(**row.options)  # refuses a k or mode other than the detector's
        result = self.detector.detect_checked(row, stop)
        sentences = []
        for s in result.sentences:
            gap = s.features.get("gap") if s.status == "scored" and s.features else None
            score = None if gap is None else -gap
            sentences.append(replace(s, score=score, flagged=None if score is None else score >= self.threshold))
        n_flagged = sum(s.flagged is True for s in sentences)
        undecided = any(s.flagged is None for s in sentences)  # fail closed: never cleared unjudged
        answer = replace(result.answer, n_flagged=n_flagged, threshold=None,
                         flagged=True if n_flagged else None if undecided else False,
                         score=max((s.score for s in sentences if s.score is not None), default=None))
        return replace(result, sentences=sentences, answer=answer, threshold=self.threshold,
                       score_rule="negative-gap")

    def describe(self, chunks: int | None = None) -> dict[str, object]:
        return {**self.detector.describe(chunks), "kind": "negative-gap", "threshold": self.threshold}


report = check_detection(NegativeGap(Detector()))
