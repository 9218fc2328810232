"""Every case of the bad-input corpus through every entry point: `groundsense detect` (plain
and --json), `groundsense batch`, the Python API, `POST /v1/detect` and `/v1/detect/batch`.

Refused cases need no model, so they run in the fast tier (the HTTP app's scorer never
starts loading: input is checked before the scorer is asked). Accepted cases go through every
entry point in the fast tier too, on the tiny scorer under the default scorer's name (the real
tokenizer, which makes every warning, cut and span checked here, and the shipped fusion, over
scores that mean nothing), each case through every entry point in turn on one detector, so that
its evidence is encoded once. Then each goes through `detect --json` once more on the real
default scorer (``slow``): what the real model's numbers make of hostile text is checked too,
without scoring the same answer six times on it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from helpers.corpus_cases import CASES, Accepted, Case, Error

from groundsense import cli as cli_module
from groundsense.cli import common as cli_common
from groundsense.errors import InputError
from groundsense.inputs.files import decode, parse_json
from groundsense.inputs.text import join_passages
from groundsense.inputs.validate import check_row
from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings

REFUSED = [c for c in CASES if isinstance(c.outcome, Error)]
ROOT = Path(__file__).resolve().parents[2]
ACCEPTED = [c for c in CASES if isinstance(c.outcome, Accepted)]
TERMINAL_UNSAFE = ("\x1b", "\x07", "\x08", "\x00", "\u202e")


def ids(cases: list[Case]) -> list[str]:
    return [c.name for c in cases]


def test_the_corpus_is_large_and_covers_every_outcome():
    assert len(CASES) >= 50 and len(set(ids(CASES))) == len(CASES)
    outcomes = [c.outcome for c in ACCEPTED]
    assert any(o.unscored for o in outcomes) and any(o.warned for o in outcomes)


def test_the_docs_count_the_corpus_as_it_is():
    reliability, cli = ((ROOT / "docs" / page).read_text() for page in ("reliability.md", "cli.md"))
    counts = f"holds {len(CASES)} requests, each with its expected outcome: {len(CASES) - len(ACCEPTED)} that"
    assert counts in " ".join(reliability.split()) and f"the {len(CASES)}-case" in " ".join(cli.split())


def parsed(case: Case) -> tuple[bool, object]:
    """``(True, value)`` when the body is JSON the core reads, else ``(False, None)``."""
    try:
        return True, parse_json(decode(case.body, "body"), "body")
    except InputError:
        return False, None


def batch_body(case: Case) -> bytes:
    """The case as a one-item /v1/detect/batch body (its raw bytes when it is not JSON)."""
    ok, value = parsed(case)
    return json.dumps([value], ensure_ascii=True).encode() if ok else case.body


def detect(*args: str, body: bytes):
    return CliRunner().invoke(cli_module.cli, ["detect", *args], input=body)


def assert_refused_by_cli(result, case: Case) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exc_info)
    assert case.outcome.of_the_cli() in result.output
    assert "Traceback" not in result.output and '"sentences"' not in result.output


def assert_result(case: Case, data: dict) -> None:
    """An accepted result: offsets round-trip, unscored sentences are never judged."""
    outcome = case.outcome
    row = case.row or {}
    answer = row["answer"]
    sentences = data["sentences"]
    assert sentences and data["answer"]["n_sentences"] == len(sentences)
    for s in sentences:
        assert answer[s["start"] : s["end"]] == s["text"]
        assert s["status"] in ("scored", "unscored")
        if s["status"] == "unscored":
            assert s["flagged"] is None and s["score"] is None and s["reason"]
        else:
            assert s["flagged"] in (True, False, None) and s["score"] is not None
    if row.get("passages") is not None:
        context = join_passages(row["passages"])[0]
    else:
        context = row["context"]
    for s in sentences:
        if s["support"]:
            assert context[s["support"]["start"] : s["support"]["end"]] == s["support"]["text"]
    unscored = any(s["status"] == "unscored" for s in sentences)
    assert unscored == outcome.unscored
    if unscored:
        assert data["answer"]["flagged"] is not False  # never "all supported" with sentences unjudged
    assert bool(data["warnings"]) == outcome.warned, data["warnings"]
    if outcome.n_sentences is not None:
        assert len(sentences) == outcome.n_sentences
    if outcome.texts is not None:
        assert tuple(s["text"] for s in sentences) == outcome.texts
    if (row.get("options") or {}).get("mode"):
        assert data["mode"] == row["options"]["mode"]


# -- refused: the fast tier, no model -------------------------------------------------------


@pytest.mark.parametrize("case", REFUSED, ids=ids(REFUSED))
def test_cli_detect_refuses(case):
    assert_refused_by_cli(detect(body=case.body), case)
    assert_refused_by_cli(detect("--json", body=case.body), case)


@pytest.mark.parametrize("case", REFUSED, ids=ids(REFUSED))
def test_core_check_refuses(case):
    ok, value = parsed(case)
    if not ok:
        with pytest.raises(InputError, match="JSON|UTF"):
            parse_json(decode(case.body, "body"), "body")
        return
    with pytest.raises(InputError) as refused:
        check_row(value)
    assert case.outcome.message in str(refused.value)


@pytest.fixture(scope="module")
def refusing_app():
    """The real app without its lifespan, so the scorer never loads: every answer here
    comes from the input checks, which run before a request waits for the scorer."""
    return TestClient(create_app(ServiceSettings()))


@pytest.mark.parametrize("case", REFUSED, ids=ids(REFUSED))
def test_http_refuses(refusing_app, case):
    response = refusing_app.post("/v1/detect", content=case.body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert case.outcome.message in response.json()["error"]
    if not case.in_batch:
        return
    response = refusing_app.post("/v1/detect/batch", content=batch_body(case),
                                 headers={"Content-Type": "application/json"})
    ok, _ = parsed(case)
    if ok:  # a bad item gets its own error record
        assert response.status_code == 200, response.text
        (record,) = response.json()
        assert case.outcome.message in record["error"]["message"]
    else:  # a body that is not JSON refuses the whole batch
        assert response.status_code == 422 and case.outcome.message in response.json()["error"]


# -- accepted: every entry point on the tiny scorer, then the real one -------------------------


@pytest.fixture(scope="module")
def plumbing_detector(tiny_scorer):
    """The tiny scorer as the default scorer: its detections take the shipped fusion's path."""
    from groundsense import Detector
    from groundsense.scorer import Scorer

    return Detector(Scorer.from_model(tiny_scorer.model, tiny_scorer.tokenizer, "smollm2-135m-instruct"), k=5)


