"""Where a flag threshold goes on labelled scores (groundsense.calibration.thresholds)."""

import numpy as np
import pytest

from groundsense.calibration.thresholds import labelled_threshold, youden_threshold

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def test_youdens_j_picks_the_best_separating_threshold_at_or_below_a_cap():
    scores, labels = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9]), np.array([0, 1, 1, 0, 1, 1])
    assert youden_threshold(scores, labels) == 0.7  # J = 1/2 - 0 (0.2 ties at 1 - 1/2: the higher wins)
    assert youden_threshold(scores, labels, at_most=0.65) == 0.2
    assert youden_threshold(scores, labels, at_most=0.05) == 0.05  # no score below the cap: the cap


def test_a_lower_answer_threshold_is_kept_only_when_it_separates_answers_significantly_better():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], 200)
    separable = np.where(labels == 1, rng.uniform(0.5, 1.0, 400), rng.uniform(0.0, 0.6, 400))
    threshold, rule = labelled_threshold(separable, labels, None, None, at_most=0.95)
    assert 0.5 <= threshold < 0.95 and rule == "Youden's J (below the sentence threshold)"
    unrelated = rng.uniform(0, 1, 400)  # no threshold separates: one bar for both levels
    threshold, rule = labelled_threshold(unrelated, labels, None, None, at_most=0.7)
    assert threshold == 0.7 and rule.startswith("the sentence threshold")


def test_an_answer_target_above_the_sentence_threshold_gives_way_to_it():
    scores, labels = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.9]), np.array([0, 1, 1, 0, 1, 1])
    threshold, rule = labelled_threshold(scores, labels, None, 0.99, at_most=0.65)  # precision 1 needs 0.7
    assert threshold == 0.65 and rule.startswith("the sentence threshold (the answers' precision >= 0.99 threshold")
    assert labelled_threshold(scores, labels, 0.75, None, at_most=0.65) == (0.3, "recall >= 0.75")  # under the cap
