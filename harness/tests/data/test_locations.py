"""Where the evaluation finds the benchmark data and the reference features: ``--data`` or
``$GROUNDSENSE_DATA``, else beside a source checkout; an input error naming both when they are not there."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import run

from groundsense.errors import InputError
from groundsense_eval.data.benchmarks import load_benchmark
from groundsense_eval.data.locations import (
    BENCHMARK_PATHS,
    BENCHMARK_SOURCES,
    benchmark_path,
    checkout_shared,
    data_root,
    reference_dir,
)

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {"groundsense": ROOT / "src" / "groundsense",
            "groundsense_eval": ROOT / "harness" / "src" / "groundsense_eval"}


@pytest.mark.data
def test_the_checkout_default_then_the_variable_then_the_option(monkeypatch, tmp_path):
    monkeypatch.delenv("GROUNDSENSE_DATA", raising=False)
    assert data_root() == checkout_shared() / "data"
    assert all(benchmark_path(benchmark).exists() for benchmark in BENCHMARK_PATHS)
    monkeypatch.setenv("GROUNDSENSE_DATA", str(tmp_path))
    assert data_root() == tmp_path
    assert data_root("/elsewhere") == Path("/elsewhere")


def test_a_benchmark_missing_from_the_named_folder_is_an_input_error_naming_both(monkeypatch, tmp_path):
    (tmp_path / "ragtruth").mkdir()  # a data folder holding part of the benchmarks
    monkeypatch.setenv("GROUNDSENSE_DATA", str(tmp_path))
    with pytest.raises(InputError) as error:
        load_benchmark("tofueval", ("test",))
    assert f"no tofueval data at {tmp_path / 'tofueval'}." in str(error.value)
    assert "$GROUNDSENSE_DATA" in str(error.value) and "--data DIR" in str(error.value)
    assert "https://github.com/amazon-science/tofueval" in str(error.value)  # where to get it


def test_the_commands_that_read_the_data_exit_2_saying_where_they_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("GROUNDSENSE_DATA", str(tmp_path))
    other = tmp_path / "other"
    for args, benchmark, looked_at in [(["case", "ragtruth:0"], "ragtruth", tmp_path / BENCHMARK_PATHS["ragtruth"]),
                                       (["extract", "tofueval", "--data", str(other)], "tofueval", other / "tofueval")]:
        result = run("eval", *args)
        assert result.exit_code == 2, result.output
        assert f"no {benchmark} data at {looked_at}" in result.output
        assert "$GROUNDSENSE_DATA" in result.output and "--data DIR" in result.output
        # where to get this benchmark, and no other's (the message wraps lines: compare without them)
        assert BENCHMARK_SOURCES[benchmark] in " ".join(result.output.split())
        assert all(BENCHMARK_SOURCES[other] not in result.output for other in BENCHMARK_SOURCES if other != benchmark)


def test_ragtruth_as_its_github_release_lays_it_out_is_read_from_the_data_folder(tmp_path):
    """The message sends the user to RAGTruth's GitHub release: its two files in ragtruth/ are
    found there, without the processed one-file form."""
    folder = tmp_path / "ragtruth"
    folder.mkdir()
    passages = "passage 1:The bridge opened in 1937.\n\npassage 2:Its main span is 4,200 feet."
    source = {"source_id": "7", "task_type": "QA", "prompt": "",
              "source_info": {"question": "How long is the main span?", "passages": passages}}
    response = {"id": "16", "source_id": "7", "model": "m", "split": "test", "quality": "good",
                "response": "Its main span is 4,200 feet. It is gold.",
                "labels": [{"start": 29, "end": 40, "text": "It is gold.", "label_type": "Evident Baseless Info"}]}
    (folder / "source_info.jsonl").write_text(json.dumps(source) + "\n")
    result = run("eval", "case", "ragtruth:16", "--data", str(tmp_path))
    assert result.exit_code == 2 and "no ragtruth data" in result.output  # half the release is not enough
    (folder / "response.jsonl").write_text(json.dumps(response) + "\n")
    result = run("eval", "case", "ragtruth:16", "--data", str(tmp_path))
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)
    assert row["id"] == "ragtruth:16" and row["answer"] == response["response"]
    assert row["passages"] == ["The bridge opened in 1937.", "Its main span is 4,200 feet."]


@pytest.mark.data
def test_the_option_wins_over_the_variable(monkeypatch, tmp_path):
    data = checkout_shared() / "data"
    monkeypatch.setenv("GROUNDSENSE_DATA", str(tmp_path))  # nothing there
    result = run("eval", "case", "ragtruth:0", "--data", str(data))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["id"] == "ragtruth:0"


def test_an_installed_package_without_a_checkout_asks_for_the_variable_or_the_option(tmp_path):
    """The packages copied out of the checkout, as wheels install them: no ../shared to fall back on."""
    for name, package in PACKAGES.items():
        shutil.copytree(package, tmp_path / "site" / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("GROUNDSENSE_DATA", "GROUNDSENSE_REFERENCE")}
    env["PYTHONPATH"] = str(tmp_path / "site")
    result = subprocess.run([sys.executable, "-m", "groundsense", "eval", "case", "ragtruth:0"], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "benchmark data" in result.stderr and "$GROUNDSENSE_DATA" in result.stderr and "--data DIR" in result.stderr
    assert all(source in " ".join(result.stderr.split()) for source in BENCHMARK_SOURCES.values())  # where to get it


def test_a_reference_folder_that_is_not_there_is_an_input_error_naming_both(monkeypatch, tmp_path):
    monkeypatch.setenv("GROUNDSENSE_REFERENCE", str(tmp_path / "absent"))
    with pytest.raises(InputError, match=r"\$GROUNDSENSE_REFERENCE or --reference DIR"):
        reference_dir()
    result = run("eval", "answers", "--cache", str(tmp_path), "--reference", str(tmp_path / "absent"))
    assert result.exit_code == 2 and f"no reference features at {tmp_path / 'absent'}" in result.output


def test_an_incomplete_tofueval_folder_exits_2_naming_each_missing_file_and_where_it_goes(tmp_path):
    """The CSVs left in the release's factual_consistency/ folder, then the split ids missing: no traceback."""
    folder = tmp_path / "tofueval"
    (folder / "factual_consistency").mkdir(parents=True)
    (folder / "document_ids_dev_test_split.json").write_text('{"test": {"meetingbank": ["m1"]}}')
    (folder / "meetingbank_test_doc.csv").write_text("meeting_id,source\nm1,Speaker 1: Hello.\n")
    (folder / "factual_consistency" / "meetingbank_factual_eval_test.csv").write_text(
        "doc_id,annotation_id,topic,model_name,sent_idx,summ_sent,sent_label,exp,type\n"
        "m1,a,greeting,g,1,Hello.,yes,,\n")
    result = run("eval", "extract", "tofueval", "--split", "test", "--data", str(tmp_path), "--limit", "1")
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert f"no meetingbank_factual_eval_test.csv in {folder}, where every tofueval file sits flat" in message
    assert "factual_consistency/meetingbank_factual_eval_test.csv found below it: move them up" in message
    (folder / "factual_consistency" / "meetingbank_factual_eval_test.csv").rename(
        folder / "meetingbank_factual_eval_test.csv")
    (folder / "document_ids_dev_test_split.json").unlink()
    result = run("eval", "case", "tofueval:test:m1|greeting|g", "--data", str(tmp_path))
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())  # the case is looked for in dev and test: every file missing is named
    missing = "document_ids_dev_test_split.json, meetingbank_factual_eval_dev.csv, meetingbank_dev_doc.csv"
    assert f"no {missing} in {folder}, where every tofueval file sits flat. The package" in message
