"""Answer-level aggregations on the committed feature caches and the reference features."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from groundsense.eval.answers import answer_table, partition_answers, reference_answers, truncated_answers
from groundsense.eval.extract import load_cache

ROOT = Path(__file__).parents[2]
REFERENCE = ROOT.parent / "shared" / "reference" / "gasp-v1"


@pytest.fixture(scope="module")
def ragtruth():
    return next(s for s in load_cache(ROOT / "results" / "features", "smollm2-135m-instruct")
                if s.benchmark == "ragtruth" and s.config.get("leave_one_out", "exact") == "exact")


def test_answer_table_aggregates_each_answer_s_sentences(ragtruth):
    sentences = ragtruth.table
    answers = answer_table(sentences, sensitivity=-sentences["gap"].to_numpy())
    case = sentences["case_id"].iloc[0]
    mine = sentences[sentences["case_id"] == case]
    row = answers.loc[case]
    assert row["lowest sentence gap"] == pytest.approx(-mine["gap"].min())
    assert row["mean gap"] == pytest.approx(-np.average(mine["gap"], weights=mine["n_tokens"]))
    assert row["lowest two gaps"] == pytest.approx(-np.sort(mine["gap"])[:2].mean())
    assert row["highest sensitivity"] == pytest.approx(-mine["gap"].min())
    assert row["label"] == mine["label"].max() and len(answers) == sentences["case_id"].nunique()


def test_partitions_cover_the_answers_and_the_shipped_score_is_used(ragtruth):
    dev, test = partition_answers(ragtruth)
    assert not set(dev["source_id"]) & set(test["source_id"])
    assert len(dev) + len(test) == ragtruth.table["case_id"].nunique()
    assert dev["highest sensitivity"].notna().all()  # the shipped calibration covers this scorer at K=5
    assert truncated_answers(ragtruth) and truncated_answers(ragtruth) <= set(ragtruth.sentences["case_id"])


@pytest.mark.skipif(not REFERENCE.exists(), reason="the reference features (../shared/reference) are absent")
def test_reference_answers_reproduce_the_published_response_features():
    answers = reference_answers(REFERENCE)
    assert len(answers) == 400 and answers["label"].mean() == 0.5
    # the response CSV's own mean gap and JSD, oriented as suspicion
    assert roc_auc_score(answers["label"], answers["mean gap"]) == pytest.approx(0.7394, abs=1e-4)
    assert roc_auc_score(answers["label"], answers["mean jsd_noctx"]) == pytest.approx(0.7680, abs=1e-4)
