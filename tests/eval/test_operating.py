import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import precision_recall_fscore_support

from groundsense.eval.operating import answer_outcomes, flag_intervals


def test_flag_intervals_point_values_are_sklearns_and_inside_their_interval():
    rng = np.random.default_rng(3)
    y = rng.random(400) < 0.2
    flagged = np.where(y, rng.random(400) < 0.6, rng.random(400) < 0.25)
    groups = rng.integers(0, 60, 400)
    cells = flag_intervals(y, flagged, groups, n_resamples=500)
    precision, recall, f1, _ = precision_recall_fscore_support(y, flagged, average="binary")
    for name, expected in (("precision", precision), ("recall", recall), ("f1", f1), ("flag rate", flagged.mean())):
        value, lo, hi = cells[name]
        assert value == pytest.approx(expected)
        assert lo < value < hi


def test_one_source_drawn_every_time_gives_a_zero_width_interval():
    cells = flag_intervals(np.array([1, 0, 1, 0]), np.array([1, 1, 0, 0]), np.zeros(4), n_resamples=50)
    assert cells["precision"] == (0.5, 0.5, 0.5)


def test_an_answer_with_an_unscored_sentence_is_blocked():
    sentences = pd.DataFrame({"case_id": ["a", "a", "b", "b", "c"], "source_id": ["s", "s", "s", "s", "t"],
                              "label": [0, 0, 0, 1, 0]})
    scores = np.array([0.1, np.nan, 0.2, 0.3, 0.9])
    answers = answer_outcomes(sentences, scores, threshold=0.5)
    assert answers["flagged"].tolist() == [True, False, True]  # a: unscored; b: below; c: above
    assert answers["label"].tolist() == [0, 1, 0]
