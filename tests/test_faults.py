"""Faults in `groundsense batch`: kills at several points (SIGKILL, a record cut mid-write),
a damaged output, rows that crashed whole runs before. A resumed run must end byte-identical
to an uninterrupted one, and two identical runs must be byte-identical."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from groundsense.errors import InputError
from groundsense.rows.batch import done_lines

PASSAGES = ["The Golden Gate Bridge opened to traffic on May 27, 1937.", "The bridge's main span is 4,200 feet long."]
CONTEXT = "The Eiffel Tower was finished in 1889. It is 330 metres tall. It stands in Paris."
ROWS = [
    {"id": "a", "passages": PASSAGES, "answer": "It opened in 1937. Its main span is 4,200 feet long."},
    {"id": "b\ud800", "passages": PASSAGES, "answer": "A lone surrogate in the id."},  # crashed the whole run once
    {"id": "c", "context": CONTEXT, "answer": "It was finished in 1889."},
    {"id": "d", "passages": PASSAGES, "answer": "Its main span\udfff is long."},  # and in the answer
    {"id": "e", "context": CONTEXT, "answer": "It is 330 metres tall. It is in Rome."},
    {"id": "f", "passages": PASSAGES, "answer": "It is painted blue."},
    {"id": "g", "context": CONTEXT, "answer": "It stands in Paris."},
    {"id": "h", "passages": PASSAGES, "answer": "It was built by Romans in 1937."},
]
N = len(ROWS)


def write_source(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="ascii")
    return source


def arguments(source, out):
    return ["--threads", "1", "batch", str(source), "--no-progress", "-o", str(out)]


def command(source, out):
    return [sys.executable, "-m", "groundsense.cli", *arguments(source, out)]


def lines(path):
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_corrupt_complete_line_stops_the_resume_naming_it(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "line": 1}\n{"id": "b", "li\n{"id": "c", "line": 3}\n')
    with pytest.raises(InputError, match=r"out.jsonl line 2 is not a batch record.*delete that line"):
        done_lines(out)
    assert out.read_text().count("\n") == 3  # untouched


def test_a_record_cut_off_mid_write_is_removed(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a", "line": 1}\n{"id": "b", "line": 2}\n{"id": "c", "li')
    assert done_lines(out) == {1: False, 2: False}
    assert out.read_text() == '{"id": "a", "line": 1}\n{"id": "b", "line": 2}\n'


@pytest.mark.parametrize("tail", [b'{"id": "c", "li', b'{"i', b"{"])
def test_a_cut_off_last_record_may_be_cut_anywhere(tmp_path, tail):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"id": "a", "line": 1}\n' + tail)
    assert done_lines(out) == {1: False} and out.read_bytes() == b'{"id": "a", "line": 1}\n'


@pytest.mark.parametrize("text", [json.dumps({"id": "only", "answer": "A.", "context": "B."}), '[{"answer": "A."}]'])
def test_a_file_that_is_no_batch_output_is_refused_not_truncated(tmp_path, text):
    """A one-row JSONL file written without its final newline is no cut-off record: it stays."""
    out = tmp_path / "precious.jsonl"
    out.write_text(text)
    with pytest.raises(InputError, match=r"precious.jsonl line 1 is not a batch record.*no batch output"):
        done_lines(out)
    assert out.read_text() == text


def test_a_row_cut_short_is_placed_where_it_ends_on_its_own_line(tmp_path):
    """The local batch parsed a line with its newline, so a row cut short read "line 2 is not valid JSON:
    Expecting value at line 2, column 1", a line that is not there (and not the Ray engine's record,
    whose reader drops the newline)."""
    from groundsense.rows.batch import read_rows

    cut = '{"id": "x", "answer": '
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROWS[0]) + "\n" + cut + "\n" + json.dumps(ROWS[2]) + "\r\n")
    rows = dict(read_rows(source))
    assert str(rows[2]) == f"line 2 is not valid JSON: Expecting value at line 1, column {len(cut) + 1}"
    assert rows[1]["id"] == "a" and rows[3]["id"] == "c"


def test_a_pipe_as_the_output_is_written_not_read_for_a_resume():
    """`-o /dev/stdout` piped, or a named pipe: reading it for the lines already written waited for
    ever on a pipe whose writer is the command itself. Should the read block, the pipe gets a line
    that is no record after 5 s and its end closes, which ends the read with that line's error."""
    import threading
    from pathlib import Path

    read, write = os.pipe()
    watchdog = threading.Timer(5, lambda: (os.write(write, b"no record\n"), os.close(write)))
    watchdog.start()
    try:
        assert done_lines(Path(f"/dev/fd/{write}")) == {}
    finally:
        watchdog.cancel()
        os.close(read)
    os.close(write)


