import numpy as np
import pandas as pd
import pytest
from helpers.synthetic_features import feature_set

from groundsense_eval.caches.extract import FeatureSet
from groundsense_eval.fits.calibration import fit_from_features
from groundsense_eval.reports.operating import (
    POINTS,
    OperatingPoint,
    answer_outcomes,
    flag_table,
    judged,
    operating_report,
)


def _fitted(seed=0):
    features = feature_set("ragtruth", seed)
    return features, fit_from_features(features)


def test_a_calibration_fitted_on_a_cache_records_what_it_was_fitted_on(tmp_path):
    features, calibration = _fitted()
    made = calibration.made_with
    assert made["answers"] == 150 and made["chunk_counts"] == [3] and made["tasks"] == {"QA": 75, "Summary": 75}
    assert made["n_sentences"] == len(features.table) and set(made["on_calibration_set"]) == {"sentence", "answer"}
    assert set(calibration.curves) == set(calibration.answer_thresholds) == {"sensitivity", "gap"}
    with pytest.raises(ValueError, match="full-mode, exact"):
        fit_from_features(FeatureSet("ragtruth", {**features.config, "mode": "two_pass"}, "k", features.rows))


def test_answers_in_chunk_counts_the_calibration_was_not_fitted_on_are_judged_by_the_gap():
    features, calibration = _fitted()
    sentences = features.sentences.assign(n_chunks=np.where(features.sentences["case_id"] == "c0", 4, 3))
    frame = judged(calibration, sentences, OperatingPoint())
    gap = frame["case_id"] == "c0"
    assert np.allclose(frame.loc[gap, "score"], -frame.loc[gap, "gap"])
    assert (frame.loc[gap, "threshold"] == calibration.thresholds["gap"]).all()
    assert (frame.loc[~gap, "answer_threshold"] == calibration.answer_thresholds["sensitivity"]).all()
    strict = judged(calibration, sentences, OperatingPoint(target_recall=0.3))
    assert (strict["threshold"] > frame["threshold"]).all()


def test_an_answer_is_blocked_at_the_answer_threshold_or_when_a_sentence_is_unscored():
    sentences = pd.DataFrame({"case_id": ["a", "a", "b", "b", "c"], "source_id": ["s", "s", "s", "s", "t"],
                              "label": [0, 0, 0, 1, 0], "score": [0.1, np.nan, 0.2, 0.6, 0.9],
                              "threshold": 0.5, "answer_threshold": 0.7})
    answers = answer_outcomes(sentences)
    assert answers["flagged"].tolist() == [True, False, True]  # a: unscored; b: under 0.7; c: over it
    assert answers["label"].tolist() == [0, 1, 0]
    assert answer_outcomes(sentences, any_sentence=True)["flagged"].tolist() == [True, True, True]  # b: 0.6 >= 0.5


def test_the_report_has_every_reachable_operating_point_for_every_level():
    features, calibration = _fitted()
    held_out = feature_set("ragtruth", 1).sentences
    table = flag_table({"held out": held_out}, calibration, POINTS, n_resamples=100)
    reached = [p for p in POINTS if p.target_precision is None or
               max(q for _, q, _ in calibration.curves["sensitivity"]) >= p.target_precision]
    assert len(table) == 2 * len(reached) + 1  # sentence and answer, and "any sentence" at the fitted point
    fitted = table[table["operating point"] == "fitted (default)"].set_index("level")
    y, flagged = (held_out["label"],
                  held_out.pipe(lambda s: judged(calibration, s, OperatingPoint())).eval("score >= threshold"))
    assert fitted.loc["sentence", "recall"].startswith(f"{flagged[y == 1].mean():.3f}")
    text = operating_report({"held out": held_out}, calibration, "groundsense eval operating --cache x")
    assert text.splitlines()[2] == "`groundsense eval operating --cache x`" and "## held out: 150 answers" in text


