"""The Ray engine (`batch --engine ray`, groundsense.scale) against the local batch, on a
local Ray runtime with the real default scorer. Skip with -m 'not ray'."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray
import torch
from click.testing import CliRunner
from helpers.same_result import assert_records_close

from groundsense.cli import cli
from groundsense.config import DetectorConfig
from groundsense.errors import InputError
from groundsense.rows.batch import run_batch, score_rows
from groundsense.scale import Resources, detect_dataset, open_sink, run_ray_batch, table_records
from groundsense.scale.io import read_input
from groundsense.scorer.loading import native_bf16
from groundsense_eval.data.ragtruth import load_ragtruth
from groundsense_eval.data.rows import case_row


def starts_ray(test):
    """A test that starts the local Ray runtime: a system test (`make test-system`). The others
    check what is refused, read or resumed before Ray starts, and run in `make test`."""
    return pytest.mark.ray(pytest.mark.slow(pytest.mark.system(test)))


# Short answers; two over one source (their evidence is shared) with another source's between them.
RAGTRUTH_IDS = ["ragtruth:16506", "ragtruth:16465", "ragtruth:16508"]
PASSAGES = ["The Golden Gate Bridge opened in 1937.", "Its main span is 4,200 feet long."]
CONTEXT = "The Eiffel Tower was finished in 1889. It is 330 metres tall. It stands in Paris."


@pytest.fixture(scope="module")
def ray_runtime():
    """A local Ray runtime; the local batch runs with the actors' one torch thread, since
    another thread count sums in another order (float differences of ~1e-6 in a score).
    Idle workers are kept (Ray's soft limit is the CPU count, and Ray Data's own actors take
    two workers), so that each test's tasks do not wait for fresh worker processes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _system_config={"num_workers_soft_limit": 8})
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()
    torch.set_num_threads(threads)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def by_line(records):
    return {r["line"]: r for r in records}


# Rows that once crashed a whole run (lone surrogates in the id or answer), a row with an unknown
# field and one that is no object: each gets the local batch's error record.
BAD_ROWS = [json.dumps({"id": "b\ud800", "passages": PASSAGES, "answer": "It is long."}),
            json.dumps({"id": "c", "passages": PASSAGES, "answer": "Its span\udfff is long."}),
            json.dumps({"id": "d", "passage": PASSAGES, "answer": "It is long."}),
            "[1, 2]"]


@starts_ray
@pytest.mark.data
def test_ray_records_equal_local_batch_on_ragtruth_and_bad_rows(tmp_path, detector, ray_runtime):
    cases = {c.id: c for c in load_ragtruth(ids=RAGTRUTH_IDS)[0]}
    lines = [json.dumps(case_row(cases[i])) for i in RAGTRUTH_IDS]
    lines.insert(2, "{broken")
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines + BAD_ROWS) + "\n", encoding="ascii")
    run_batch(detector, source, tmp_path / "local.jsonl", progress=False)
    local = by_line(map(json.loads, (tmp_path / "local.jsonl").read_text(encoding="utf-8").splitlines()))

    out = tmp_path / "out.parquet"
    summary = run_ray_batch(str(source), open_sink(str(out)), Resources(actors=1, threads=1, rows_per_batch=2))
    assert (summary.written, summary.skipped, summary.errors) == (8, 0, 5)
    got = by_line(table_records(pq.read_table(out)))
    assert sorted(got) == sorted(local) == list(range(1, 9))
    assert "not valid JSON" in got[3]["error"]["message"]
    assert got[5]["id"] is None and "lone UTF-16 surrogate" in got[5]["error"]["message"]
    for line, record in local.items():
        assert_records_close(got[line], record, 1e-6, f"line {line}")
    scored = [record for record in got.values() if record.get("error") is None]
    assert scored and all(record["score_rule"] == "fused" for record in scored)  # the default score


