"""Prometheus metrics (/metrics) and the JSON request log, through the real app."""

import json
import logging

import httpx
import pytest
from fastapi.testclient import TestClient
from helpers.servers import ServeProcess
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from groundsense.inputs.files import load_example
from groundsense.service.app import create_app
from groundsense.service.metrics import Metrics
from groundsense.service.observe import answer_outcome
from groundsense.service.settings import ServiceSettings

SCORER = "smollm2-135m-instruct"
EXAMPLE = load_example("passages-qa")  # its last sentence is flagged (README)
SUPPORTED = {**EXAMPLE, "answer": EXAMPLE["answer"].rsplit(" The bridge", 1)[0]}


def metrics(client) -> dict:
    """The app's samples as {(name, frozenset of labels): value}, read by Prometheus' own parser."""
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def value(samples: dict, name: str, **labels) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls)


def log_lines(caplog) -> list[dict]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "groundsense.requests"]


@pytest.fixture
def request_log(caplog):
    caplog.set_level(logging.INFO, logger="groundsense.requests")
    return caplog


def test_open_streams_are_a_gauge():
    """``groundsense_open_streams`` reads the service's open streams when scraped (the soak,
    benchmarks/soak.py, checks it is back to 0 after its load)."""
    client = TestClient(create_app(ServiceSettings()))
    assert value(metrics(client), "groundsense_open_streams", scorer=SCORER) == 0
    held = []
    gauge = Metrics(SCORER, lambda: 0, lambda: len(held))
    held += [object(), object()]
    samples = {s.name: s.value for family in text_string_to_metric_families(generate_latest(gauge.registry).decode())
               for s in family.samples}
    assert samples["groundsense_open_streams"] == 2

def test_refusals_are_counted_and_logged_without_the_text(request_log):
    """No scorer needed: a client without its lifespan never starts the worker (503)."""
    client = TestClient(create_app(ServiceSettings(max_body_bytes=5_000, max_batch_items=2)))
    answer = "A secret sentence nobody may log."
    statuses = [
        client.post("/v1/detect", json={"answer": answer, "context": "   "}).status_code,
        client.post("/v1/detect", json={"answer": answer, "context": "x" * 6_000}).status_code,
        client.post("/v1/detect/batch", json=[SUPPORTED] * 3).status_code,
        client.post("/v1/detect", json={"answer": answer, "context": "Evidence."}).status_code,
        client.post("/alignscore_large", json={"evidence": "Evidence.", "claim": answer}).status_code,
    ]
    assert statuses == [422, 413, 413, 503, 503]
    samples = metrics(client)
    assert value(samples, "groundsense_requests_total", status="422", outcome="error", scorer=SCORER) == 1
    assert value(samples, "groundsense_requests_total", status="413", route="/v1/detect") == 1
    assert value(samples, "groundsense_requests_total", status="413", route="/v1/detect/batch") == 1
    assert value(samples, "groundsense_requests_total", status="503") == 2
    assert value(samples, "groundsense_latency_seconds_count") == 0  # nothing reached the queue
    assert value(samples, "groundsense_queue_depth", scorer=SCORER) == 0
    lines = log_lines(request_log)
    assert [line["status"] for line in lines] == statuses
    assert all(line["outcome"] == "error" and line["queue_s"] is None and "text" not in line for line in lines)
    assert "secret" not in request_log.text


def test_the_text_is_logged_only_when_the_operator_asks(request_log):
    client = TestClient(create_app(ServiceSettings(log_text=True)))
    response = client.post("/v1/detect", json={"question": "Q?", "answer": "Logged answer.", "context": "Evidence."})
    assert response.status_code == 503  # the scorer is not started; the text is logged all the same
    (line,) = log_lines(request_log)
    assert line["text"] == [{"question": "Q?", "answer": "Logged answer."}]
    assert line["request_id"] == response.headers["x-request-id"]


def test_an_unhandled_error_is_logged_with_the_id_the_500_gives(request_log, monkeypatch):
    def broken(body):
        raise RuntimeError("a bug")

    monkeypatch.setattr("groundsense.service.routes.detect.alignscore_row", broken)
    client = TestClient(create_app(ServiceSettings()), raise_server_exceptions=False)
    response = client.post("/alignscore_large", json={"evidence": "Evidence.", "claim": "Claim."})
    assert response.status_code == 500
    line = log_lines(request_log)[-1]
    assert (line["status"], line["outcome"], line["request_id"]) == (500, "error", response.json()["request_id"])
    assert value(metrics(client), "groundsense_requests_total", status="500", outcome="error") == 1