def test_a_finished_run_or_a_damaged_output_answers_before_the_detection_is_made(tmp_path):
    from groundsense.rows.batch import run_batch

    def unmade():
        raise AssertionError("the detection was made with nothing to score")

    source, out = write_source(tmp_path), tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps({"id": None, "line": n}) + "\n" for n in range(1, N + 1)))
    summary = run_batch(unmade, source, out, progress=False)
    assert (summary.written, summary.skipped) == (0, N)
    out.write_text('{"id": "a", "line": 1}\n{not a record\n')
    with pytest.raises(InputError, match="line 2 is not a batch record"):
        run_batch(unmade, source, out, progress=False)
    (tmp_path / "empty.jsonl").write_text("")
    assert run_batch(unmade, tmp_path / "empty.jsonl", tmp_path / "none.jsonl", progress=False).written == 0
    assert (tmp_path / "none.jsonl").read_text() == ""  # the output exists, empty


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """One uninterrupted run, in a process of its own."""
    folder = tmp_path_factory.mktemp("whole")
    source, out = write_source(folder), folder / "whole.jsonl"
    subprocess.run(command(source, out), check=True, capture_output=True, timeout=600)
    return source, out


@pytest.mark.slow
@pytest.mark.parametrize("cli_scorer", ["real"], indirect=True)
def test_two_identical_runs_are_byte_identical_and_bad_rows_get_records(tmp_path, uninterrupted, invoke_cli):
    """The second run in this process, on the same real scorer and one thread."""
    source, first = uninterrupted
    second = tmp_path / "second.jsonl"
    result = invoke_cli(arguments(source, second))
    assert result.exit_code == 0, result.output
    assert first.read_bytes() == second.read_bytes()
    records = {r["line"]: r for r in map(json.loads, first.read_text(encoding="utf-8").splitlines())}
    assert sorted(records) == list(range(1, N + 1))
    assert records[2]["id"] is None and "'id' holds a lone UTF-16 surrogate" in records[2]["error"]["message"]
    assert records[4]["id"] == "d" and "'answer' holds a lone UTF-16 surrogate" in records[4]["error"]["message"]


@pytest.mark.slow
@pytest.mark.system  # a batch process killed
@pytest.mark.parametrize("cli_scorer", ["real"], indirect=True)
@pytest.mark.parametrize("after, cut", [(1, False), (N - 1, False), (3, True)],
                         ids=["after 1 record", "before the last", "mid-write"])
def test_sigkill_then_resume_is_byte_identical(tmp_path, uninterrupted, invoke_cli, after, cut):
    """Killed in a process of its own; resumed in this one, on the same real scorer and one thread."""
    source, whole = uninterrupted
    out = tmp_path / "resumed.jsonl"
    proc = subprocess.Popen(command(source, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while proc.poll() is None and lines(out) < after and time.time() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if cut:  # the kill fell inside a write: the last record is half there
        data = out.read_bytes()
        last = data.rstrip(b"\n").rfind(b"\n") + 1
        out.write_bytes(data[: last + (len(data) - last) // 2])
    assert out.read_bytes() != whole.read_bytes()
    resumed = invoke_cli(arguments(source, out))
    assert resumed.exit_code == 0, resumed.output
    assert out.read_bytes() == whole.read_bytes()


@pytest.mark.slow
def test_a_corrupt_output_line_exits_2_and_names_it(tmp_path, uninterrupted):
    source, whole = uninterrupted
    out = tmp_path / "out.jsonl"
    kept = whole.read_text(encoding="utf-8").splitlines()[:3]
    out.write_text("\n".join(kept[:2] + ["{not a record"]) + "\n", encoding="utf-8")
    before = out.read_bytes()
    result = subprocess.run(command(source, out), capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "line 3 is not a batch record" in result.stderr
    assert out.read_bytes() == before
