"""`groundsense stream` end to end: a real process reading an answer that arrives in pieces."""

import json
import os
import signal
import subprocess
import sys

import pytest

from groundsense.inputs.files import load_example

pytestmark = pytest.mark.slow
EXAMPLE = load_example("passages-qa")
CLI = [sys.executable, "-m", "groundsense.cli"]


def test_stream_prints_each_verdict_before_the_answer_ends(tmp_path):
    """The first sentence's verdict is printed while the writer still holds the rest back."""
    files = []
    for i, passage in enumerate(EXAMPLE["passages"]):
        (tmp_path / f"p{i}.txt").write_text(passage)
        files += ["--passage-file", str(tmp_path / f"p{i}.txt")]
    process = subprocess.Popen([*CLI, "stream", "--json", "-q", EXAMPLE["question"], *files],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    answer = EXAMPLE["answer"]
    cut = answer.index(" Its main span") + len(" Its")
    process.stdin.write(answer[:cut].encode())
    process.stdin.flush()
    first = json.loads(process.stdout.readline())  # blocks until the verdict is printed
    assert first["event"] == "sentence" and first["sentence"]["text"] == answer[: answer.index(" Its")]
    assert process.poll() is None  # still reading
    process.stdin.write(answer[cut:].encode())
    process.stdin.close()
    events = [first] + [json.loads(line) for line in process.stdout]
    assert process.wait(timeout=300) == 0
    assert [e["event"] for e in events] == ["sentence"] * 3 + ["result"]
    assert events[2]["sentence"]["flagged"] is True and events[-1]["result"]["answer"]["flagged"] is True
    assert [e["sentence"] for e in events[:3]] == events[-1]["result"]["sentences"]


@pytest.mark.system  # stops the command with a signal
def test_ctrl_c_stops_a_stream_with_130_and_no_result(tmp_path):
    """A user's interrupt is 130, as for every command, never 1: `--fail-on-flag` gives 1 to an
    answer not cleared, and a guardrail script tells the two apart."""
    process = subprocess.Popen([*CLI, "stream", "--json", "--fail-on-flag", "--context", EXAMPLE["passages"][0]],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "OMP_NUM_THREADS": "1"},
                               # as from a shell: an xdist worker ignores SIGINT, which its children inherit
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    process.stdin.write(b"It opened in 1937. It is ")
    process.stdin.flush()
    first = json.loads(process.stdout.readline())  # the scorer is loaded and the stream reading
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)  # with the answer still open: only the interrupt ends it
    stdout, stderr = process.communicate()
    assert process.returncode == 130 and b"Interrupted." in stderr, (process.returncode, stdout, stderr)
    assert first["event"] == "sentence" and b'"result"' not in stdout


def test_stream_replays_an_example_and_fails_on_flag():
    done = subprocess.run([*CLI, "stream", "--example", "passages-qa", "--delay", "0", "--fail-on-flag"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "✗ UNSUPPORTED" in done.stdout and "answer: flagged (a sentence is flagged; length-aware" in done.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--context", "   "], "Some answer.", "evidence is empty"),
        (["--context", "The bridge opened in 1937."], "  \u200b ", "standard input held no answer text"),
        (["--context", "The bridge opened in 1937."], "", "standard input held no answer text"),
        (["--context", "The bridge opened in 1937."], b"\xff\xfe bad", "not UTF-8"),
    ],
)
def test_stream_refuses_bad_input_with_exit_2(args, stdin, message):
    data = stdin if isinstance(stdin, bytes) else stdin.encode()
    done = subprocess.run([*CLI, "stream", *args], input=data, capture_output=True, timeout=300)
    assert done.returncode == 2 and message in done.stderr.decode(), done.stderr.decode()
    assert b"Traceback" not in done.stderr