def _write_cache(root, benchmark, seed, split=None):
    from helpers.synthetic_features import CONFIG

    from groundsense.config import DetectorConfig
    from groundsense_eval.caches.extract import ExtractionConfig, write_config
    from groundsense_eval.caches.store import write_part

    config = ExtractionConfig(DetectorConfig(**{k: v for k, v in CONFIG.items() if k != "n_parameters"}))
    folder = root / benchmark / config.key
    write_config(folder, config, CONFIG["n_parameters"])
    rows = feature_set(benchmark, seed).rows
    write_part(folder, rows if split is None else rows.assign(split=split))


def test_the_commands_fit_a_calibration_from_a_cache_and_report_its_flags(tmp_path):
    from click.testing import CliRunner

    from groundsense.calibration import Calibration
    from groundsense.cli import cli

    _write_cache(tmp_path / "train", "ragtruth", 0)
    _write_cache(tmp_path / "test", "tofueval", 1)
    runner = CliRunner()
    fitted = runner.invoke(cli, ["eval", "calibrate", "--cache", str(tmp_path / "train"), "--scorer", "tiny",
                                 "-o", str(tmp_path / "c.json")])
    assert fitted.exit_code == 0, fitted.output
    calibration = Calibration.load(tmp_path / "c.json")
    assert calibration.scorer == "tiny" and calibration.made_with["answers"] == 150
    report = runner.invoke(cli, ["eval", "operating", "--score", "sensitivity", "--cache", str(tmp_path / "test"),
                                 "--calibration", str(tmp_path / "c.json"), "--resamples", "100"])
    assert report.exit_code == 0, report.output
    assert "## tofueval (test/" in report.output and "| --target-recall 0.8 | sentence |" in report.output
    wrong = runner.invoke(cli, ["eval", "calibrate", "--cache", str(tmp_path / "test"), "--scorer", "tiny",
                                "-o", str(tmp_path / "d.json")])
    assert wrong.exit_code == 2 and "0 full-mode, exact tiny feature sets of ragtruth" in wrong.output


def test_a_fitted_file_reading_lexical_signals_is_judged_where_they_are_stored_and_refused_where_not(tmp_path):
    """`eval operating` and `eval adaptation` with a `groundsense fit` file that weighs lexical signals."""
    from click.testing import CliRunner

    from groundsense.calibration import fit_detector
    from groundsense.cli import cli
    from groundsense.features import GROUNDING
    from groundsense.lexical import LEXICAL
    from groundsense_eval.caches.lexical import LEXICAL_FILE, write_lexical

    _write_cache(tmp_path / "test", "tofueval", 1)
    rows = feature_set("tofueval", 1).rows
    rng = np.random.default_rng(0)
    lexical = rows[["case_id", "sentence_index"]].assign(
        **{name: rng.random(len(rows)) + 0.5 * rows["label"] for name in LEXICAL}, absent="")
    values = {name: rows[name].to_numpy(float) for name in (*GROUNDING, "surprisal", "n_tokens")}
    values |= {name: lexical[name].to_numpy(float) for name in LEXICAL}
    fit_detector(values, rows["label"].to_numpy(), rows["case_id"].to_numpy(), "tiny", 5,
                 made_with={"chunk_counts": [3]}, names=(*GROUNDING, "surprisal", *LEXICAL)).save(tmp_path / "f.json")
    runner = CliRunner()
    commands = [[*command, "--cache", str(tmp_path / "test"), "--calibration", str(tmp_path / "f.json"),
                 "--resamples", "100"] for command in (["operating", "--score", "sensitivity"], ["adaptation"])]

    refused = runner.invoke(cli, ["eval", *commands[0]])
    assert refused.exit_code == 2, refused.output
    assert "reads overlap_chunk" in refused.output and "groundsense eval lexical" in refused.output
    (folder,) = (tmp_path / "test" / "tofueval").iterdir()
    write_lexical(folder / LEXICAL_FILE, lexical)
    for command in commands:
        report = runner.invoke(cli, ["eval", *command])
        assert report.exit_code == 0, report.output
        assert "## tofueval (test/" in report.output


