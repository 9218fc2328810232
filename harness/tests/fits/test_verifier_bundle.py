"""The verifier bundle (fits/verifier_bundle.py): ids stored and read back, the rows a hold-out
trains on drawn as from the data itself, the reports' partitions, and training and scoring from a
bundle alone (the tiny model)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from groundsense.cli import cli
from groundsense_eval.caches.extract import load_cache
from groundsense_eval.data.training_set import HOLD_OUTS
from groundsense_eval.fits.verifier_bundle import (
    FORMAT,
    MANIFEST,
    TRAINING,
    WIDEST,
    evaluation_file,
    evaluation_rows,
    read_ids,
    training_inputs,
    write_ids,
)
from groundsense_eval.fits.verifier_training import ARTEFACT, training_rows
from groundsense_eval.reports.selection import with_overlap
from groundsense_eval.statistics.benchmark_result import partitioned

ROOT = Path(__file__).resolve().parents[3]


def toy_ids(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 49152, rng.integers(5, 40)).tolist() for _ in range(n)]


def test_the_widest_hold_out_holds_every_other_ones_rows():
    assert all(set(trained) <= set(HOLD_OUTS[WIDEST]) for trained in HOLD_OUTS.values())


def test_ids_read_back_as_written_with_the_rows_index(tmp_path):
    frame = pd.DataFrame({"benchmark": ["ragtruth", "ragbench", "ragtruth"], "label": [0, 1, 1]}, index=[4, 9, 17])
    ids = [[0, 49151, 7], [], [65535, 1]]
    write_ids(tmp_path / "t.parquet", frame, ids)
    rows, read = read_ids(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(rows, frame)
    assert [r.tolist() for r in read] == ids and all(r.dtype == np.int64 for r in read)


def test_a_hold_outs_rows_and_ids_are_the_datas_draw(tmp_path):
    """Drawn from the bundle, the rows (and a seeded draw of them) are those drawn from the data."""
    data = pd.DataFrame({"benchmark": ["ragtruth", "ragbench"] * 20, "label": [0, 1, 1, 0] * 10})
    ids = toy_ids(len(data))
    write_ids(tmp_path / TRAINING, data, ids)
    for hold_out in HOLD_OUTS:
        for limit in (None, 7):
            rows, got = training_inputs(tmp_path, hold_out, limit)
            expected = training_rows(data, hold_out, limit)
            pd.testing.assert_frame_equal(rows, expected)
            assert [g.tolist() for g in got] == [ids[i] for i in expected.index]


def test_the_partitions_are_the_reports():
    """TofuEval's evaluation rows carry the partition that the selection report draws over its table."""
    (features,) = [s for s in load_cache(ROOT / "results" / "features", "smollm2-135m-instruct")
                   if s.benchmark == "tofueval" and s.full_exact]
    rows = evaluation_rows(features)
    dev, test = partitioned(with_overlap(features))
    reports = pd.concat([dev, test])[["case_id", "sentence_index", "partition"]]
    joined = rows.merge(reports, on=["case_id", "sentence_index"], how="outer", suffixes=("", "_report"),
                        validate="one_to_one")
    assert len(joined) == len(rows) == len(features.table)
    assert (joined["partition"] == joined["partition_report"]).all()
    assert set(rows["partition"]) == {"dev", "test"}
    first = evaluation_rows(features, answers=3)
    assert first["case_id"].nunique() == 3
    pd.testing.assert_frame_equal(first, rows[rows["case_id"].isin(set(first["case_id"]))])


@pytest.fixture
def tiny_bundle(tiny_scorer, tmp_path):
    """A bundle of 32 training rows and 12 evaluation sentences of toy ids, over the tiny model
    saved as a local base (a local base's name is its path)."""
    tiny_scorer.model.save_pretrained(tmp_path / "base")
    tiny_scorer.tokenizer.save_pretrained(tmp_path / "base")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    training = pd.DataFrame({"benchmark": ["ragtruth", "ragbench"] * 16, "task": "QA", "label": [0, 1] * 16},
                            index=range(100, 132))
    write_ids(bundle / TRAINING, training, toy_ids(32))
    evaluation = pd.DataFrame({"benchmark": "ragtruth", "task": "QA", "case_id": [f"c{i // 3}" for i in range(12)],
                               "source_id": "s", "sentence_index": [i % 3 for i in range(12)],
                               "label": [0, 1] * 6, "partition": ["dev", "test"] * 6})
    write_ids(bundle / evaluation_file("ragtruth"), evaluation, toy_ids(12, seed=1))
    data = {"data": "td.parquet", "data_sha256": "0", "data_version": "t"}
    (bundle / MANIFEST).write_text(json.dumps({"format": FORMAT, "base": str(tmp_path / "base"), "data": data}))
    return bundle, tmp_path / "base"


def test_a_run_trains_from_a_bundle_and_its_verifier_scores_the_dev_sentences(tiny_bundle, tmp_path):
    bundle, base = tiny_bundle
    command = ["eval", "train-verifier", "-o", str(tmp_path / "run"), "--hold-out", "tofueval", "--lr", "1e-3",
               "--epochs", "1", "--inputs", str(bundle), "--training-data", str(tmp_path / "absent.parquet"),
               "--base", str(base), "--device", "cpu", "--checkpoint-every", "1", "--no-progress"]
    first = CliRunner().invoke(cli, [*command, "--steps", "1"])
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(cli, command)
    assert second.exit_code == 0, second.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["finished"] and len(manifest["losses"]) == 2 and manifest["identity"]["data_version"] == "t"
    assert manifest["row_positions"] == list(range(100, 132))
    scored = CliRunner().invoke(cli, ["eval", "score-bundle", str(bundle), "--verifier",
                                      str(tmp_path / "run" / ARTEFACT), "--benchmark", "ragtruth", "--device", "cpu",
                                      "-o", str(tmp_path / "s.parquet")])
    assert scored.exit_code == 0, scored.output
    scores = pd.read_parquet(tmp_path / "s.parquet")
    assert len(scores) == 6 and (scores["partition"] == "dev").all() and scores["score"].between(0, 1).all()
    assert "ids" not in scores.columns


def test_a_bundle_of_another_base_is_refused(tiny_bundle, tmp_path):
    bundle, base = tiny_bundle
    manifest = json.loads((bundle / MANIFEST).read_text())
    (bundle / MANIFEST).write_text(json.dumps({**manifest, "base": "another"}))
    refused = CliRunner().invoke(cli, ["eval", "train-verifier", "-o", str(tmp_path / "run"), "--hold-out", "ragbench",
                                       "--lr", "1e-3", "--epochs", "1", "--inputs", str(bundle), "--base", str(base),
                                       "--device", "cpu"])
    assert refused.exit_code == 2 and "not" in refused.output
