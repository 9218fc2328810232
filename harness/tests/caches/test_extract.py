"""Extraction through the real default scorer on the shortest RAGTruth QA answers (seconds each)."""

import dataclasses
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from groundsense import Detector
from groundsense.cli import cli
from groundsense.config import DetectorConfig
from groundsense.features import FEATURES
from groundsense_eval.caches.extract import ExtractionConfig, extract, load_cache
from groundsense_eval.caches.store import (
    cached_case_ids,
    ordered,
    planned_case_ids,
    read_parts,
    record_plan,
    write_cases,
)
from groundsense_eval.cli.options import load_sets
from groundsense_eval.data.rows import case_row

pytestmark = pytest.mark.data  # reads the benchmark data


@pytest.fixture(scope="module")
def short_cases():
    """The two shortest QA cases of the RAGTruth test split (answer and passages), shortest first."""
    from groundsense_eval.data.ragtruth import load_ragtruth

    ids = ["ragtruth:16508", "ragtruth:16465"]
    found = {c.id: c for c in load_ragtruth(ids=ids)[0]}
    return [found[i] for i in ids]


@pytest.fixture(scope="module")
def broken_case(short_cases):
    """A real case whose evidence is blank: the detector rejects it."""
    return dataclasses.replace(short_cases[0], id="ragtruth:blank", source_id="ragtruth:blank", passages=["  "])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, scorer, short_cases, broken_case):
    """Extract one real case and the broken one, then a rerun with the second case added."""
    cache = tmp_path_factory.mktemp("features")
    detector = Detector(scorer, k=5, calibration=False)
    first = extract(detector, [short_cases[0], broken_case], cache, progress=False)
    parts_after_first = read_parts(first.folder)
    second = extract(detector, [broken_case, *short_cases], cache, progress=False)
    return cache, detector, first, parts_after_first, second


def test_rows_align_with_labelled_sentences(first_run, short_cases):
    cache, detector, first, rows, _ = first_run
    case = short_cases[0]
    scored = rows[rows["case_id"] == case.id]
    assert [(r.start, r.end) for r in scored.itertuples()] == [(s.start, s.end) for s in case.sentences]
    assert scored["label"].tolist() == [int(s.unsupported) for s in case.sentences]
    assert scored["sentence"].tolist() == [case.sentence_text(s) for s in case.sentences]
    assert scored[list(FEATURES)].notna().all().all()
    assert (scored["drops"].map(len) == scored["n_chunks"]).all()  # one drop per chunk
    # tokens_processed counts what the model ran after evidence-cache hits: an earlier test on the
    # same scorer may have cached this evidence, so it is not compared with the prompt's length
    assert (scored["seconds"] > 0).all() and (scored[["tokens_processed", "prompt_tokens"]] > 0).all().all()
    config = json.loads((first.folder / "config.json").read_text())
    assert config == {**ExtractionConfig.of(detector).record(), "n_parameters": detector.scorer.n_parameters}
    assert first.folder.parent.name == "ragtruth" and first.folder.name.startswith("smollm2-135m-instruct__full-k5-")


def test_error_is_recorded_and_run_goes_on(first_run):
    _, _, first, rows, _ = first_run
    assert (first.written, first.errors) == (2, 1)
    error = rows[rows["status"] == "error"]
    assert error["case_id"].tolist() == ["ragtruth:blank"] and "evidence is empty" in error["error"].iloc[0]


def test_rerun_skips_cached_cases_and_compacts(first_run, short_cases):
    cache, _, _, before, second = first_run
    assert (second.skipped, second.written, second.errors) == (2, 1, 0)
    after = read_parts(second.folder)
    assert cached_case_ids(second.folder) == {"ragtruth:blank", *(c.id for c in short_cases)}
    pd.testing.assert_frame_equal(after[after["case_id"].isin(before["case_id"])].reset_index(drop=True), before)
    assert len(list(second.folder.glob("part-*.parquet"))) == 1
    [features] = load_cache(cache)
    assert features.benchmark == "ragtruth" and len(features.errors) == 1
    assert set(features.table["case_id"]) == {c.id for c in short_cases}


