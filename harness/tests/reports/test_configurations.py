"""The paired comparison of two cached configurations, on small hand-made feature tables."""

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers.synthetic_features import CONFIG, feature_set

from groundsense.cli import cli
from groundsense_eval.caches.extract import FeatureSet
from groundsense_eval.caches.store import record_plan, write_part
from groundsense_eval.reports.configurations import compare


def variant(base: FeatureSet, key: str, **columns) -> FeatureSet:
    """``base`` under another cache key, with some columns replaced."""
    rows = base.rows.assign(**columns)
    return FeatureSet(base.benchmark, {**base.config, "leave_one_out": "masked"}, key, rows)


@pytest.fixture(scope="module")
def exact():
    fs = feature_set("ragtruth", 0)
    fs.rows["drops"] = [np.array([v, v - 1.0, v - 2.0]) for v in fs.rows["drop_max"]]
    return fs


def test_identical_configurations_agree_and_do_not_differ(exact):
    result = compare(exact, variant(exact, "copy"), n_resamples=200)
    assert result.sentences == len(exact.table) and result.left_out == {"a": 0, "b": 0}
    assert (result.span["auc_a"] == result.span["auc_b"]).all()
    assert (result.span["diff"] == 0).all() and not result.span["significant"].any()
    assert (result.answer["diff"] == 0).all() and list(result.answer.index) == list(result.span.index)
    assert {"sentence gap", "drop_max", "LightGBM + baselines"} <= set(result.span.index)
    assert np.allclose(result.agreement[["pearson", "spearman"]], 1.0)
    assert (result.agreement["max_abs_diff"] == 0).all() and "drops (per chunk)" in result.agreement.index


def test_a_leave_one_out_feature_without_signal_loses_significantly(exact):
    noise = np.random.default_rng(1).normal(size=len(exact.rows))
    degraded = variant(exact, "noise", drop_max=noise, drop_mean=noise, jsd_loo_max=noise, jsd_loo_mean=noise)
    result = compare(exact, degraded, n_resamples=300)
    drop = result.span.loc["drop_max"]
    assert drop["auc_a"] > 0.65 and abs(drop["auc_b"] - 0.5) < 0.1
    assert drop["significant"] and drop["lo"] > 0
    assert result.answer.loc["drop_max", "auc_a"] > result.answer.loc["drop_max", "auc_b"]  # per answer too
    assert result.span.loc["sentence gap", "diff"] == 0  # the no-context view is untouched
    assert abs(result.agreement.loc["drop_max", "pearson"]) < 0.2
    assert result.agreement.loc["gap", "spearman"] == pytest.approx(1.0)


def test_only_sentences_scored_under_both_count(exact):
    other = variant(exact, "fewer")
    other.rows = other.rows[other.rows["case_id"] != "c0"].reset_index(drop=True)
    result = compare(exact, other, n_resamples=200)
    lost = int((exact.table["case_id"] == "c0").sum())
    assert result.left_out == {"a": lost, "b": 0} and result.sentences == len(exact.table) - lost


def test_with_a_two_pass_side_only_what_two_passes_give_is_compared(exact):
    """A two-pass extraction has no leave-one-out columns: the comparison keeps the two-pass
    methods and the no-context features (the 1.5B scorer's row of the scorer table)."""
    no_loo = exact.rows.drop(columns=["drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean", "drops"])
    two_pass = FeatureSet("ragtruth", {**exact.config, "mode": "two_pass"}, "tp", no_loo)
    for a, b in ((exact, two_pass), (two_pass, exact)):
        result = compare(a, b, n_resamples=200)
        assert list(result.span.index) == ["perplexity", "length", "answer gap", "sentence gap"]
        assert (result.span["diff"] == 0).all() and result.sentences == len(exact.table)
        assert list(result.agreement.index) == ["gap", "jsd_noctx", "surprisal"]
        assert "Feature agreement over all shared sentences:" in result.report()