def test_the_default_fused_report_refuses_what_it_cannot_judge_and_says_what_to_do(tmp_path):
    from groundsense.cli import cli

    runner = _calibrated(tmp_path)
    judged = ["eval", "operating", "--cache", str(tmp_path / "test"), "--resamples", "100"]
    no_fused = runner.invoke(cli, [*judged, "--calibration", str(tmp_path / "c.json")])  # scorer tiny ships none
    assert no_fused.exit_code == 2 and "no lexical fusions ship for scorer tiny" in no_fused.output
    assert "--score sensitivity" in no_fused.output
    both = runner.invoke(cli, [*judged, "--score", "sensitivity", "--fusion", str(tmp_path / "c.json")])
    assert both.exit_code == 2 and "--fusion names the fused score's lexical fusions" in both.output
    bf16 = runner.invoke(cli, [*judged, "--score", "sensitivity", "--precision", "bf16", "--calibration",
                               str(tmp_path / "c.json")])
    assert bf16.exit_code == 2 and "scored in bf16" in bf16.output  # the cache holds fp32 features only
    unfused = runner.invoke(cli, judged)  # the default scorer's fusions, a cache of another scorer
    assert unfused.exit_code == 2 and "no full-mode, exact smollm2-135m-instruct feature set" in unfused.output


def test_an_output_in_a_missing_folder_is_refused_before_the_work(tmp_path):
    """`eval calibrate`, `operating` and `learning-curve` -o in a folder that does not exist: exit 2, nothing done."""
    from groundsense.cli import cli

    runner = _calibrated(tmp_path)
    missing = tmp_path / "nodir"
    for command in (["calibrate", "--cache", str(tmp_path / "train"), "--scorer", "tiny"],
                    ["operating", "--score", "sensitivity", "--cache", str(tmp_path / "test"), "--calibration",
                     str(tmp_path / "c.json"), "--resamples", "100"],
                    ["learning-curve", "--cache", str(tmp_path / "test")]):
        refused = runner.invoke(cli, ["eval", *command, "-o", str(missing / "out")])
        assert refused.exit_code == 2, refused.output
        assert f"no folder {missing}: create it, or write elsewhere" in refused.output
        assert "wrote" not in refused.output and not missing.exists()


def test_a_report_records_non_default_resamples_and_seed_so_its_command_renders_it_again(tmp_path):
    """Line 3 of `eval operating`'s report: rerun as it reads, it gives the same intervals."""
    import shlex

    from groundsense.cli import cli

    runner = _calibrated(tmp_path)
    first = tmp_path / "first.md"
    made = runner.invoke(cli, ["eval", "operating", "--resamples", "100", "--seed", "3", "--score", "sensitivity",
                               "--cache", str(tmp_path / "test"), "--calibration", str(tmp_path / "c.json"),
                               "-o", str(first)])
    assert made.exit_code == 0, made.output
    command = shlex.split(first.read_text().splitlines()[2].strip("`"))
    assert command[-4:] == ["--seed", "3", "-o", str(first)] and command.count("--resamples") == 1
    again = tmp_path / "again.md"
    assert runner.invoke(cli, [*command[1:-1], str(again)]).exit_code == 0
    assert again.read_text().replace(str(again), str(first)) == first.read_text()


def test_a_calibration_records_the_splits_it_was_fitted_on_and_a_test_split_is_fitted_with_a_warning(tmp_path):
    from click.testing import CliRunner

    from groundsense.calibration import Calibration
    from groundsense.cli import cli

    runner = CliRunner()
    for split in ("train", "test"):
        _write_cache(tmp_path / split, "ragtruth", 0, split)
        fitted = runner.invoke(cli, ["eval", "calibrate", "--cache", str(tmp_path / split), "--scorer", "tiny",
                                     "-o", str(tmp_path / f"{split}.json")])
        assert fitted.exit_code == 0, fitted.output
        assert Calibration.load(tmp_path / f"{split}.json").made_with["splits"] == [split]
        warned = "holds ragtruth's test split: never report on the answers a calibration was fitted on"
        assert (warned in " ".join(fitted.stderr.split())) == (split == "test")