def test_a_damaged_output_stops_the_ray_engine_before_any_work(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows()[:2])
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "p0", "line": 1}\n{not a record\n', encoding="utf-8")
    with pytest.raises(InputError, match="out.jsonl line 2 is not a batch record"):
        run_ray_batch(str(source), open_sink(str(out)), Resources(actors=1, threads=1))


@starts_ray
def test_parquet_input_reads_as_numbered_rows(tmp_path, ray_runtime):
    rows = [{"id": "a", "passages": PASSAGES, "answer": "It opened in 1937.", "sentences": [[0, 18]]},
            {"id": "b", "passages": PASSAGES, "answer": "It is long.", "sentences": None}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    read = sorted(read_input(f"file://{tmp_path}/in.parquet").take_all(), key=lambda r: r["line"])
    assert [r["line"] for r in read] == [1, 2]
    assert [json.loads(r["raw"]) for r in read] == rows


def synthetic_rows():
    answers = ["It opened in 1937.", "Its main span is 4,200 feet long.", "It is painted blue.",
               "It was built by Romans."]
    rows = [{"id": f"p{i}", "passages": PASSAGES, "answer": a} for i, a in enumerate(answers)]
    rows += [{"id": f"c{i}", "context": CONTEXT, "answer": a}
             for i, a in enumerate(["It was finished in 1889.", "It is 330 metres tall.", "It is in Rome."])]
    rows.insert(3, {"id": "empty", "context": CONTEXT, "answer": ""})
    return rows


def score_actors():
    return [p for p in psutil.process_iter(["cmdline"]) if "ScoreRows" in " ".join(p.info["cmdline"] or [])]


@starts_ray
def test_killed_actor_leaves_every_line_once_and_a_rerun_resumes(tmp_path, detector, ray_runtime):
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows())
    run_batch(detector, source, tmp_path / "local.jsonl", progress=False)
    local = sorted((tmp_path / "local.jsonl").read_text().splitlines())

    out = tmp_path / "out.jsonl"
    resources = Resources(actors=2, threads=1, rows_per_batch=1)  # the actors take both CPUs
    run = threading.Thread(target=run_ray_batch, args=(str(source), open_sink(str(out)), resources))
    run.start()
    killed = None
    while run.is_alive() and killed is None:
        written = out.read_text().count("\n") if out.exists() else 0
        if written:  # mid-run: some records are in
            assert written < 8, "the run ended before an actor could be killed"
            actors = score_actors()
            assert actors, "no scoring actor process found"
            killed = actors[0].pid
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    run.join(timeout=600)
    assert killed is not None and not run.is_alive()
    assert not psutil.pid_exists(killed) or psutil.Process(killed).status() == psutil.STATUS_ZOMBIE
    lines = [json.loads(line)["line"] for line in out.read_text().splitlines()]
    assert sorted(lines) == list(range(1, 9))  # every input line exactly once
    assert sorted(out.read_text().splitlines()) == local  # the local batch's records, byte for byte

    kept = sorted(out.read_text().splitlines(), key=lambda record: '"error"' not in record)[:6]  # its error too
    out.write_text("\n".join(kept) + '\n{"id": "p2", "line": 3, "sent')  # a record cut off by a kill
    summary = run_ray_batch(str(source), open_sink(str(out)), Resources(actors=1, threads=1))
    assert (summary.written, summary.skipped) == (2, 6)
    assert (summary.errors, summary.skipped_errors) == (0, 1)  # the error record already there is counted
    assert sorted(out.read_text().splitlines()) == local


def test_the_ray_engine_warns_of_an_input_without_rows_and_does_not_start_ray(tmp_path, monkeypatch):
    (tmp_path / "in.jsonl").write_text("\n\n")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    result = CliRunner().invoke(cli, ["batch", str(tmp_path / "in.jsonl"), "--engine", "ray", "-o",
                                      str(tmp_path / "out.parquet"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert f"warning: {tmp_path / 'in.jsonl'} has no rows (it is empty, or only blank lines)" in result.stderr
    assert not ray.is_initialized()


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_a_cluster_address_nothing_answers_at_is_an_error_at_once(tmp_path, monkeypatch, scheme):
    """Ray's own join retried for minutes, silent, where nothing listens at --address."""
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows()[:1])
    with socket.socket() as free:  # a port nothing listens on once closed
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    result = CliRunner().invoke(cli, ["batch", str(source), "--engine", "ray", "-o", str(tmp_path / "out.jsonl"),
                                      "--address", f"{scheme}127.0.0.1:{port}"])
    assert result.exit_code == 2, result.output
    assert f"could not join the Ray cluster at {scheme}127.0.0.1:{port} (ConnectionRefusedError: " in result.output
    assert "Traceback" not in result.output and not ray.is_initialized()


@starts_ray
def test_detect_dataset_takes_and_returns_a_dataset(detector, ray_runtime):
    rows = [r for r in synthetic_rows() if r["answer"]][2:5]  # passages and context rows in one Dataset
    numbered = [{**row, "line": number} for number, row in enumerate(rows, start=7)]  # a `line` column is kept
    records = detect_dataset(ray.data.from_items(numbered), Resources(threads=1), k=5)
    batches = records.iter_batches(batch_size=None, batch_format="pyarrow")
    got = {r["id"]: r for r in table_records(pa.concat_tables(batches))}
    want = {r["id"]: r for r in score_rows(detector, [(number, row) for number, row in enumerate(rows, start=7)])}
    assert sorted(got) == sorted(want) == ["c0", "p2", "p3"]
    for key, record in want.items():
        assert_records_close(got[key], record, 1e-6, key)


@starts_ray
def test_a_calibration_file_is_read_on_the_driver_and_sent_to_the_actors(tmp_path, detector, ray_runtime):
    from dataclasses import replace

    from groundsense.calibration.calibration import shipped_calibration

    shipped = shipped_calibration("smollm2-135m-instruct", 5, "fp32")
    path = tmp_path / "flags-everything.json"
    replace(shipped, thresholds={rule: -1e9 for rule in shipped.thresholds}, answer_thresholds={}).save(path)
    rows = [r for r in synthetic_rows() if r["answer"]][2:4]
    records = detect_dataset(ray.data.from_items(rows), Resources(threads=1), k=5, calibration=str(path))
    path.unlink()  # read when the Dataset was made: the actors score with what the driver read
    got = table_records(pa.concat_tables(records.iter_batches(batch_size=None, batch_format="pyarrow")))
    scored = [s for r in got for s in r["sentences"] if s["status"] == "scored"]
    assert len(got) == 2 and scored and all(s["flagged"] for s in scored)
    assert {r["score_rule"] for r in got} == {"sensitivity"}  # a calibration file: the sensitivity score


@starts_ray
@pytest.mark.parametrize("where", ["here", "a cluster"])
def test_batch_reads_a_calibration_file_once_on_the_driver(tmp_path, monkeypatch, ray_runtime, where):
    """The driver read it to check it before Ray started, and again to send it to the actors. On
    "a cluster" (RAY_ADDRESS: the runtime is not this command's) only the files are checked
    there, and the actors' other settings are theirs."""
    from groundsense.calibration.calibration import Calibration, shipped_calibration

    shipped_calibration("smollm2-135m-instruct", 5, "fp32").save(tmp_path / "calibration.json")
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows()[2:3])
    reads, load = [], Calibration.load.__func__
    monkeypatch.setattr(Calibration, "load", classmethod(lambda cls, path: (reads.append(path), load(cls, path))[1]))
    if where == "a cluster":
        monkeypatch.setenv("RAY_ADDRESS", ray.get_runtime_context().gcs_address)
    done = CliRunner().invoke(cli, ["--threads", "1", "batch", str(source), "--engine", "ray", "--no-progress",
                                    "-o", str(tmp_path / "out.jsonl"), "--calibration",
                                    str(tmp_path / "calibration.json"), "--precision", "fp32"])
    assert done.exit_code == 0, done.output
    assert json.loads((tmp_path / "out.jsonl").read_text())["score_rule"] == "sensitivity"
    assert reads == [str(tmp_path / "calibration.json")]


@starts_ray
def test_a_scorer_that_cannot_load_fails_with_its_message(tmp_path, ray_runtime):
    from groundsense.errors import ScorerUnavailable

    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows()[:1])
    resources = Resources(threads=1, detection=DetectorConfig(scorer=str(tmp_path / "no-such-model")))
    with pytest.raises(ScorerUnavailable, match="unknown scorer"):
        run_ray_batch(str(source), open_sink(str(tmp_path / "out.jsonl")), resources)
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()


def test_parquet_sink_resumes_from_complete_parts(tmp_path):
    from groundsense.scale.schema import records_table

    sink = open_sink(str(tmp_path / "out.parquet"))
    assert sink.done() == {}
    sink.write(records_table([{"id": 7, "line": 1, "error": {"type": "InputError", "message": "bad"}}]))
    sink.flush()
    (tmp_path / "out.parquet" / ".tmp-part-cut-off.parquet").write_bytes(b"PAR1 half a file")
    assert open_sink(str(tmp_path / "out.parquet")).done() == {1: True}  # an error record
    assert [p.name for p in (tmp_path / "out.parquet").iterdir()][0].startswith("part-")
    assert len(list((tmp_path / "out.parquet").iterdir())) == 1
    assert table_records(pq.read_table(tmp_path / "out.parquet")) == [
        {"id": "7", "line": 1, "error": {"type": "InputError", "message": "bad"}}
    ]


@pytest.mark.parametrize("args, message", [
    (["IN", "--engine", "ray", "-o", "out.csv"], "must end in .jsonl or .parquet"),
    (["IN", "--engine", "ray", "-o", "s3://bucket/out.jsonl"], "must be a local file"),
    (["IN", "-o", "out.jsonl", "--actors", "2"], "--actors only apply with --engine ray"),
    (["IN", "--engine", "ray", "-o", "out.jsonl", "--actors", "3-2"], "MIN <= MAX"),
    (["no-such.jsonl", "--engine", "ray", "-o", "out.jsonl"], "no-such.jsonl: no such file"),
    # the output, as the local engine checks it
    (["IN", "--engine", "ray", "-o", "IN"], "is the input file: write the records to another file"),
    (["IN", "--engine", "ray", "-o", "missing/out.jsonl"], "no folder missing: create it"),
    (["IN", "--engine", "ray", "-o", "file.parquet"], "a file, and a Parquet output is a folder of part files"),
    (["IN", "--engine", "ray", "-o", "damaged.jsonl"], "damaged.jsonl line 1 is not a batch record"),
    # what the actors would refuse
    (["IN", "--engine", "ray", "-o", "out.jsonl", "--calibration", "empty.json"], "it has no 'scorer', 'k'"),
    (["IN", "--engine", "ray", "-o", "out.jsonl", "-m", "no-such-org/no-such-model"], "unknown scorer"),
    (["IN", "--engine", "ray", "-o", "out.jsonl", "--precision", "int8", "--score", "fused"],
     "has none: use --score sensitivity"),
])
def test_batch_engine_options_are_checked_before_any_work(tmp_path, monkeypatch, hub_offline, args, message):
    monkeypatch.chdir(tmp_path)
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows()[:1])
    (tmp_path / "file.parquet").write_text("not a folder")
    (tmp_path / "damaged.jsonl").write_text("a line of something else\n")
    (tmp_path / "empty.json").write_text("{}")
    result = CliRunner().invoke(cli, ["batch", *[str(source) if a == "IN" else a for a in args]])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not ray.is_initialized()


