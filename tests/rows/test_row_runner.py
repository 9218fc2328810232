"""The row runner: one request row to one record, the error record built in one place, and a
request checked once on its way through `batch`, the service, `detect` and a cascade (counted by
wrapping the real validators: ``validator_calls`` in conftest.py; the detection itself is the real
default scorer's; tests/service/test_detections.py counts through the service)."""

import json
import logging

import pytest
from click.testing import CliRunner

from groundsense.config import DetectorConfig
from groundsense.detection import Detection
from groundsense.errors import Cancelled, InputError, VerifierError
from groundsense.inputs import validate
from groundsense.inputs.files import load_example
from groundsense.rows.batch import run_batch
from groundsense.rows.runner import error_record, run_row
from groundsense.verification import Cascade
from groundsense.verification.lexical import LexicalOverlapVerifier

ROW = load_example("passages-qa")


class Failing(Detection):
    """A detection that raises ``error``: to see what a failed row's record shows."""

    def __init__(self, error: Exception):
        self.config, self.error = DetectorConfig(), error

    def detect_checked(self, row, stop=None):
        raise self.error

    def describe(self, chunks=None):
        return {"kind": "failing", "scorer": None}


def test_an_input_error_shows_its_message_and_the_row_id():
    assert run_row(Failing(RuntimeError()), {"id": 3, **ROW, "answer": " "}) == {
        "id": 3, "error": {"type": "InputError", "message": validate.EMPTY_ANSWER}}
    record = run_row(Failing(RuntimeError()), {"id": 3, **ROW, "answr": "x"}, request_id="r1")
    assert record["id"] == 3 and "unknown field 'answr'" in record["error"]["message"]
    assert run_row(Failing(RuntimeError()), [1, 2])["id"] is None  # not an object: no id to echo


def test_an_internal_error_is_shown_in_a_batch_and_hidden_behind_the_request_id_in_a_service(caplog):
    failing = Failing(RuntimeError("secret detail"))
    assert run_row(failing, {"id": "a", **ROW}) == {
        "id": "a", "error": {"type": "RuntimeError", "message": "secret detail"}}
    with caplog.at_level(logging.ERROR):
        hidden = run_row(failing, {"id": "a", **ROW}, request_id="r1")
    assert hidden["error"]["type"] == "InternalError" and hidden["error"]["request_id"] == "r1"
    assert "secret" not in json.dumps(hidden) and "r1" in hidden["error"]["message"]
    assert "r1" in caplog.text and "secret detail" in caplog.text  # the log has the details
    unreachable = VerifierError("the judge's server at http://x refused the request")  # one the caller can act on
    assert run_row(Failing(unreachable), {**ROW}, request_id="r1")["error"] == {
        "type": "VerifierError", "message": str(unreachable)}
    assert error_record(None, InputError("bad")) == {"id": None, "error": {"type": "InputError", "message": "bad"}}


def test_a_stopped_run_raises_instead_of_writing_a_record():
    with pytest.raises(Cancelled):
        run_row(Failing(RuntimeError()), ROW, stop=lambda: True)
    with pytest.raises(Cancelled):
        run_row(Failing(Cancelled("timed out")), ROW)


def rows() -> list[dict]:
    """Two requests, one with its own sentence spans."""
    first = ROW["answer"].index(".") + 1
    return [{"id": "a", **ROW}, {"id": "b", **ROW, "sentences": [[0, first], [first + 1, len(ROW["answer"])]]}]


def test_batch_checks_each_row_once_through_a_cascade(detector, tmp_path, validator_calls):
    source, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows()))
    cascade = Cascade(detector, LexicalOverlapVerifier(), escalate=1.0)
    summary = run_batch(cascade, source, out, progress=False)
    assert (summary.written, summary.errors) == (2, 0)
    assert validator_calls == {"check_row": 2, "check_inputs": 2, "check_spans": 1}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["cascade"]["n_escalated"] == len(r["sentences"]) for r in records)
    validator_calls.clear()
    assert len(cascade.detect_many(rows(), progress=False)) == 2
    assert validator_calls == {"check_row": 2, "check_inputs": 2, "check_spans": 1}


def test_detect_checks_the_request_once(scorer, monkeypatch, validator_calls):
    from groundsense.cli import cli, common
    from groundsense.verification import make_detection

    monkeypatch.setattr(common, "make_detection", lambda config, **given: make_detection(config, scorer, **given))
    result = CliRunner().invoke(cli, ["detect", "--json", "-k", "5"], input=json.dumps(rows()[1]))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["id"] == "b"
    assert validator_calls == {"check_row": 1, "check_inputs": 1, "check_spans": 1}


class Counting(Detection):
    """A detection that counts what it scores (its results: the real default scorer's)."""

    def __init__(self, detector):
        self.detector, self.scored = detector, 0

    def detect_checked(self, row, stop=None):
        self.scored += 1
        return self.detector.detect_checked(row, stop)

    def describe(self, chunks=None):
        return {"kind": "counting", "scorer": None}


def test_detect_many_names_a_bad_row_before_scoring_any(detector):
    bad = [*rows(), {"id": "c", **ROW, "answer": " "}]
    for detection in (counting := Counting(detector)), Cascade(counting, LexicalOverlapVerifier()):
        with pytest.raises(InputError, match=f"row 2 \\(id 'c'\\): {validate.EMPTY_ANSWER}"):
            detection.detect_many(bad, progress=False)
    assert counting.scored == 0
