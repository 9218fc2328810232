"""F's answer aggregations (groundsense_eval.reports.aggregation): the sentence score ranked
against training references, each aggregation's definition, and the choice by the lowest AUC."""

import numpy as np
import pandas as pd
import pytest

from groundsense_eval.reports.aggregation import (
    AGGREGATIONS,
    SIGNALS,
    aggregated,
    chosen,
    signal_values,
    training_fusion,
)

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def test_f_is_the_mean_rank_share_and_missing_where_a_signal_is():
    fusion = training_fusion(pd.DataFrame({name: [0.0, 1.0, 2.0, 3.0] for name in SIGNALS}))
    rows = pd.DataFrame({name: [1.0, 10.0, -1.0] for name in SIGNALS}).assign(stem_novel=[1.0, 10.0, np.nan])
    score = fusion.score(signal_values(rows))
    # 1.0: one value below and one tie (counted half) of four; 10.0: all four below
    assert score[:2].tolist() == [1.5 / 4, 1.0] and np.isnan(score[2])


def test_the_length_aware_noisy_or_is_the_noisy_or_over_the_root_of_the_sentence_count():
    rows = pd.DataFrame({"case_id": ["one", "many", "many", "many", "many"], "label": [0, 0, 1, 0, 0]})
    score = np.array([0.9, 0.2, 0.8, 0.5, 0.1])
    probability = np.array([0.5, 0.1, 0.4, 0.2, 0.1])
    answers = aggregated(rows, score, probability)
    assert answers.index.tolist() == ["one", "many"] and answers["label"].tolist() == [0, 1]
    assert answers["the maximum"].tolist() == [0.9, 0.8]
    assert answers["the mean of the top two"].tolist() == pytest.approx([0.9, 0.65])
    noisy_or = [-np.log(0.5), -np.log(0.9 * 0.6 * 0.8 * 0.9)]
    assert answers["the noisy-OR"].tolist() == pytest.approx(noisy_or)
    assert answers["the length-aware noisy-OR"].tolist() == pytest.approx([noisy_or[0], noisy_or[1] / 2])


def test_the_choice_is_the_highest_lowest_and_the_first_on_ties():
    table = pd.DataFrame({"a": [0.8, 0.7, 0.75, 0.7], "b": [0.5, 0.6, 0.55, 0.6]}, index=list(AGGREGATIONS))
    table = table.assign(lowest=table.min(axis=1))
    assert chosen(table) == "the mean of the top two"  # 0.6, tied with the length-aware noisy-OR, which comes later
