import numpy as np
import pandas as pd
import pytest
from helpers.synthetic_features import synthetic_table
from sklearn.metrics import roc_auc_score

from groundsense_eval.statistics.methods import add_answer_columns, standardised_sum
from groundsense_eval.statistics.metrics import breakdown_by_type, evaluate, response_table, threshold_report

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def test_answer_columns_are_token_weighted():
    table = pd.DataFrame({"case_id": ["a", "a", "b"], "gap": [1.0, 4.0, 2.0], "n_tokens": [3, 1, 5]})
    out = add_answer_columns(table)
    assert out["answer_gap"].tolist() == [1.75, 1.75, 2.0]
    given = add_answer_columns(table.assign(answer_gap=9.0))
    assert (given["answer_gap"] == 9.0).all()


def test_gap_threshold_maximises_f1():
    gap = np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
    label = np.array([1, 1, 0, 1, 0, 0])
    # flagging gap <= -1 gives P=1, R=2/3 (F1 .8); gap <= 1 gives P=.75, R=1 (F1 .857)
    dev = pd.DataFrame({"gap": gap, "label": label})
    test = pd.DataFrame({"gap": [0.5, 1.5, 0.9], "label": [1, 1, 0]})
    report = threshold_report(dev, test)
    assert report == {"threshold": 1.0, "precision": 0.5, "recall": 0.5, "f1": 0.5}


def test_standardised_sum_is_the_library_score_with_dev_statistics():
    dev = pd.DataFrame({f: [0.0, 2.0] for f in ["gap", "jsd_noctx", "drop_max", "jsd_loo_max"]})  # mean 1, std 1
    test = pd.DataFrame({f: [1.0, 2.5] for f in ["gap", "jsd_noctx", "drop_max", "jsd_loo_max"]})
    np.testing.assert_allclose(standardised_sum(dev, test), [0.0, -6.0])


def test_response_table_and_type_breakdown():
    table = pd.DataFrame({
        "case_id": ["a", "a", "b", "b"], "source_id": ["s", "s", "t", "t"], "task": "QA",
        "label": [0, 1, 0, 0], "type": [None, "conflict", None, None],
        "gap": [1.0, -1.0, 2.0, 0.5], "n_tokens": [1, 3, 1, 1],
    })
    scores = {"sentence gap": -table["gap"].to_numpy(), "answer gap": np.zeros(4)}
    responses, answer_scores = response_table(table, scores)
    assert responses["label"].tolist() == [1, 0]
    assert set(answer_scores) == {"sentence gap, most suspicious sentence", "sentence gap, token-weighted mean"}
    assert answer_scores["sentence gap, most suspicious sentence"].tolist() == [1.0, -0.5]  # the lowest gap
    assert answer_scores["sentence gap, token-weighted mean"].tolist() == [0.5, -1.25]
    by_type = breakdown_by_type(table, {"sentence gap": -table["gap"].to_numpy()})
    assert by_type.loc["conflict", "n"] == 1 and by_type.loc["conflict", "sentence gap"] == 1.0


def test_levels_pair_answer_and_sentence_resamples():
    """With one sentence an answer both levels rank the same items, so a paired difference is exactly 0."""
    table = synthetic_table(n_cases=300).groupby("case_id").head(1)
    levels = evaluate(table, seed=0, n_resamples=200).levels()
    gap = levels.loc["sentence gap"]
    assert (gap["sentence level"] == gap["answer level, most suspicious sentence"]
            == gap["answer level, token-weighted mean"])
    for aggregation in ("most suspicious sentence", "token-weighted mean"):
        diff = levels[[f"Δ {aggregation} − sentence{end}" for end in ("", " lo", " hi")]]
        assert (diff == 0).all().all()
    assert "answer gap" not in levels.index


def test_evaluate_end_to_end_on_synthetic_features():
    table = synthetic_table()
    result = evaluate(table, seed=0, n_resamples=200)
    spans = result.span.intervals()
    assert set(spans.index) == {"perplexity", "length", "answer gap", "sentence gap",
                                "standardised sum", "LightGBM", "LightGBM + baselines"}
    assert spans.loc["sentence gap", "auc"] > 0.65 and spans.loc["LightGBM", "auc"] > 0.65
    assert 0.4 < spans.loc["perplexity", "auc"] < 0.6
    assert result.span.difference("standardised sum", "perplexity")["significant"]
    assert set(result.by_type.index) == {"all unsupported", "baseless", "conflict"}
    assert set(result.by_task.index) == {"QA", "Summary"}
    assert "all six" in result.ablation.point and result.response.point["sentence gap, token-weighted mean"] > 0.5
    assert "Span-level AUC" in result.report()


def test_evaluate_scores_only_test_sources():
    from groundsense_eval.data.split import assign_partition

    table = synthetic_table(seed=3)
    partition = assign_partition(table, seed=0)
    test = table[partition == "test"]
    result = evaluate(table, seed=0, n_resamples=50)
    assert result.span.point["sentence gap"] == pytest.approx(roc_auc_score(test["label"], -test["gap"]))
    assert result.by_task["n"].sum() == len(test)
