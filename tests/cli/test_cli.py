"""The command line: end to end with the real default scorer (``slow``), and what the
commands do with scores on a scorer the session holds (``cli_scorer``: tiny in the fast tier)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.cli import run
from helpers.fusions import answer_rule_fusions

from groundsense.config import DetectorConfig
from groundsense.errors import InputError

ROW = {
    "question": "How long is the main span?",
    "passages": [
        "The Golden Gate Bridge opened to traffic on May 27, 1937.",
        "The bridge's main span is 4,200 feet long.",
    ],
    "answer": "Its main span is 4,200 feet long. It was painted gold in 1990.",
}
SENTENCE_KEYS = {"index", "start", "end", "text", "score", "flagged", "features", "drops", "support", "verifier_score",
                 "absent"}
FEATURE_KEYS = {
    "gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean", "surprisal", "n_tokens",
    "drop_min", "neg_drop_mass", "gap_rest",
    "overlap_chunk", "overlap_evidence", "content_novel", "stem_novel", "bigram_novel", "novel_numbers", "novel_names",
}


@pytest.mark.slow  # loads the real scorer
def test_detect_json_follows_the_contract():
    result = run("detect", "--json", input=json.dumps(ROW))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"scorer", "sentences", "answer", "truncated"} <= data.keys()
    assert data["scorer"] == "smollm2-135m-instruct"
    assert data["cascade"] is None  # set only by a Cascade
    for sentence in data["sentences"]:
        assert SENTENCE_KEYS <= sentence.keys()
        assert set(sentence["features"]) == FEATURE_KEYS
        assert len(sentence["drops"]) == 2
        assert ROW["answer"][sentence["start"] : sentence["end"]] == sentence["text"]
    assert data["sentences"][0]["support"]["text"] == ROW["passages"][1]


@pytest.mark.slow  # loads the real scorer
def test_detect_prints_a_readable_view_of_a_shipped_example():
    result = run("detect", "--example", "passages-qa")
    assert result.exit_code == 0, result.output
    assert "support: passage 0" in result.output
    assert "absent from the evidence: Gustave, Eiffel" in result.output  # why the invented sentence is flagged
    assert "answer:" in result.output


def test_detect_reads_files(tmp_path, cli_scorer):
    (tmp_path / "a.txt").write_text(ROW["answer"])
    (tmp_path / "c.txt").write_text(" ".join(ROW["passages"]))
    result = run("detect", "--json", "-k", "2", "--answer-file", str(tmp_path / "a.txt"),
                 "--context-file", str(tmp_path / "c.txt"))
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["chunks"]) == 2


def test_inputs_given_with_an_example_or_a_json_object_replace_its_fields():
    from groundsense.cli.inputs import gather_input
    from groundsense.inputs.files import load_example

    example = load_example("passages-qa")
    row = gather_input("passages-qa", "", None, None, None, (), None, None)
    assert row == {**example, "question": ""}  # an empty question is a choice, not an absent one
    row = gather_input("passages-qa", None, None, "Other evidence.", None, (), None, None)
    assert row["context"] == "Other evidence." and "passages" not in row and row["answer"] == example["answer"]
    result = run("detect", "--json", "--context", "  ", input=json.dumps(ROW))  # over an object with passages
    assert result.exit_code == 2 and "evidence is empty" in result.output, result.output  # the option's evidence alone


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (["--answer", " ", "--context", "evidence"], None, "answer is empty"),
        (["--answer", "A sentence.", "--context", "  "], None, "evidence is empty"),
        ([], "{not json", "not valid JSON"),
        ([], " \n", "no answer given: use --answer/--answer-file"),  # nothing piped: what to give, not a JSON error
        ([], "[1, 2]", "must be a JSON object"),
        (["--scorer", "no-such-org/no-such-model", "--answer", "A.", "--context", "B."], None, "unknown scorer"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, stdin, message, hub_offline):
    result = run("detect", *args, input=stdin)  # offline, an unknown scorer fails without the hub's retries
    assert result.exit_code == 2
    assert message in result.output
    assert '"sentences"' not in result.output


@pytest.mark.parametrize("group, one", [([], "the answer was not cleared under --fail-on-flag"),
                                        (["eval"], "an internal error: a traceback")])  # eval has no --fail-on-flag
def test_the_exit_codes_are_in_the_help(group, one):
    shown = run(*group, "--help").output
    assert "\n    2    bad usage or input" in shown
    assert f"\n    1    {one}" in shown


def test_a_hub_message_is_printed_once():
    """The hub's logger prints its messages itself; the root handler printed each again (an
    unknown --scorer offline: every retry's line twice, for the half minute of its retries)."""
    code = ("import logging; from groundsense.cli import cli; cli(['examples'], standalone_mode=False); "
            "logging.getLogger('huggingface_hub.file_download').warning('Retrying in 1s')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr.count("Retrying in 1s") == 1, done.stderr


@pytest.mark.parametrize("columns", [60, 120])
@pytest.mark.parametrize("command", ["detect", "stream"])
def test_the_help_shows_each_example_command_line_whole(command, columns):
    """An example is a command line to copy: help neither joins two nor wraps one."""
    from click.testing import CliRunner

    from groundsense.cli import cli

    shown = CliRunner().invoke(cli, [command, "--help"], terminal_width=columns).output
    examples = [line.strip() for line in cli.commands[command].help.splitlines() if "groundsense " in line]
    assert examples and all(f"\n    {example}\n" in shown for example in examples), shown


def test_a_scorer_whose_weights_are_not_installed_says_how_to_install_them(absent_scorer):
    result = run("detect", "--scorer", absent_scorer.name, "--answer", "A.", "--context", "B.")
    assert result.exit_code == 2
    assert absent_scorer.pip_command in result.output
    assert '"sentences"' not in result.output


def test_scorers_lists_the_built_in_ones_and_how_to_install_the_missing(absent_scorer):
    from groundsense.weights import BUILTINS

    result = run("scorers")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines if not line.startswith(" ")][:len(BUILTINS)] == list(BUILTINS)
    assert "smollm2-135m-instruct (default)  installed" in lines  # its weights ship with the package
    at = next(i for i, line in enumerate(lines) if line.startswith(absent_scorer.name))
    assert lines[at].endswith("not installed; install with:") and lines[at + 1].strip() == absent_scorer.pip_command


