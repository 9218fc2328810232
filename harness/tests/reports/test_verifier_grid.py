"""`eval verifier-grid` (reports/verifier_grid.py): the protocol's rule and its ties, the dev AUCs
against sklearn's on synthetic runs, missing runs listed with their commands, runs of another
hold-out, setting or partition refused, and no file read but the runs' dev scores."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.metrics import roc_auc_score

from groundsense.cli import cli
from groundsense_eval.caches.grid_runs import DEV_SCORES, SETTINGS, Setting, load_grid_run
from groundsense_eval.caches.trained_scores import MANIFEST, SENTENCES
from groundsense_eval.data.training_set import HOLD_OUTS
from groundsense_eval.reports.verifier_grid import chosen

pytestmark = pytest.mark.numeric

BEST = {"tofueval": Setting("3e-4", 1), "ragbench": Setting("1e-4", 2)}  # the synthetic runs' best setting


def write_run(root: Path, hold_out: str, setting: Setting, partition: str = "dev", benchmarks=None,
              manifest_hold_out: str | None = None, finished: bool = True) -> Path:
    """A run's folder with its manifest and dev scores: 80 sentences of 16 sources per benchmark, the
    same for every setting; the best setting's scores follow the labels most closely."""
    folder = root / setting.run(hold_out)
    folder.mkdir(parents=True)
    identity = {"hold_out": manifest_hold_out or hold_out, "limit": None,
                "hyperparameters": {"learning_rate": float(setting.learning_rate), "epochs": setting.epochs}}
    (folder / MANIFEST).write_text(json.dumps({"identity": identity, "finished": finished}))
    frames = []
    for benchmark in benchmarks or HOLD_OUTS[hold_out]:
        seed = sum(map(ord, benchmark))
        labels = np.random.default_rng(seed).integers(0, 2, 80)
        noise = np.random.default_rng([seed, SETTINGS.index(setting)]).normal(size=80)
        signal = 1.5 if setting == BEST[hold_out] else 0.5
        frames.append(pd.DataFrame({
            "benchmark": benchmark, "task": "QA", "case_id": [f"{benchmark}-{i // 4}" for i in range(80)],
            "source_id": [f"s{i // 5}" for i in range(80)], "sentence_index": [i % 4 for i in range(80)],
            "label": labels, "partition": partition, "score": 1 / (1 + np.exp(-(signal * labels + noise)))}))
    pd.concat(frames, ignore_index=True).to_parquet(folder / DEV_SCORES, index=False)
    return folder


def render(root: Path, tmp_path: Path) -> str:
    result = CliRunner().invoke(cli, ["eval", "verifier-grid", "--runs", str(root), "--resamples", "100",
                                      "-o", str(tmp_path / "grid.md")])
    assert result.exit_code == 0, result.output
    return (tmp_path / "grid.md").read_text()


def refusal(root: Path) -> str:
    result = CliRunner().invoke(cli, ["eval", "verifier-grid", "--runs", str(root)])
    assert result.exit_code != 0
    return result.output


def test_the_rule_takes_the_best_mean_and_breaks_ties_by_the_smaller_lr_then_fewer_epochs():
    small, small_long, large, large_long = SETTINGS
    assert (small, small_long, large, large_long) == (Setting("1e-4", 1), Setting("1e-4", 2), Setting("3e-4", 1),
                                                      Setting("3e-4", 2))
    assert chosen({small: 0.70, small_long: 0.71, large: 0.72, large_long: 0.69}) == large
    # equal to three decimals: a tie, whatever the fourth
    assert chosen({small: 0.7121, small_long: 0.7, large: 0.7124, large_long: 0.7}) == small
    assert chosen({small: 0.60, small_long: 0.7124, large: 0.7, large_long: 0.7121}) == small_long
    assert chosen({small: 0.60, small_long: 0.70, large: 0.7124, large_long: 0.7121}) == large
    # one thousandth apart: no tie
    assert chosen({small: 0.712, small_long: 0.70, large: 0.713, large_long: 0.70}) == large