def test_a_cache_records_its_plan_and_an_unfinished_one_is_left_out(first_run, short_cases, broken_case, tmp_path,
                                                                    capsys):
    cache, _, _, _, second = first_run
    asked = {broken_case.id, *(c.id for c in short_cases)}
    assert planned_case_ids(second.folder) == asked  # the union of both runs' asks
    [features] = load_cache(cache)
    assert (features.planned, features.missing, features.incomplete) == (asked, 0, False)
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    folder = copy / "ragtruth" / second.folder.name
    record_plan(folder, ["ragtruth:a", "ragtruth:b"])  # another ask into the same folder, not scored yet
    record_plan(folder, [broken_case.id])  # a later --limit trial hides nothing
    assert load_sets(copy) == []  # left out by default, and said so
    assert f"ragtruth/{second.folder.name} lacks 2 of the 5 answers" in capsys.readouterr().err
    [partial] = load_sets(copy, partial=True)
    assert (partial.missing, partial.incomplete) == (2, True) and "read anyway" in capsys.readouterr().err
    load_sets(cache)
    assert "warning" not in capsys.readouterr().err
    result = CliRunner().invoke(cli, ["eval", "calibrate", "--cache", str(copy), "-o", str(tmp_path / "c.json")])
    assert result.exit_code != 0 and "pass --partial to read it" in result.output


def test_an_interrupted_run_keeps_its_finished_cases(first_run, tmp_path):
    _, _, _, rows, _ = first_run
    finished = rows[rows["status"] != "error"]

    def cases_then_interrupt():
        yield finished.to_dict("records")
        raise KeyboardInterrupt  # Ctrl-C, or SIGTERM through the CLI's handler

    with pytest.raises(KeyboardInterrupt):
        write_cases(tmp_path, cases_then_interrupt())
    pd.testing.assert_frame_equal(read_parts(tmp_path), finished.reset_index(drop=True), check_dtype=False)


def test_case_row_is_detect_input_and_order_groups_sources(short_cases):
    row = case_row(short_cases[0])
    assert set(row) == {"id", "question", "passages", "answer", "sentences"}
    assert row["sentences"] == [[s.start, s.end] for s in short_cases[0].sentences]
    shuffled = [short_cases[1], short_cases[0], short_cases[1]]
    assert [c.source_id for c in ordered(shuffled)] == sorted(c.source_id for c in shuffled)


def test_case_command_prints_detect_input(short_cases):
    from click.testing import CliRunner

    from groundsense.cli import cli

    result = CliRunner().invoke(cli, ["eval", "case", short_cases[0].id])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == case_row(short_cases[0])
    assert CliRunner().invoke(cli, ["eval", "case", "ragtruth:no-such-id"]).exit_code == 2


@pytest.fixture(scope="module")
def token_run(tmp_path_factory, scorer, short_cases):
    """One real case extracted with token rows."""
    detector = Detector(scorer, k=5, calibration=False)
    summary = extract(detector, short_cases[:1], tmp_path_factory.mktemp("tokens"), progress=False, token_rows=True)
    return summary, read_parts(summary.folder)


def test_token_rows_reproduce_the_sentence_means(token_run, short_cases):
    from helpers.cached_tokens import token_rows

    from groundsense.features import sentence_features

    summary, rows = token_run
    assert summary.folder.name.startswith("smollm2-135m-instruct__full-k5-tokens-")
    case = short_cases[0]
    for row in rows.itertuples():
        n = len(row.tok_logp_full)
        assert n == row.n_tokens and len(row.tok_logp_loo) == len(row.tok_jsd_loo) == n * row.n_chunks
        logp, jsd = token_rows(row)
        means = sentence_features(logp, jsd, np.zeros(n, dtype=int), 1)
        for name in ("gap", "jsd_noctx", "drop_max", "jsd_loo_mean", "surprisal"):  # float32 storage
            assert means.values[name][0] == pytest.approx(getattr(row, name), abs=1e-4)
        # each token's span lies in its sentence
        assert (row.tok_start >= row.start - 1).all() and (row.tok_end <= row.end + 1).all()
    assert set(rows["case_id"]) == {case.id}


def test_token_rows_change_the_key_only_when_kept():
    plain = ExtractionConfig(DetectorConfig(scorer="smollm2-135m-instruct", precision="fp32"))
    assert plain.key == "smollm2-135m-instruct__full-k5-cd42f428"  # the committed caches' key
    tokens = dataclasses.replace(plain, token_rows=True)
    assert tokens.key.startswith("smollm2-135m-instruct__full-k5-tokens-") and tokens.key != plain.key
