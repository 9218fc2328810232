"""Answer-level aggregations on the committed feature caches and the reference features."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from groundsense.errors import InputError
from groundsense_eval.caches.extract import load_cache
from groundsense_eval.data.locations import reference_dir
from groundsense_eval.reports.answers import (
    answer_table,
    partition_answers,
    reference_answers,
    token_aggregations,
    truncated_answers,
)

ROOT = Path(__file__).parents[3]
TOKENS = ROOT / "results" / "tokens"


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


def test_reference_answers_reproduce_the_published_response_features():
    try:
        reference = reference_dir()
    except InputError as exc:
        pytest.skip(f"the reference features are absent: {exc}")
    answers = reference_answers(reference)
    assert len(answers) == 400 and answers["label"].mean() == 0.5
    # the response CSV's own mean gap and JSD, oriented as suspicion
    assert roc_auc_score(answers["label"], answers["mean gap"]) == pytest.approx(0.7394, abs=1e-4)
    assert roc_auc_score(answers["label"], answers["mean jsd_noctx"]) == pytest.approx(0.7680, abs=1e-4)


@pytest.fixture(scope="module")
def tofueval_tokens():
    return next(s for s in load_cache(TOKENS, "smollm2-135m-instruct") if s.benchmark == "tofueval" and s.full_exact)


def test_token_aggregations_pool_each_answer_s_dependent_tokens(tofueval_tokens):
    dev, _ = partition_answers(tofueval_tokens, thresholds=(2.0, 3.0))
    sentences = tofueval_tokens.table
    case = dev.index[0]
    mine = sentences[sentences["case_id"] == case]
    full = np.concatenate(mine["tok_logp_full"].map(np.asarray).tolist())
    noctx = np.concatenate(mine["tok_logp_noctx"].map(np.asarray).tolist())
    dependent = -noctx > 2.0
    assert dependent.any()
    row = dev.loc[case]
    assert row["dependent-token gap (pooled)"] == pytest.approx(-(full - noctx)[dependent].mean(), abs=1e-6)
    assert row["unresolved share (pooled)"] == pytest.approx((-full[dependent] > 3.0).mean(), abs=1e-6)
    per_sentence = [-(np.asarray(f) - np.asarray(n))[-np.asarray(n) > 2.0].mean()
                    for f, n in zip(mine["tok_logp_full"], mine["tok_logp_noctx"]) if (-np.asarray(n) > 2.0).any()]
    assert row["lowest dependent-token gap"] == pytest.approx(max(per_sentence), abs=1e-6)
    assert "lowest dependent-token gap" not in partition_answers(tofueval_tokens)[0].columns  # no thresholds, none


def test_pooled_aggregations_weigh_dependent_tokens_and_fall_back_without_them():
    sentences = pd.DataFrame({"case_id": ["a", "a", "b", "b"], "n_tokens": [2.0, 4.0, 5.0, 10.0],
                              "gap": [1.0, 2.0, 0.5, 0.1], "dep_share": [0.0, 0.0, 0.4, 0.2],
                              "gap_dep": [1.0, 2.0, 3.0, 6.0], "unresolved_share": [0.0, 0.0, 0.5, 1.0]})
    out = token_aggregations(sentences)
    # b: 2 and 2 dependent tokens; a: none, so its token-weighted mean gap and no unresolved token
    assert out.loc["b", "dependent-token gap (pooled)"] == pytest.approx(-(3.0 * 2 + 6.0 * 2) / 4)
    assert out.loc["b", "unresolved share (pooled)"] == pytest.approx(0.75)
    assert out.loc["a", "dependent-token gap (pooled)"] == pytest.approx(-(1.0 * 2 + 2.0 * 4) / 6)
    assert out.loc["a", "unresolved share (pooled)"] == 0.0
    assert out.loc["b", "lowest dependent-token gap"] == -3.0 and out.loc["b", "highest unresolved share"] == 1.0


@pytest.mark.slow  # re-runs the report's threshold sweep on a benchmark's dev partition
def test_the_answer_report_tunes_token_thresholds_once_per_benchmark_and_serves_each_answer_set_once(tmp_path):
    from click.testing import CliRunner

    from groundsense.cli import cli

    for cache in ("tokens", "features"):
        (tmp_path / cache).mkdir()
        (tmp_path / cache / "tofueval").symlink_to(ROOT / "results" / cache / "tofueval")
    out = tmp_path / "answers.md"
    result = CliRunner().invoke(cli, ["eval", "answers", "--cache", str(tmp_path / "tokens"), "--cache",
                                       str(tmp_path / "features"), "--resamples", "100", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "tofueval (smollm2-135m-instruct, tokens) dev" in text and "(smollm2-135m-instruct, features)" not in text
    assert "over the dev partitions of tofueval (smollm2-135m-instruct, tokens) (" in text
    header, _, dev_row = text.split("## By benchmark and partition")[1].strip().splitlines()[:3]
    cell = header.split(" | ").index("lowest dependent-token gap")
    assert dev_row.split(" | ")[cell][0] == "0"  # an AUC, not "—"