def test_the_page_lists_each_missing_run_with_the_commands_that_make_it(tmp_path):
    root = tmp_path / "grid"
    for setting in SETTINGS[:3]:
        write_run(root, "ragbench", setting)
    write_run(root, "ragbench", SETTINGS[3], finished=False)
    page = render(root, tmp_path)
    absent = [s.run("tofueval") for s in SETTINGS] + [SETTINGS[3].run("ragbench")]
    listed = page.split("## What is missing")[1]
    assert "5 of the 8 runs" in listed and listed.count("\n- ") == 5
    for name in absent:
        assert f"`{root}/{name}/`" in listed
    assert "bash scripts/gpu_verifier.sh score tofueval 3e-4 2`" in listed
    assert ("groundsense eval score-bundle runs/bundle --verifier runs/v135m-tofueval-lr1e-4-e1/verifier.safetensors "
            "--benchmark ragtruth --benchmark ragbench --partition dev") in listed
    assert "a finished training" in listed  # the unfinished run
    assert page.count("Not chosen yet") == 2


def test_the_dev_aucs_and_the_choice_are_those_of_the_runs_scores(tmp_path):
    root = tmp_path / "grid"
    for hold_out in HOLD_OUTS:
        for setting in SETTINGS:
            write_run(root, hold_out, setting)
    page = render(root, tmp_path)
    assert "## What is missing" not in page
    for hold_out, benchmarks in HOLD_OUTS.items():
        section = page.split(f"## {hold_out} held out")[1].split("\n## ")[0]
        for setting in SETTINGS:
            scores = pd.read_parquet(root / setting.run(hold_out) / DEV_SCORES)
            aucs = [roc_auc_score(rows["label"], rows["score"])
                    for rows in (scores[scores["benchmark"] == b] for b in benchmarks)]
            row = next(line for line in section.splitlines() if line.startswith(f"| {setting.label()} |"))
            cells = [cell.strip() for cell in row.split("|")[2:-1]]
            assert [float(cell.split()[0]) for cell in cells[:len(benchmarks)]] == pytest.approx(aucs, abs=5e-4)
            assert cells[len(benchmarks)] == f"{np.mean(aucs):.3f}"
        best = BEST[hold_out]
        assert f"**Chosen: {best.label()}**" in section
        assert f"`bash scripts/gpu_verifier.sh evaluate {hold_out} {best.learning_rate} {best.epochs}`" in section
        assert f"into `results/trained-verifier/{hold_out}/`" in section


@pytest.mark.parametrize(("made", "message"), [
    (dict(manifest_hold_out="ragbench"), "holding out ragbench, not tofueval"),
    (dict(partition="test"), "holds test partition rows"),
    (dict(benchmarks=["ragtruth", "ragbench", "tofueval"]), "holds scores of tofueval"),
])
def test_a_run_of_another_hold_out_or_partition_is_refused(tmp_path, made, message):
    root = tmp_path / "grid"
    write_run(root, "tofueval", SETTINGS[0], **made)
    assert message in refusal(root)


def test_a_run_of_another_setting_is_refused(tmp_path):
    root = tmp_path / "grid"
    write_run(root, "tofueval", SETTINGS[0]).rename(root / SETTINGS[2].run("tofueval"))
    with pytest.raises(ValueError, match="not lr 3e-4, 1 epoch"):
        load_grid_run(root, "tofueval", SETTINGS[2])


def test_no_file_is_read_but_the_runs_dev_scores(tmp_path, monkeypatch):
    """The hold-outs' folders hold test-partition scores beside the grid: the page reads none of them,
    nor any feature cache (it is rendered from another working directory)."""
    root = tmp_path / "trained-verifier" / "grid"
    for setting in SETTINGS:
        write_run(root, "ragbench", setting)
    chosen_run = write_run(tmp_path / "trained-verifier", "ragbench", SETTINGS[0], partition="test")
    (chosen_run / DEV_SCORES).rename(chosen_run / SENTENCES)
    chosen_run.rename(tmp_path / "trained-verifier" / "ragbench")
    read = []
    real = pd.read_parquet
    monkeypatch.setattr(pd, "read_parquet", lambda path, *a, **k: (read.append(Path(path)), real(path, *a, **k))[1])
    monkeypatch.chdir(tmp_path)
    page = render(root, tmp_path)
    assert "**Chosen:" in page.split("## ragbench held out")[1]
    assert sorted(read) == sorted(root / s.run("ragbench") / DEV_SCORES for s in SETTINGS)
