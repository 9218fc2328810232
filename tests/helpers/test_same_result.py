"""The route comparison's record check leaves out only what scores within tolerance may tip."""

import copy

import pytest

from helpers.same_result import RANK_STEP, assert_same_record


def record(score: float, flagged: bool, drops=(0.5, 0.1), ranks=None) -> dict:
    sentence = {"score": score, "flagged": flagged, "drops": list(drops), "support": {"chunk": 0},
                "ranks": ranks, "explanation": None if ranks is None else str(ranks)}
    return {"score_rule": "fused", "threshold": 0.5, "sentences": [sentence],
            "answer": {"score": score, "threshold": None, "flagged": flagged, "n_flagged": int(flagged)}}


def test_a_flag_may_tip_only_where_the_score_lies_within_tolerance_of_the_threshold():
    assert_same_record(record(0.5 + RANK_STEP, True), record(0.5, False))
    with pytest.raises(AssertionError):
        assert_same_record(record(0.9, True), record(0.9, False))


def test_a_support_chunk_may_change_only_where_two_drops_tie():
    want = record(0.9, True, drops=(0.5, 0.5 - 1e-5))
    got = copy.deepcopy(want)
    got["sentences"][0]["support"] = {"chunk": 1}
    assert_same_record(got, want)
    want["sentences"][0]["drops"], got["sentences"][0]["drops"] = [0.5, 0.1], [0.5, 0.1]
    with pytest.raises(AssertionError):
        assert_same_record(got, want)


def test_ranks_one_step_apart_may_change_the_explanation_but_not_more():
    assert_same_record(record(0.9, True, ranks={"gap": 0.30}), record(0.9, True, ranks={"gap": 0.30 + RANK_STEP}))
    with pytest.raises(AssertionError):
        assert_same_record(record(0.9, True, ranks={"gap": 0.30}), record(0.9, True, ranks={"gap": 0.32}))


def test_a_missing_sentence_is_never_left_out():
    want = record(0.9, True)
    want["sentences"].append(dict(want["sentences"][0]))
    with pytest.raises(AssertionError):
        assert_same_record(record(0.9, True), want)
