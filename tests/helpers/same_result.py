"""Whether two detection results agree: a streamed one and ``detect``'s on the same spans."""

import numpy as np
import pytest


def assert_same(result, reference, tol=1e-4):
    """The same sentences, verdicts, support chunks and truncation, and scores, features, drops and
    JSDs within ``tol``."""
    assert len(result.sentences) == len(reference.sentences)
    for s, r in zip(result.sentences, reference.sentences):
        assert ((s.start, s.end, s.text, s.status, s.reason, s.flagged)
                == (r.start, r.end, r.text, r.status, r.reason, r.flagged))
        assert (s.support and s.support.chunk) == (r.support and r.support.chunk)
        if s.score is not None:
            assert s.score == pytest.approx(r.score, abs=tol)
        for name, value in s.features.items():
            assert np.isclose(value, r.features[name], atol=tol, equal_nan=True), name
        assert np.allclose(s.drops, r.drops, atol=tol, equal_nan=True)
        assert np.allclose(s.jsds, r.jsds, atol=tol, equal_nan=True)
    assert result.answer.flagged == reference.answer.flagged
    assert result.truncated.to_dict() == reference.truncated.to_dict()