def test_scorers_prepare_keeps_the_converted_weights_or_says_how_to_install_them(absent_scorer, monkeypatch):
    from groundsense.weights import DEFAULT_SCORER

    missing = run("scorers", "--prepare", absent_scorer.name)
    assert missing.exit_code == 2 and absent_scorer.pip_command in missing.output
    unknown = run("scorers", "--prepare", "no-such-scorer")
    assert unknown.exit_code == 2 and "'no-such-scorer' is not a built-in scorer" in unknown.output
    monkeypatch.delenv("GROUNDSENSE_CACHE")  # the machine's cache, which `make setup` prepared
    ready = run("scorers", "--prepare", DEFAULT_SCORER)
    assert ready.exit_code == 0, ready.output
    assert (Path(ready.output.strip()) / "config.json").is_file()


@pytest.mark.parametrize("cli_scorer", ["real"], indirect=True)  # the shipped thresholds judge
def test_fail_on_flag_passes_only_an_answer_the_detection_cleared(tmp_path, invoke_cli):
    evidence = ["--question", ROW["question"]]
    for i, passage in enumerate(ROW["passages"]):
        (tmp_path / f"{i}.txt").write_text(passage)
        evidence += ["--passage-file", tmp_path / f"{i}.txt"]
    supported = ROW["answer"].split(" It was")[0]
    assert invoke_cli(["detect", "--fail-on-flag", *evidence, "--answer", supported]).exit_code == 0
    assert invoke_cli(["detect", "--fail-on-flag", *evidence, "--answer", ROW["answer"]]).exit_code == 1  # flagged
    answer_rule_fusions().save(tmp_path / "fusions.json")  # the answer flagged as a whole
    whole = invoke_cli(["detect", "--fail-on-flag", "--json", "--fusion", tmp_path / "fusions.json", *evidence,
                        "--answer", supported])
    assert whole.exit_code == 1 and json.loads(whole.output)["answer"]["n_flagged"] == 0
    capped = invoke_cli(["detect", "--fail-on-flag", "--json", "--max-answer-tokens", "12", *evidence,
                         "--answer", supported + " And so on."])  # its last sentence past the cap: not judged
    assert capped.exit_code == 1 and json.loads(capped.output)["answer"]["flagged"] is None, capped.output


