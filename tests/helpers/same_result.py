"""Whether two detection results agree: a streamed one and ``detect``'s on the same spans."""

import math

import numpy as np
import pytest

from groundsense.calibration.fusion import REFERENCE_SIZE

# A fused score is the mean of its signals' ranks among reference values (the shipped fusions keep
# REFERENCE_SIZE each). A signal within ``tol`` of the reference result's may lie on the other side
# of one of those values; its rank, and the fused score, then differ by up to one step more.
RANK_STEP = 1 / REFERENCE_SIZE


def score_tolerance(score_rule: str, tol: float) -> float:
    """How far apart two sentences' scores, and ranks, may lie when their features lie ``tol`` apart."""
    return tol + (RANK_STEP if score_rule == "fused" else 0.0)


def assert_same(result, reference, tol=1e-4):
    """The same sentences, verdicts, support chunks and truncation, and features, drops and JSDs
    within ``tol``, scores and ranks within :func:`score_tolerance`. Scores that close may round
    to either side of a threshold, and drops within ``tol`` of each other to either chunk: a
    verdict, or a support chunk, is compared wherever the reference keeps its score, or its
    largest drop, clear of that."""
    assert len(result.sentences) == len(reference.sentences)
    scores_tol = score_tolerance(reference.score_rule, tol)
    any_near = False
    for s, r in zip(result.sentences, reference.sentences):
        assert (s.start, s.end, s.text, s.status, s.reason) == (r.start, r.end, r.text, r.status, r.reason)
        near = _within(r.score, reference.threshold, scores_tol)
        any_near |= near
        if not near:
            assert s.flagged == r.flagged
        if not _runner_up_within(r.drops, tol):
            assert (s.support and s.support.chunk) == (r.support and r.support.chunk)
        if s.score is not None:
            assert s.score == pytest.approx(r.score, abs=scores_tol)
        assert (s.ranks is None) == (r.ranks is None) and list(s.ranks or ()) == list(r.ranks or ())
        for name, rank in (r.ranks or {}).items():
            assert np.isclose(s.ranks[name], rank, atol=scores_tol, rtol=0, equal_nan=True), name
        for name, value in s.features.items():
            assert np.isclose(value, r.features[name], atol=tol, equal_nan=True), name
        assert np.allclose(s.drops, r.drops, atol=tol, equal_nan=True)
        assert np.allclose(s.jsds, r.jsds, atol=tol, equal_nan=True)
    if not any_near and not _within(reference.answer.score, reference.answer.threshold, scores_tol):
        assert result.answer.flagged == reference.answer.flagged
    assert result.truncated.to_dict() == reference.truncated.to_dict()


def _within(score, threshold, tol) -> bool:
    return score is not None and threshold is not None and abs(score - threshold) <= tol


def _runner_up_within(drops, tol) -> bool:
    """Whether the two largest finite drops lie within ``tol`` of each other."""
    values = np.asarray(drops, float)
    finite = np.sort(values[np.isfinite(values)])
    return len(finite) >= 2 and finite[-1] - finite[-2] <= tol


def assert_same_record(got: dict, want: dict, tol: float = 1e-4) -> None:
    """Two results' JSON records agree as :func:`assert_same` has it: :func:`assert_records_close`
    within ``tol``, scores and ranks within :func:`score_tolerance`, and what those may tip left out
    where they may tip it: a sentence's flag where its score lies that close to the threshold (and
    then the answer's flag and count), its support chunk where its two largest drops lie within
    ``tol``, its explanation where its ranks differ."""
    assert len(got["sentences"]) == len(want["sentences"])
    scores_tol = score_tolerance(want["score_rule"], tol)
    got, want = _loosened(got, want, scores_tol, tol), _loosened(want, got, scores_tol, tol)
    assert_records_close(got, want, tol, wider={"score": scores_tol, "ranks": scores_tol})


def _loosened(record: dict, other: dict, scores_tol: float, tol: float) -> dict:
    """``record`` without the values that ``other``'s scores, drops or ranks lying within tolerance
    of its own may change (:func:`assert_same_record`); both are dropped the same way."""
    sentences, near_any = [], False
    for mine, theirs in zip(record["sentences"], other["sentences"]):
        near = any(_within(s["score"], r["threshold"], scores_tol) for s, r in ((mine, record), (theirs, other)))
        tie = any(_runner_up_within([math.nan if v is None else v for v in s["drops"]], tol) for s in (mine, theirs))
        reranked = mine["ranks"] != theirs["ranks"]
        drop = {key for key, loose in (("flagged", near), ("support", tie), ("explanation", reranked)) if loose}
        near_any |= near
        sentences.append({k: v for k, v in mine.items() if k not in drop})
    answer = record["answer"]
    if near_any or any(_within(r["answer"]["score"], r["answer"]["threshold"], scores_tol) for r in (record, other)):
        answer = {k: v for k, v in answer.items() if k not in ("flagged", "n_flagged")}
    return {**record, "sentences": sentences, "answer": answer}


def assert_records_close(got, want, tol: float, where: str = "record", wider: dict[str, float] | None = None) -> None:
    """Equal value for value, in the same key order and of the same types, floats within ``tol``
    (NaN equal to NaN), or within ``wider[key]`` under a key it names, at any depth."""
    if isinstance(want, float) and isinstance(got, float):
        assert math.isclose(got, want, rel_tol=0, abs_tol=tol) or (math.isnan(got) and math.isnan(want)), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), where
        for key in want:
            assert_records_close(got[key], want[key], (wider or {}).get(key, tol), f"{where}.{key}", wider)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_records_close(g, w, tol, f"{where}[{i}]", wider)
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r} != {want!r}"