def test_mismatched_sets_are_refused(exact):
    with pytest.raises(ValueError, match="one benchmark"):
        compare(exact, FeatureSet("tofueval", exact.config, "other", exact.rows))
    disjoint = exact.rows.assign(case_id="z" + exact.rows["case_id"])
    with pytest.raises(ValueError, match="share no scored sentence"):
        compare(exact, FeatureSet("ragtruth", exact.config, "z", disjoint))


def test_cli_compares_two_cached_keys(tmp_path, exact):
    for key, rows in (("exact-key", exact.rows),
                      ("masked-key", exact.rows.assign(drop_max=exact.rows["drop_max"] * 0.5))):
        folder = tmp_path / "ragtruth" / key
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps(CONFIG))
        write_part(folder, rows)
    out = tmp_path / "compare.json"
    result = CliRunner().invoke(cli, ["eval", "compare", "--cache", str(tmp_path), "--resamples", "200",
                                      "-o", str(out), "exact-key", "masked-key"])
    assert result.exit_code == 0, result.output
    assert "A = exact-key" in result.output and "drop_max" in result.output
    numbers = json.loads(out.read_text())
    assert numbers["span"]["drop_max"]["diff"] == 0  # halving keeps the ranking
    assert numbers["agreement"]["drop_max"]["spearman"] == pytest.approx(1.0)
    missing = CliRunner().invoke(cli, ["eval", "compare", "--cache", str(tmp_path), "exact-key", "nope"])
    assert missing.exit_code == 2 and "nope is not under" in missing.output
    record_plan(tmp_path / "ragtruth" / "masked-key", [*exact.rows["case_id"], "ragtruth:not-scored-yet"])
    unfinished = CliRunner().invoke(cli, ["eval", "compare", "--cache", str(tmp_path), "exact-key", "masked-key"])
    assert unfinished.exit_code == 2
    assert (f"masked-key has not finished scoring under {tmp_path} (the warning above): pass --partial to compare "
            "it") in " ".join(unfinished.output.split())
    assert CliRunner().invoke(cli, ["eval", "compare", "--cache", str(tmp_path), "--resamples", "200", "--partial",
                                    "exact-key", "masked-key"]).exit_code == 0
    other = CliRunner().invoke(cli, ["eval", "compare", "--cache", str(tmp_path), "--benchmark", "tofueval",
                                     "exact-key", "masked-key"])
    assert other.exit_code == 2 and f"exact-key is not cached for tofueval under {tmp_path}, only for ragtruth" in \
        " ".join(other.output.split())
    nowhere = CliRunner().invoke(cli, ["eval", "compare", "--cache", str(tmp_path), "--resamples", "200",
                                       "-o", str(tmp_path / "nodir" / "compare.json"), "exact-key", "masked-key"])
    assert nowhere.exit_code == 2 and f"no folder {tmp_path / 'nodir'}: create it" in nowhere.output
    assert "A = exact-key" not in nowhere.output  # refused before comparing


@pytest.mark.slow
def test_the_documented_example_compares_the_committed_caches(tmp_path, monkeypatch):
    """docs/evaluation.md's `eval compare` example, the one its --help gives, runs as written (fewer resamples)."""
    root = Path(__file__).resolve().parents[3]
    example = re.search(r"groundsense eval compare .*\\\n.*", (root / "docs" / "evaluation.md").read_text())
    assert example, "docs/evaluation.md should show an `eval compare` example"
    command = shlex.split(example.group().replace("\\\n", ""))
    helped = " ".join(CliRunner().invoke(cli, ["eval", "compare", "--help"]).output.replace("\\\n", "").split())
    assert shlex.join(command[:command.index("-o")]) in helped
    monkeypatch.chdir(root)  # the example's paths are relative to the repository root
    command[command.index("-o") + 1] = str(tmp_path / "compare.json")
    result = CliRunner().invoke(cli, [*command[1:], "--resamples", "100"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "compare.json").exists()