def test_non_utf8_file_is_refused(tmp_path):
    (tmp_path / "a.txt").write_bytes("caf\xe9".encode("latin-1"))
    result = run("detect", "--answer-file", str(tmp_path / "a.txt"), "--context", "x")
    assert result.exit_code == 2 and "not UTF-8" in result.output


def _batch_input(tmp_path):
    rows = [
        {"id": "a", **ROW},
        {"id": "b", "answer": "", "context": "x"},
        {"id": "c", **ROW, "answer": "The bridge opened in 1937."},
        {"id": "d", **ROW, "answer": "The bridge is blue."},
    ]
    lines = [json.dumps(r) for r in rows]
    lines.insert(2, "{broken")
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", ["question", "context", "answer"])
def test_a_text_given_twice_is_refused(tmp_path, name):
    (tmp_path / "text.txt").write_text("The bridge is red.")
    given = {"question": "Q?", "context": "The bridge opened in 1937.", "answer": "It opened in 1937."}
    args = [a for key, text in given.items() for a in (f"--{key}", text)]
    result = run("detect", *args, f"--{name}-file", str(tmp_path / "text.txt"))
    assert result.exit_code == 2 and f"--{name} and --{name}-file both give the {name}" in result.output


@pytest.mark.parametrize("output, message", [
    ("in.jsonl", "is the input file: write the records to another file"),
    (".", "a folder; name a file in it"),
    ("missing/out.jsonl", "no folder missing: create it"),
])
def test_batch_refuses_an_output_it_cannot_write_before_loading_the_scorer(tmp_path, monkeypatch, output, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text(json.dumps(ROW) + "\n")
    result = run("batch", "in.jsonl", "-o", output)
    assert result.exit_code == 2 and message in result.output
    assert (tmp_path / "in.jsonl").read_text() == json.dumps(ROW) + "\n"


@pytest.mark.parametrize("name, content, what", [
    ("in.parquet", b"PAR1 and a table", "Parquet: read it with --engine ray"),
    ("in.jsonl.gz", b"\x1f\x8b\x08 compressed", "compressed: decompress it, or read it with --engine ray"),
    ("in.jsonl", b"\x1f\x8b\x08 compressed", "compressed: decompress it, or read it with --engine ray"),
    ("in.jsonl.bz2", b"BZh91AY&SY", "compressed: decompress it, or read it with --engine ray"),
    ("in.jsonl", b"\xfd7zXZ\x00 xz", "compressed: decompress it, or read it with --engine ray"),
])
def test_the_local_batch_refuses_an_input_only_the_ray_engine_reads(tmp_path, name, content, what):
    (tmp_path / name).write_bytes(content)
    result = run("batch", str(tmp_path / name), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 2 and f"Error: {tmp_path / name} is {what}\n" in result.output
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("output", ["out.parquet", "folder.parquet"])
def test_the_local_batch_refuses_a_parquet_output(tmp_path, monkeypatch, output):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text(json.dumps(ROW) + "\n")
    (tmp_path / "folder.parquet").mkdir()  # an earlier Ray run's output
    result = run("batch", "in.jsonl", "-o", output)
    assert result.exit_code == 2 and "the local engine writes a local JSONL file; write .parquet with --engine ray" \
        in result.output and not (tmp_path / "out.parquet").exists()


def test_batch_keeps_going_past_bad_rows(tmp_path, cli_scorer):
    source, out = _batch_input(tmp_path), tmp_path / "out.jsonl"
    result = run("batch", str(source), "-o", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    records = {r["line"]: r for r in map(json.loads, out.read_text().splitlines())}
    # a, c and d share their passages, so they are scored together, before b and line 3.
    assert list(records) == [1, 4, 5, 2, 3]
    assert [records[n]["id"] for n in (1, 4, 5, 2, 3)] == ["a", "c", "d", "b", None]
    assert "answer is empty" in records[2]["error"]["message"]
    assert "not valid JSON" in records[3]["error"]["message"]
    assert all("sentences" in records[n] for n in (1, 4, 5))
    rerun = run("batch", str(source), "-o", str(out), "--no-progress")
    # the errors already there are counted: a rerun that checks a finished output does not read "0 errors"
    assert f"{out}: 0 written, 5 already there, 2 errors (2 of them already there)\n" in rerun.output
    assert len(out.read_text().splitlines()) == 5
    out.write_text("".join(out.read_text().splitlines(keepends=True)[:4]))  # lines 1, 4, 5 and 2 (an error)
    resumed = run("batch", str(source), "-o", str(out), "--no-progress")
    assert f"{out}: 1 written, 4 already there, 2 errors (1 of them already there)\n" in resumed.output


@pytest.mark.parametrize("content", ["", "\n  \n\n"])
def test_batch_warns_of_an_input_without_rows(tmp_path, content):
    """An empty input (or one of blank lines) ended with exit 0, "0 written" and an empty output, and no
    word of it: a wrong or unfinished file went unnoticed."""
    (tmp_path / "in.jsonl").write_text(content)
    result = run("batch", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--no-progress")
    assert result.exit_code == 0, result.output
    assert f"warning: {tmp_path / 'in.jsonl'} has no rows (it is empty, or only blank lines): nothing was scored\n" \
        in result.stderr
    assert (tmp_path / "out.jsonl").read_text() == ""


def test_batch_writes_to_standard_output_with_dash(tmp_path, monkeypatch, cli_scorer):
    """`-o -` was a file named "-" in the working folder; now the records go to standard output, and a
    reader that closes the pipe (`| head -1`) ends the run with 141. The Ray engine names what it writes."""
    from groundsense.cli import cli

    monkeypatch.chdir(tmp_path)
    source = _batch_input(tmp_path)
    result = run("batch", str(source), "-o", "-", "--no-progress")
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["line"] for line in result.stdout.splitlines()] == [1, 4, 5, 2, 3]
    assert "standard output: 5 written, 0 already there, 2 errors" in result.stderr
    assert not (tmp_path / "-").exists()
    read, write = os.pipe()
    os.close(read)
    monkeypatch.setattr(sys, "stdout", os.fdopen(write, "w"))
    try:
        assert cli.main(["batch", str(source), "-o", "-", "--no-progress"], standalone_mode=False) == 141
    finally:
        sys.stdout.close()
    refused = run("batch", str(source), "-o", "-", "--engine", "ray")
    assert refused.exit_code == 2 and "the local engine writes to standard output" in refused.output


@pytest.mark.parametrize("command", [["detect"], ["stream", "--delay", "0"]])
def test_the_view_piped_prints_each_line_whole(command, invoke_cli):
    """Not a terminal, no line is wrapped at 80 columns: `| grep UNSUPPORTED` gets the whole sentence."""
    out = invoke_cli([*command, "--example", "passages-qa", "--mode", "two_pass"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    for sentence in json.loads(invoke_cli(["detect", "--example", "passages-qa", "--json"]).output)["sentences"]:
        assert any(line.startswith(f"[{sentence['index']}]") and line.endswith(sentence["text"]) for line in lines)
    assert any(len(line) > 100 for line in lines)


@pytest.mark.slow  # runs the real scorer, in a subprocess it stops and in this process
@pytest.mark.system
@pytest.mark.parametrize("cli_scorer", ["real"], indirect=True)
def test_a_batch_stopped_by_sigterm_resumes_to_the_same_file(tmp_path, invoke_cli):
    """The whole run and the resume in this process, the stopped run in a process of its own;
    all on the real scorer and one thread, as a float sum's order depends on the thread count.
    SIGKILL's resumes are tests/test_faults.py's."""
    source = _batch_input(tmp_path)
    whole, resumed = tmp_path / "whole.jsonl", tmp_path / "resumed.jsonl"
    arguments = ["--threads", "1", "batch", str(source), "--no-progress", "-o"]
    assert invoke_cli(arguments + [whole]).exit_code == 0
    proc = subprocess.Popen([sys.executable, "-m", "groundsense.cli", *arguments, str(resumed)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and (not resumed.exists() or not resumed.read_text().count("\n")):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait() == 143  # the records written so far are kept
    with resumed.open("a") as sink:
        sink.write('{"id": "c", "line": 4, "sent')  # a record cut off mid-write
    assert resumed.read_text() != whole.read_text()
    result = invoke_cli(arguments + [resumed])
    assert result.exit_code == 0, result.output
    assert resumed.read_text() == whole.read_text()  # evidence-cache state must not leak into the output


@pytest.mark.slow  # loads the real scorer
def test_detect_with_a_verifier_runs_a_cascade():
    out = run("detect", "--example", "passages-qa", "--verifier", "judge:smollm2-135m-instruct", "--escalate", "1",
              "--verifier-threshold", "0.3", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["cascade"]["verifier"] == "judge:smollm2-135m-instruct" and data["cascade"]["threshold"] == 0.3
    assert data["cascade"]["n_escalated"] == len(data["sentences"])
    for sentence in data["sentences"]:
        assert 0.0 <= sentence["verifier_score"] <= 1.0
        assert sentence["flagged"] is (sentence["verifier_score"] >= 0.3)
    view = run("detect", "--example", "passages-qa", "--verifier", "judge:smollm2-135m-instruct", "--escalate", "0.1")
    assert view.exit_code == 0 and "verifier judge:smollm2-135m-instruct" in view.output


def test_detect_refuses_an_unknown_verifier_with_exit_2():
    out = run("detect", "--example", "passages-qa", "--verifier", "oracle:x")
    assert out.exit_code == 2 and "unknown verifier" in out.output


def test_calibrate_fits_thresholds_that_detect_then_uses(tmp_path, cli_scorer):
    rows = [
        {**ROW, "labels": [{"start": 34, "end": 62}]},  # the gold-paint sentence is unsupported
        {"passages": ["Paris is the capital of France.", "The Seine flows through Paris."],
         "answer": "The Seine flows through Paris. Paris has ten million bridges.",
         "labels": [{"start": 31, "end": 61}]},
    ]
    source = tmp_path / "labelled.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    output = tmp_path / "calibration.json"
    out = run("calibrate", str(source), "-o", str(output), "--target-recall", "1", "--no-progress")
    assert out.exit_code == 0, out.output
    calibration = json.loads(output.read_text())
    assert calibration["made_with"]["answers"] == 2 and calibration["made_with"]["labelled"] is True
    assert calibration["made_with"]["chunk_counts"] == [2]  # both rows' two passages
    assert calibration["made_with"]["n_sentences"] == 4
    assert (tmp_path / "labelled.features.jsonl").exists()  # the scored features, kept for a rerun
    threshold = calibration["thresholds"]["sensitivity"]
    assert f"sentences flagged at score >= {threshold:.3f}: recall >= 1.0" in out.stderr  # what was fitted, and how
    assert f"answers flagged at score >= {threshold:.3f}: not fitted" in out.stderr
    detected = run("detect", "--calibration", str(output), "--json", input=json.dumps(ROW))
    assert detected.exit_code == 0, detected.output
    data = json.loads(detected.output)
    assert data["threshold"] == pytest.approx(calibration["thresholds"][data["score_rule"]])
    assert data["sentences"][1]["score"] >= data["threshold"] - 1e-6  # recall 1 on a set holding this answer
    # every answer is unsupported: no answer threshold, so the answer is flagged when a sentence is
    assert calibration["answer_thresholds"] == {} and data["answer"]["threshold"] == data["threshold"]
    assert data["answer"]["flagged"] is True
    assert run("calibrate", str(source), "-o", str(output), "--mode", "two_pass").exit_code == 2


@pytest.mark.parametrize("cli_scorer", ["tiny"], indirect=True)  # which rows are fitted on, not the scores
def test_calibrate_says_which_rows_failed_to_score_and_records_how_many(tmp_path, cli_scorer):
    """A row that failed (here a typo in a field's name) was left out of the fit without a word."""
    rows = [{**ROW, "labels": [{"start": 34, "end": 62}]}, {**ROW, "labels": [], "sorce": "a"},
            {**ROW, "answer": "Its main span is 4,200 feet long.", "labels": []}]
    source = tmp_path / "labelled.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = run("calibrate", str(source), "-o", str(tmp_path / "calibration.json"), "--no-progress")
    assert out.exit_code == 0, out.output
    assert (f"warning: 1 row of {source} failed to score and is left out (line 2; the errors are in "
            f"{tmp_path / 'labelled.features.jsonl'})") in out.stderr
    made = json.loads((tmp_path / "calibration.json").read_text())["made_with"]
    assert made["answers"] == 2 and made["errors"] == 1


@pytest.mark.parametrize("cli_scorer", ["tiny"], indirect=True)  # what the view prints, not the scores
def test_stream_view_names_the_verifier_of_a_sentence_decided_while_streaming(tmp_path, invoke_cli, cli_scorer):
    """A cascade's stream verifies each flagged sentence as it ends. The terminal view printed
    the sentences fed without the cascade, and failed (a TypeError) on the first one verified."""
    from groundsense.calibration.calibration import Calibration

    Calibration(cli_scorer.name, 2, {}, {"gap": -1e9}).save(tmp_path / "flag-all.json")  # every sentence flagged
    spec = f"judge:{cli_scorer.name}"
    out = invoke_cli(["stream", "--example", "passages-qa", "--delay", "0", "-k", "2", "--mode", "two_pass",
                      "--calibration", tmp_path / "flag-all.json", "--verifier", spec, "--escalate", "1"])
    assert out.exit_code == 0, out.output
    assert out.output.count(f"verifier {spec}: P(unsupported)") >= 3, out.output


@pytest.mark.parametrize("command", ["calibrate", "fit"])
def test_bad_labels_or_an_unwritable_output_are_refused_before_the_scorer_loads(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.jsonl").write_text(json.dumps({**ROW, "labels": [{"start": 34, "end": 62}]}) + "\n"
                                       + json.dumps({**ROW, "labels": [[0, 20]]}) + "\n")
    unwritable = run(command, "in.jsonl", "-o", "missing/out.json")
    assert unwritable.exit_code == 2 and "-o missing/out.json: no folder missing" in unwritable.output
    labelled = run(command, "in.jsonl", "-o", "out.json")
    assert labelled.exit_code == 2 and 'in.jsonl line 2: labels[0] must be {"start": integer' in labelled.output
    assert not (tmp_path / "in.features.jsonl").exists()  # nothing was scored


@pytest.mark.parametrize("command", ["calibrate", "fit"])
@pytest.mark.parametrize("output, given, what", [
    ("in.jsonl", [], "the input rows"),
    ("in.features.jsonl", [], "the features file"),
    ("in.fused.jsonl", ["--fuse", "--adapt", "shipped"], "the features file"),
    ("cache.jsonl", ["--features", "cache.jsonl"], "the features file"),
])
def test_an_output_that_would_replace_the_rows_or_their_features_is_refused(tmp_path, monkeypatch, command, output,
                                                                            given, what):
    """It was written over them once everything was scored: the labelled rows, or the scores, lost."""
    monkeypatch.chdir(tmp_path)
    rows = "".join(json.dumps({**ROW, "labels": [], "source": s}) + "\n" for s in "abcde")
    (tmp_path / "in.jsonl").write_text(rows)
    given = [a for a in given if command == "calibrate" or a not in ("--adapt", "shipped")]
    result = run(command, "in.jsonl", "-o", output, *given)
    assert result.exit_code == 2 and f"-o {output} is {what}" in result.output, result.output
    assert (tmp_path / "in.jsonl").read_text() == rows and not list(tmp_path.glob("*.features.jsonl"))


def test_a_features_file_of_other_rows_or_settings_is_refused(tmp_path):
    from groundsense.cli.calibration_data import check_cache

    source, features = tmp_path / "in.jsonl", tmp_path / "in.features.jsonl"
    source.write_text(json.dumps({**ROW, "id": "a"}) + "\n" + json.dumps({**ROW, "id": "b"}) + "\n")
    made = {"scorer": "smollm2-135m-instruct", "precision": "fp32", "leave_one_out": "exact"}
    config = DetectorConfig(**made)
    sentence = {"start": 0, "end": 33, "text": ROW["answer"][:33]}
    features.write_text(json.dumps({"id": "a", "line": 1, **made, "sentences": [sentence]}) + "\n")
    check_cache(source, features, config)  # the rows it was scored from
    for record, message in [
        ({"id": "b", "line": 1, **made}, "line 1 was scored from another row than"),  # the rows reordered
        ({"id": "a", "line": 3, **made}, "line 3 was scored from another row than"),  # the rows cut
        ({"id": "a", "line": 1, **made, "sentences": [{**sentence, "text": "Another answer's."}]}, "another row"),
        ({"id": "a", "line": 1, **made, "leave_one_out": "masked"}, "scored by smollm2-135m-instruct at fp32 "
                                                                    "(leave-one-out masked), and this run scores"),
    ]:
        features.write_text(json.dumps(record) + "\n")
        with pytest.raises(InputError, match=re.escape(message)):
            check_cache(source, features, config)
    # a fused cascade's run: its judge's scores are what it fits, so another judge's (or none) are refused
    judged = {"id": "a", "line": 1, **made, "sentences": [sentence], "cascade": {"verifier": "judge:a"}}
    features.write_text(json.dumps(judged) + "\n")
    check_cache(source, features, config, verifier="judge:a")
    check_cache(source, features, config)  # a plain run reads the detector's features of a cascade's run
    for record, message in [(judged, "judged by judge:a, and this run's judge is judge:b"),
                            ({**judged, "cascade": None}, "judged by no verifier, and this run's judge is judge:b")]:
        features.write_text(json.dumps(record) + "\n")
        with pytest.raises(InputError, match=re.escape(message)):
            check_cache(source, features, config, verifier="judge:b")
    # a row that asks for its own chunk count was scored with it, whatever -k says
    source.write_text(json.dumps({**ROW, "id": "a", "options": {"k": 3}}) + "\n")
    shaped = {"k": 3, "max_context_tokens": 1800, "max_answer_tokens": 256}
    features.write_text(json.dumps({"id": "a", "line": 1, **made, **shaped, "sentences": [sentence]}) + "\n")
    check_cache(source, features, config)
    with pytest.raises(InputError, match=re.escape("scored with --max-answer-tokens 256, and this run scores with "
                                                   "--max-answer-tokens 64")):
        check_cache(source, features, replace(config, max_answer_tokens=64))


@pytest.mark.slow
@pytest.mark.parametrize("cli_scorer", ["real"], indirect=True)
def test_a_features_file_scored_with_another_chunk_count_or_budget_is_refused(tmp_path, monkeypatch, cli_scorer):
    """Its records did not say with which -k or token budgets they were scored, so `calibrate` and
    `fit` fitted on them at another -k, and the calibration was silently wrong."""
    monkeypatch.chdir(tmp_path)
    context = {"question": ROW["question"], "context": " ".join(ROW["passages"]), "answer": ROW["answer"]}
    rows = [{**context, "labels": [{"start": 34, "end": 62}], "source": s} for s in "abcd"]
    rows.append({**ROW, "labels": [], "source": "e"})  # passages: chunks as given, whatever -k says
    Path("in.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    scored = run("calibrate", "in.jsonl", "-k", "2", "-o", "k2.json", "--no-progress")
    assert scored.exit_code == 0, scored.output
    records = [json.loads(line) for line in Path("in.features.jsonl").read_text().splitlines()]
    assert [(r["k"], r["max_context_tokens"], r["max_answer_tokens"]) for r in records] == \
        [(2, 1800, 256)] * 4 + [(None, 1800, 256)]
    for command, args, message in [
        ("calibrate", [], "in.features.jsonl holds answers scored with -k 2, and this run scores with -k 5: pass -k 2 "
                          "to reuse them, or move in.features.jsonl away"),
        ("calibrate", ["--adapt", "shipped"], "scored with -k 2, and this run scores with -k 5"),
        ("fit", ["-k", "2", "--max-context-tokens", "900"], "in.features.jsonl holds answers scored with "
                                                            "--max-context-tokens 1800, and this run scores with "
                                                            "--max-context-tokens 900: pass --max-context-tokens 1800"),
        ("fit", ["-k", "2", "--max-answer-tokens", "64"], "scored with --max-answer-tokens 256"),
    ]:
        refused = run(command, "in.jsonl", *args, "-o", "out.json", "--no-progress")
        assert refused.exit_code == 2 and message in refused.output, (command, args, refused.output)
    assert not Path("out.json").exists()
    assert [json.loads(line) for line in Path("in.features.jsonl").read_text().splitlines()] == records  # kept
    # a file written before records kept these settings: read, with a word that they cannot be checked
    Path("in.features.jsonl").write_text("".join(
        json.dumps({k: v for k, v in r.items() if k not in ("k", "max_context_tokens", "max_answer_tokens")}) + "\n"
        for r in records))
    older = run("calibrate", "in.jsonl", "-k", "2", "-o", "older.json", "--no-progress")
    assert older.exit_code == 0, older.output
    assert ("warning: in.features.jsonl was written before features files recorded the chunk count and token "
            "budgets, so they cannot be checked against this run's (-k 2, --max-context-tokens 1800, "
            "--max-answer-tokens 256)") in older.stderr
    assert json.loads(Path("older.json").read_text())["thresholds"] == json.loads(Path("k2.json").read_text())[
        "thresholds"]
    assert "cannot be checked" not in scored.stderr


def test_calibrate_refuses_an_option_the_rows_leave_without_effect(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "labelled.jsonl").write_text(json.dumps({**ROW, "labels": [{"start": 34, "end": 62}]}) + "\n")
    (tmp_path / "plain.jsonl").write_text(json.dumps(ROW) + "\n")
    for args, message in [
        (["plain.jsonl", "--target-recall", "0.8"], "plain.jsonl has no 'labels', which a target recall or"),
        (["labelled.jsonl", "--flag-rate", "0.3"], "--flag-rate sets the threshold of unlabelled rows"),
        (["labelled.jsonl", "--method", "quantile"], "--method says how --adapt adapts a calibration"),
        (["labelled.jsonl", "--target-recall", "0.5", "--target-precision", "0.2"], "not both"),
    ]:
        result = run("calibrate", *args, "-o", "out.json")
        assert result.exit_code == 2 and message in result.output, (args, result.output)
    assert run("fit", "labelled.jsonl", "--target-recall", "0.5", "--target-precision", "0.2", "-o",
               "out.json").exit_code == 2
    assert not list(tmp_path.glob("*.features.jsonl"))  # refused before anything was scored


def test_fit_refuses_too_few_sources_before_anything_is_scored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [{**ROW, "labels": [{"start": 34, "end": 62}], "source": source} for source in "abcdaa"]
    (tmp_path / "few.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = run("fit", "few.jsonl", "-o", "out.json")
    assert result.exit_code == 2 and "needs at least 5 sources (rows without a 'source' are one each), not 4" \
        in result.output and not (tmp_path / "few.features.jsonl").exists()


def test_fit_refuses_a_score_the_shipped_files_cannot_give_before_anything_is_scored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [{**ROW, "labels": [{"start": 34, "end": 62}], "source": source} for source in "abcdef"]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = run("fit", "rows.jsonl", "--precision", "int8", "--score", "fused", "-o", "out.json")
    assert result.exit_code == 2 and "at int8 has none: use --score sensitivity" in result.output
    assert not (tmp_path / "rows.features.jsonl").exists()


def test_a_row_without_a_source_or_with_a_null_one_is_a_source_of_its_own():
    """docs/calibration.md: rows sharing a source stay in one cross-validation fold; the others are each their own."""
    from groundsense.cli.calibration_data import source_group

    rows = {1: {"source": "doc"}, 2: {"source": "doc"}, 3: {}, 4: {"source": None}, 5: {"source": None}}
    assert [source_group(line, row) for line, row in rows.items()] == [
        "source doc", "source doc", "line 3", "line 4", "line 5"]


@pytest.mark.parametrize("command", ["calibrate", "fit"])
def test_the_output_help_says_what_fuse_writes(command):
    assert "(with --fuse: the fusion JSON)" in " ".join(run(command, "--help").output.split())


def test_a_file_named_dash_is_standard_input_where_that_is_free(cli_scorer, tmp_path):
    (tmp_path / "c.txt").write_text(" ".join(ROW["passages"]))
    done = run("detect", "--json", "-k", "2", "--context-file", str(tmp_path / "c.txt"), "--answer-file", "-",
               input=ROW["answer"])
    assert done.exit_code == 0, done.output
    assert " ".join(s["text"] for s in json.loads(done.stdout)["sentences"]) == ROW["answer"]  # read from stdin
    for args, message in (
            (["detect", "--context-file", "-"], "holds the request's JSON object when no --answer"),
            (["detect", "--context-file", "-", "--answer-file", "-"], "each name standard input"),
            (["stream", "--context-file", "-"], "carries the answer as it is generated")):
        refused = run(*args, input="The bridge opened in 1937.")
        assert refused.exit_code == 2 and message in refused.output, refused.output


def test_a_file_named_dash_is_refused_where_standard_input_is_a_terminal(monkeypatch):
    """Read there, it waited without a word for text typed until Ctrl-D; as detect's JSON and stream do, it says
    to pipe."""
    from groundsense.cli.inputs import gather_input

    class Terminal:
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())  # no buffer: a read would fail here
    with pytest.raises(InputError, match=r"--context-file - reads standard input, which is a terminal here: pipe"):
        gather_input(None, None, None, None, "-", (), "An answer.", None)