def _calibrated(tmp_path):
    """A CLI runner, beside a ragtruth cache in ``train`` calibrated into ``c.json`` (scorer tiny) and
    a tofueval cache in ``test``."""
    from click.testing import CliRunner

    from groundsense.cli import cli

    _write_cache(tmp_path / "train", "ragtruth", 0)
    _write_cache(tmp_path / "test", "tofueval", 1)
    runner = CliRunner()
    assert runner.invoke(cli, ["eval", "calibrate", "--cache", str(tmp_path / "train"), "--scorer", "tiny",
                               "-o", str(tmp_path / "c.json")]).exit_code == 0
    return runner


@pytest.mark.parametrize(("benchmark", "answers", "problem"), [
    ("ragbench", 2, "no adaptation can be fitted (calibration needs at least two scored sentences"),
    ("tofueval", 3, "nothing to measure the adaptations on; its dev and test partitions hold 3 and 0 answers"),
])
def test_adaptation_on_partitions_too_small_says_which_benchmark_and_what_to_do(benchmark, answers, problem, tmp_path):
    """A `--limit` run's few answers: exit 2 naming the benchmark, its partitions and what to do (no traceback)."""
    from pathlib import Path

    from helpers.cli import run
    from helpers.cut_cache import first_answers

    from groundsense_eval.caches.extract import load_cache

    (whole,) = [s for s in load_cache(Path(__file__).parents[3] / "results" / "features", "smollm2-135m-instruct")
                if s.benchmark == benchmark and s.full_exact]
    first_answers(whole, tmp_path, answers)
    refused = run("eval", "adaptation", "--cache", str(tmp_path), "--resamples", "100")
    assert refused.exit_code == 2, refused.output
    said = " ".join(refused.output.split())
    assert f"{benchmark} ({tmp_path.name}/{whole.key}): {problem}" in said and "score more of its answers" in said


@pytest.mark.parametrize("score", ["fused", "sensitivity"])
def test_operating_says_a_benchmark_has_no_test_partition_instead_of_failing(score, tmp_path):
    """One cached answer (its source drawn into dev): the report says there is nothing to measure on."""
    from pathlib import Path

    from helpers.cli import run
    from helpers.cut_cache import first_answers

    from groundsense_eval.caches.extract import load_cache

    (whole,) = [s for s in load_cache(Path(__file__).parents[3] / "results" / "features", "smollm2-135m-instruct")
                if s.benchmark == "tofueval" and s.full_exact]
    first_answers(whole, tmp_path, 1)
    report = run("eval", "operating", "--cache", str(tmp_path), "--score", score, "--resamples", "100")
    assert report.exit_code == 0, report.output
    assert "no test partition\n\nThe cached answers (1) all fall in the dev partition: score more of them." in (
        report.stdout)


def test_calibrate_on_a_cache_of_several_matching_sets_names_them_and_how_to_choose_one(tmp_path):
    """Two full-mode, exact sets of the benchmark: not 'run extract first', but the keys found and what to do."""
    import shutil

    from helpers.cli import run

    _write_cache(tmp_path, "ragtruth", 0)
    (first,) = (tmp_path / "ragtruth").iterdir()
    shutil.copytree(first, tmp_path / "ragtruth" / "another-key")
    refused = run("eval", "calibrate", "--cache", str(tmp_path), "--scorer", "tiny", "-o", str(tmp_path / "c.json"))
    assert refused.exit_code == 2, refused.output
    said = " ".join(refused.output.split())
    assert f"holds 2 full-mode, exact tiny feature sets of ragtruth in fp32 (another-key, {first.name})" in said
    assert f"copy the one to fit on, {tmp_path}/ragtruth/KEY, into a folder of its own, DIR/ragtruth/KEY, and pass " \
           "--cache DIR" in said and "run `groundsense eval extract` first" not in said