def test_settings_that_depend_on_the_actors_hardware_are_left_to_the_actors(tmp_path):
    """GPU actors run bf16 where this CPU runs fp32: a bf16 fusion file is theirs to judge, not the
    driver's (the run goes on to the next check, the damaged output)."""
    from groundsense.calibration.fusion import LexicalFusions

    if native_bf16():
        pytest.skip("this CPU runs bf16 itself: the fusion would pass here anyway")
    LexicalFusions.shipped("smollm2-135m-instruct", "bf16").save(tmp_path / "bf16.json")
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows()[:1])
    (tmp_path / "damaged.jsonl").write_text("a line of something else\n")
    args = ["batch", str(source), "--engine", "ray", "-o", str(tmp_path / "damaged.jsonl"), "--fusion",
            str(tmp_path / "bf16.json")]
    refused_here = CliRunner().invoke(cli, args)
    assert refused_here.exit_code == 2 and "at bf16, and this detector runs" in refused_here.output, refused_here.output
    on_gpus = CliRunner().invoke(cli, [*args, "--gpus-per-actor", "1"])
    assert on_gpus.exit_code == 2 and "damaged.jsonl line 1 is not a batch record" in on_gpus.output, on_gpus.output
    assert not ray.is_initialized()


def test_a_ray_runtime_that_cannot_start_is_an_error_that_says_what_to_do(tmp_path, monkeypatch, hub_offline):
    """Ray's local runtime failing to start (on a loaded machine: 'The current node timed out during
    startup') was a bare traceback and exit 1; here it fails for real, its temporary folder being a file."""
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows()[:1])
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "not-a-folder"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    result = CliRunner().invoke(cli, ["batch", str(source), "--engine", "ray", "-o", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 2, result.output
    assert "Error: Ray's local runtime did not start (NotADirectoryError: " in result.output  # the cause
    assert "Rerun the command" in result.output and "--address" in result.output and "--engine local" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out.jsonl").exists()
    assert not ray.is_initialized()


def test_an_actor_the_local_runtime_cannot_place_is_refused():
    from groundsense.cli.batch import _check_fits

    _check_fits(Resources(cpus_per_actor=2), {"CPU": 2.0})
    for resources, message in [(Resources(gpus_per_actor=1), "--gpus-per-actor 1: this machine's Ray runtime has 0"),
                               (Resources(cpus_per_actor=4), "--cpus-per-actor 4: this machine's Ray runtime has 2")]:
        with pytest.raises(InputError, match=message):
            _check_fits(resources, {"CPU": 2.0})


@starts_ray
def test_sigterm_stops_a_ray_batch_that_keeps_what_it_wrote(tmp_path):
    """Ray's init takes SIGTERM over (it aborted the process, exit 134): the batch takes it back,
    so a stop writes what was scored, says so and exits 143, and a rerun resumes."""
    source = write_jsonl(tmp_path / "in.jsonl", synthetic_rows())
    out = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "groundsense.cli", "--threads", "1", "batch", str(source), "-o", str(out),
               "--engine", "ray", "--actors", "1", "--rows-per-batch", "1", "--no-progress"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not (out.exists() and out.read_text().count("\n")):
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    stderr = proc.communicate(timeout=120)[1]
    assert proc.returncode == 143, stderr
    assert f"Interrupted: the records written so far are in {out}" in stderr
    written = len(out.read_text().splitlines())
    assert 1 <= written < 8