def cli_detects_on(detector, monkeypatch):
    """The CLI builds its detection through ``common.make_detection``; here it gets ``detector``
    (with the requested K and mode) instead of loading the scorer per case."""
    monkeypatch.setattr(cli_common, "make_detection",
                        lambda config, **given: detector.with_options(k=config.k, mode=config.mode))


@pytest.fixture(scope="module")
def app(plumbing_detector):
    """The real app, serving the plumbing detector, so that one case's evidence, encoded by the
    first entry point, is kept for the others."""
    with TestClient(create_app(ServiceSettings(), detection=lambda: plumbing_detector)) as client:
        deadline = time.time() + 300
        while client.get("/readyz").status_code != 200:
            assert time.time() < deadline, "the detection did not load"
            time.sleep(0.2)
        yield client


def cli_accepts(case: Case) -> None:
    result = detect("--json", body=case.body)
    assert result.exit_code == 0, result.output
    assert_result(case, json.loads(result.output))
    plain = detect(body=case.body)
    assert plain.exit_code == 0, plain.output
    assert "answer:" in plain.output and "Traceback" not in plain.output
    assert not any(ch in plain.output for ch in TERMINAL_UNSAFE)  # escaped, never replayed
    assert ("warning:" in plain.output) == case.outcome.warned


def batch_accepts(case: Case, folder) -> None:
    """The case in a file of its own between two refused lines: its record on its line."""
    source, out = folder / "in.jsonl", folder / "out.jsonl"
    source.write_bytes(b"{broken\n" + case.body + b"\n[1, 2]\n")
    result = CliRunner().invoke(cli_module.cli, ["batch", str(source), "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert "error" in records[0] and "error" in records[2] and "error" not in records[1], records
    assert_result(case, records[1])


def python_accepts(case: Case, row: dict, detector) -> None:
    (outcome,) = detector.iter_detect([row], progress=False)
    assert outcome.error is None, outcome.error
    assert_result(case, outcome.result.to_dict())


def http_accepts(case: Case, app) -> None:
    response = app.post("/v1/detect", content=case.body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    assert_result(case, response.json())
    # In a batch next to a bad item, the good one keeps its result.
    bad = {**case.row, "answer": "\ud800"}
    response = app.post("/v1/detect/batch", content=json.dumps([case.row, bad]).encode(),
                        headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    good, refused = response.json()
    assert_result(case, good)
    assert "lone UTF-16 surrogate" in refused["error"]["message"]


@pytest.mark.parametrize("case", ACCEPTED, ids=ids(ACCEPTED))
def test_every_entry_point_accepts(plumbing_detector, app, case, tmp_path, monkeypatch):
    """`detect` (--json and plain), `batch`, the Python API and both HTTP routes, one after
    another on one detector (so the case's evidence is encoded once)."""
    cli_detects_on(plumbing_detector, monkeypatch)
    cli_accepts(case)
    if case.in_batch:
        batch_accepts(case, tmp_path)
    ok, row = parsed(case)
    if ok:
        python_accepts(case, row, plumbing_detector)
    http_accepts(case, app)


@pytest.mark.parametrize("case", ACCEPTED, ids=ids(ACCEPTED))
def test_the_real_scorer_accepts(detector, case, monkeypatch):
    cli_detects_on(detector, monkeypatch)
    result = detect("--json", body=case.body)
    assert result.exit_code == 0, result.output
    assert_result(case, json.loads(result.output))


@pytest.mark.slow
@pytest.mark.parametrize("case", REFUSED, ids=ids(REFUSED))
def test_python_api_refuses(detector, case):
    ok, value = parsed(case)
    if not ok:
        return  # not JSON: nothing to hand to Python
    (outcome,) = detector.iter_detect([value], progress=False)
    assert isinstance(outcome.error, InputError) and case.outcome.message in str(outcome.error)


@pytest.mark.slow
def test_batch_gives_every_refused_case_its_error_record_on_its_line(detector, tmp_path, monkeypatch):
    """Every refused case in one file, after an accepted row and before another: each line its record."""
    cli_detects_on(detector, monkeypatch)
    plain = next(c for c in ACCEPTED if c.name == "a plain request")
    cases = [plain, *(c for c in REFUSED if c.in_batch), plain]
    assert not any(b"\n" in c.body for c in cases)
    source, out = tmp_path / "corpus.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b"\n".join(c.body for c in cases) + b"\n")
    result = CliRunner().invoke(cli_module.cli, ["batch", str(source), "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    records = {r["line"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert sorted(records) == list(range(1, len(cases) + 1))
    for number, case in enumerate(cases, start=1):
        record = records[number]
        if isinstance(case.outcome, Error):
            assert case.outcome.message in record["error"]["message"], (case.name, record)
        else:
            assert "error" not in record, (case.name, record)
            assert_result(case, record)
