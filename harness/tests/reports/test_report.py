import json
from pathlib import Path

import pytest
from helpers.synthetic_features import CONFIG, feature_set

from groundsense_eval.caches.layout import cache_folder
from groundsense_eval.reports.report import write_report
from groundsense_eval.reports.tables import markdown_table
from groundsense_eval.statistics.benchmark_result import PASSES, cost_table


def test_cost_counts_passes_tokens_and_flops():
    fs = feature_set("a", 0)
    cost = cost_table(fs)
    per_answer_sentences = len(fs.rows) / fs.rows["case_id"].nunique()
    assert cost.loc["perplexity", "tokens"] == pytest.approx(100 / per_answer_sentences)
    assert cost.loc["sentence gap", "tokens"] == pytest.approx(200 / per_answer_sentences)
    assert cost.loc["LightGBM", "tokens"] == pytest.approx(500 / per_answer_sentences)  # K+2 = 5 passes
    assert cost.loc["LightGBM", "gflops"] == pytest.approx(cost.loc["LightGBM", "tokens"] * 2e6 / 1e9)
    # full mode: the K+2 methods are measured, cheaper ones scaled by their share of the work
    assert cost.loc["LightGBM", "seconds"] == pytest.approx(2.0 / per_answer_sentences)
    assert cost.loc["sentence gap", "seconds"] == pytest.approx(2.0 / per_answer_sentences * 2 / 5)
    assert cost.loc["LightGBM", "seconds_measured"] and not cost.loc["perplexity", "seconds_measured"]
    assert set(PASSES) < set(cost.index)


def test_report_writes_tables_json_and_figures(tmp_path):
    sets = [feature_set("a", 0), feature_set("b", 1), feature_set("a", 2, mode="two_pass")]
    b = sets[1].rows
    b.loc[b.index[:8], "label"], b.loc[b.index[:10], "status"] = 1, "unscored"  # 8 of 10 left out are unsupported
    markdown = write_report(sets, tmp_path, n_resamples=200)
    text = markdown.read_text()
    for heading in ("Table 3", "Table 4", "Table 5", "Table 6", "Table 9", "Transfer across benchmarks"):
        assert heading in text
    scored_rate = sets[1].table["label"].mean()
    assert f"(10 unscored and left out: 80.0% of them unsupported, against {scored_rate:.1%} of the scored)" in text
    assert "Gap threshold chosen on dev" in text and "precision" in text
    numbers = json.loads((tmp_path / "report.json").read_text())
    full = numbers["sets"]["a-tiny__full-k5-0000"]
    assert full["span"]["LightGBM"]["auc"] > 0.65
    assert set(full["threshold"]) == {"threshold", "precision", "recall", "f1"}
    assert full["levels"]["sentence gap"]["sentence level"] == full["span"]["sentence gap"]["auc"]
    assert numbers["sets"]["b-tiny__full-k5-0000"]["unsupported_unscored_sentences"] == 8
    assert "span" not in numbers["sets"]["a-tiny__two_pass-k5-0000"]  # cost only
    assert set(numbers["transfer"]["tiny__full-k5-0000"]) == {"a", "b"}
    pngs = {p.name for p in (tmp_path / "figures").glob("*.png")}
    assert {"a-tiny__full-k5-0000-roc.png", "a-tiny__full-k5-0000-features.png",
            "a-tiny__full-k5-0000-drop-max.png", "transfer-tiny__full-k5-0000.png"} <= pngs


def test_caches_sit_beside_the_feature_cache_or_under_runs():
    assert cache_folder("verifiers", "results/features") == Path("results/verifiers")
    assert cache_folder("attribution") == Path("runs/attribution")


def test_markdown_table_rounds_and_marks_missing():
    import pandas as pd

    table = markdown_table(pd.DataFrame({"auc": [0.12345, float("nan")]}, index=["x", "y"]))
    assert table.splitlines() == ["|  | auc |", "|---|---|", "| x | 0.123 |", "| y | — |"]


def test_report_command_reads_the_parquet_cache(tmp_path):
    from click.testing import CliRunner

    from groundsense.cli import cli
    from groundsense.config import DetectorConfig
    from groundsense_eval.caches.extract import ExtractionConfig, write_config
    from groundsense_eval.caches.store import write_part

    fs = feature_set("ragtruth", 0)
    config = ExtractionConfig(DetectorConfig(**{k: v for k, v in CONFIG.items() if k != "n_parameters"}))
    folder = tmp_path / "cache" / "ragtruth" / config.key
    write_config(folder, config, CONFIG["n_parameters"])
    write_part(folder, fs.rows)
    runner = CliRunner()
    result = runner.invoke(cli, ["eval", "report", "--cache", str(tmp_path / "cache"), "-o", str(tmp_path / "out"),
                                 "--resamples", "200"])
    assert result.exit_code == 0, result.output
    numbers = json.loads((tmp_path / "out" / "report.json").read_text())
    assert numbers["sets"][f"ragtruth-{config.key}"]["sentences"] == len(fs.rows)
    empty = runner.invoke(cli, ["eval", "report", "--cache", str(tmp_path / "none"), "-o", str(tmp_path / "out2")])
    assert empty.exit_code == 2 and "no finished feature sets" in empty.output  # bad input, as for every command
    other = runner.invoke(cli, ["eval", "report", "--cache", str(tmp_path / "cache"), "--scorer", "smollm2",
                                "-o", str(tmp_path / "out3")])
    assert other.exit_code == 2
    assert f"no smollm2 feature sets under {tmp_path / 'cache'}: check --scorer (the scorers cached there: " \
           f"{CONFIG['scorer']})" in other.output
