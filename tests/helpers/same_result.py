"""Whether two detection results agree: a streamed one and ``detect``'s on the same spans."""

import numpy as np
import pytest


def assert_same(result, reference, tol=1e-4):
    """The same sentences, verdicts, support chunks and truncation, and scores, features, drops and
    JSDs within ``tol``. Scores ``tol`` apart may round to either side of a threshold, and drops
    within ``tol`` of each other to either chunk: a verdict, or a support chunk, is compared
    wherever the reference keeps its score, or its largest drop, more than ``tol`` clear."""
    assert len(result.sentences) == len(reference.sentences)
    any_near = False
    for s, r in zip(result.sentences, reference.sentences):
        assert (s.start, s.end, s.text, s.status, s.reason) == (r.start, r.end, r.text, r.status, r.reason)
        near = _within(r.score, reference.threshold, tol)
        any_near |= near
        if not near:
            assert s.flagged == r.flagged
        if not _runner_up_within(r.drops, tol):
            assert (s.support and s.support.chunk) == (r.support and r.support.chunk)
        if s.score is not None:
            assert s.score == pytest.approx(r.score, abs=tol)
        for name, value in s.features.items():
            assert np.isclose(value, r.features[name], atol=tol, equal_nan=True), name
        assert np.allclose(s.drops, r.drops, atol=tol, equal_nan=True)
        assert np.allclose(s.jsds, r.jsds, atol=tol, equal_nan=True)
    if not any_near and not _within(reference.answer.score, reference.answer.threshold, tol):
        assert result.answer.flagged == reference.answer.flagged
    assert result.truncated.to_dict() == reference.truncated.to_dict()


def _within(score, threshold, tol) -> bool:
    return score is not None and threshold is not None and abs(score - threshold) <= tol


def _runner_up_within(drops, tol) -> bool:
    """Whether the two largest finite drops lie within ``tol`` of each other."""
    values = np.asarray(drops, float)
    finite = np.sort(values[np.isfinite(values)])
    return len(finite) >= 2 and finite[-1] - finite[-2] <= tol