def test_each_app_has_its_own_registry():
    first, second = (TestClient(create_app(ServiceSettings())) for _ in range(2))
    first.post("/v1/detect", json={})
    assert value(metrics(first), "groundsense_requests_total") == 1
    assert value(metrics(second), "groundsense_requests_total") == 0


def test_settings_read_log_text_from_the_environment(monkeypatch):
    monkeypatch.setenv("GROUNDSENSE_LOG_TEXT", "false")
    assert ServiceSettings.from_env().log_text is False
    monkeypatch.setenv("GROUNDSENSE_LOG_TEXT", "1")
    assert ServiceSettings.from_env().log_text is True


def test_an_answer_is_supported_only_when_every_sentence_was_judged():
    assert answer_outcome({"answer": {"flagged": False}}) == "supported"
    assert answer_outcome({"answer": {"flagged": True}}) == "flagged"
    assert answer_outcome({"answer": {"flagged": None}}) == "unscored"
    assert answer_outcome({"id": 1, "error": {"type": "InputError", "message": "..."}}) == "error"


@pytest.fixture(scope="module")
def client(wait_ready):
    with TestClient(create_app(ServiceSettings())) as client:
        wait_ready(client.get)
        yield client


@pytest.mark.slow
def test_scored_requests_are_counted_timed_and_logged(client, request_log):
    before = metrics(client)
    supported = client.post("/v1/detect", json=SUPPORTED)
    flagged = client.post("/v1/detect", json=EXAMPLE)
    batch = client.post("/v1/detect/batch", json=[SUPPORTED, {**SUPPORTED, "answer": ""}])
    assert [r.status_code for r in (supported, flagged, batch)] == [200, 200, 200]
    assert supported.json()["answer"]["flagged"] is False and flagged.json()["answer"]["flagged"] is True

    after = metrics(client)

    def added(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert added("groundsense_requests_total", route="/v1/detect", status="200", outcome="supported") == 1
    assert added("groundsense_requests_total", route="/v1/detect", status="200", outcome="flagged") == 1
    assert added("groundsense_requests_total", route="/v1/detect/batch", status="200", outcome="error") == 1
    assert added("groundsense_sentences_total", status="scored", scorer=SCORER) == 2 + 3 + 2
    for phase in ("queue", "scoring"):
        assert added("groundsense_latency_seconds_count", phase=phase) == 3
    assert added("groundsense_latency_seconds_sum", phase="scoring") > 0

    lines = log_lines(request_log)
    assert [line["request_id"] for line in lines] == [r.headers["x-request-id"] for r in (supported, flagged, batch)]
    assert [line["outcome"] for line in lines] == ["supported", "flagged", "error"]
    assert lines[2]["answers"] == {"supported": 1, "error": 1} and lines[1]["sentences"] == {"scored": 3}
    for line in lines:
        assert line["scorer"] == SCORER and line["status"] == 200 and "text" not in line
        assert 0 < line["scoring_s"] <= line["duration_s"] and 0 <= line["queue_s"] <= line["duration_s"]
    assert "Gustave Eiffel" not in request_log.text


@pytest.mark.slow
def test_a_timed_out_request_counts_as_a_504_error(wait_ready, request_log):
    with TestClient(create_app(ServiceSettings(timeout_s=0.001))) as client:
        wait_ready(client.get)
        body = {"evidence": EXAMPLE["passages"], "claim": EXAMPLE["answer"]}
        assert client.post("/alignscore_large", json=body).status_code == 504
        samples = metrics(client)
    assert value(samples, "groundsense_requests_total", route="/alignscore_large", status="504", outcome="error") == 1
    assert value(samples, "groundsense_latency_seconds_count", phase="queue") == 1
    (line,) = log_lines(request_log)
    assert line["status"] == 504 and line["outcome"] == "error" and line["queue_s"] is not None


@pytest.mark.slow  # starts `groundsense serve` in a subprocess
@pytest.mark.system
def test_serve_writes_the_request_log_to_stdout(tmp_path, unloadable_scorer):
    """`groundsense serve`: one JSON line per scoring request on stdout, text only with --log-text;
    the server's own messages on stderr. The scorer named cannot load, so nothing is scored."""
    env = {"HF_HUB_OFFLINE": "1", "GROUNDSENSE_LOG_TEXT": "1"}
    with ServeProcess(tmp_path, "--scorer", unloadable_scorer, env=env) as server:
        server.wait_status("failed")
        response = httpx.post(server.url + "/v1/detect", json={"answer": "Logged answer.", "context": "Evidence."})
        assert response.status_code == 503
    out, err = server.stdout, server.stderr
    (line,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert line["request_id"] == response.headers["x-request-id"] and line["status"] == 503
    assert line["scorer"] == unloadable_scorer and line["text"][0]["answer"] == "Logged answer."
    assert "Application startup complete" in err.read_text()
