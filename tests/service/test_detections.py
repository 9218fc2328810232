"""`serve` with a cascade configured by its ``GROUNDSENSE_*`` variables (the judge verifier on the
real default scorer), and with a third party's detection handed to the app; a request checked once
on its way through (counted by wrapping the real validators)."""

import json

import pytest
from fastapi.testclient import TestClient
from helpers.fusions import fusion
from helpers.stream_http import ndjson

from groundsense.detection import Detection
from groundsense.inputs.files import load_example
from groundsense.scorer import Scorer
from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings
from groundsense.verification import make_detection

JUDGE = "judge:smollm2-135m-instruct"
ROW = load_example("passages-qa")


@pytest.fixture(scope="module")
def cascade_client(wait_ready):
    with pytest.MonkeyPatch.context() as env:
        for name, value in {"VERIFIER": JUDGE, "ESCALATE": "0.5", "VERIFIER_THRESHOLD": "0.4"}.items():
            env.setenv(f"GROUNDSENSE_{name}", value)
        settings = ServiceSettings.from_env(timeout_s=300)
    with TestClient(create_app(settings)) as client:
        wait_ready(client.get)
        yield client


def check_escalated(result: dict) -> None:
    cascade = result["cascade"]
    assert cascade["verifier"] == JUDGE and cascade["escalate"] == 0.5 and cascade["threshold"] == 0.4
    escalated = [s for s in result["sentences"] if s["verifier_score"] is not None]
    assert len(escalated) == cascade["n_escalated"] >= 1
    for sentence in escalated:
        assert 0.0 <= sentence["verifier_score"] <= 1.0 and sentence["flagged"] is (sentence["verifier_score"] >= 0.4)


def test_serve_runs_the_cascade_its_variables_configure(cascade_client):
    ready = cascade_client.get("/readyz").json()
    assert ready["detection"]["kind"] == "cascade" and ready["detection"]["verifier"] == JUDGE
    single = cascade_client.post("/v1/detect", json={**ROW, "id": "one"}).json()
    check_escalated(single)
    batch = cascade_client.post("/v1/detect/batch", json=[ROW, {**ROW, "options": {"mode": "two_pass"}}]).json()
    assert batch[0]["sentences"] == single["sentences"]  # each row escalates its own share
    check_escalated(batch[1])
    assert batch[1]["mode"] == "two_pass"


def test_the_served_stream_ends_with_the_cascade_result(cascade_client):
    words = ROW["answer"].split(" ")
    lines = [{"question": ROW["question"], "passages": ROW["passages"]}] + [
        {"delta": word + (" " if i < len(words) - 1 else "")} for i, word in enumerate(words)]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    response = cascade_client.post("/v1/detect/stream", content=body, headers={"content-type": "application/x-ndjson"})
    events = [json.loads(line) for line in response.text.splitlines()]
    assert events[-1]["event"] == "result"
    check_escalated(events[-1]["result"])
    sentences = [e["sentence"] for e in events[:-1] if e["event"] == "sentence"]
    assert [s["index"] for s in sentences] == list(range(len(events[-1]["result"]["sentences"])))
    in_flight = {v["index"] for v in events[-1]["result"]["in_flight"]}  # the detector's verdicts, none escalated
    assert in_flight and all(s["verifier_score"] is None for s in sentences if s["index"] in in_flight)


@pytest.fixture(scope="module")
def fused_client(tiny_scorer, wait_ready, tmp_path_factory):
    """A fused cascade configured by its variables: the judge on the tiny scorer, with a fusion
    file made for both (the app builds it from the variables' config around the tiny scorer)."""
    spec, path = f"judge:{tiny_scorer.name}", tmp_path_factory.mktemp("fusion") / "fusion.json"
    fusion(tiny_scorer, verifier=spec).save(path)
    with pytest.MonkeyPatch.context() as env:
        for name, value in {"VERIFIER": spec, "FUSE": "1", "FUSION": str(path)}.items():
            env.setenv(f"GROUNDSENSE_{name}", value)
        settings = ServiceSettings.from_env(timeout_s=300)
    scorer = Scorer.from_model(tiny_scorer.model, tiny_scorer.tokenizer, tiny_scorer.name)
    with TestClient(create_app(settings, detection=lambda: make_detection(settings.detection, scorer))) as client:
        wait_ready(client.get)
        yield client


def test_serve_returns_the_fused_score_of_every_sentence(fused_client):
    assert fused_client.get("/readyz").json()["detection"]["fused"] is True
    result = fused_client.post("/v1/detect", json=ROW).json()
    scored = [s for s in result["sentences"] if s["status"] == "scored"]
    assert scored and result["cascade"]["escalate"] == 1.0 and result["cascade"]["n_escalated"] == len(scored)
    for sentence in scored:
        assert 0.0 <= sentence["fused"] <= 1.0 and sentence["verifier_score"] is not None
        assert sentence["flagged"] is (sentence["fused"] >= result["cascade"]["threshold"])


def test_the_stream_route_refuses_a_fused_cascade(fused_client):
    body = ndjson({"question": ROW["question"], "passages": ROW["passages"]}, {"delta": ROW["answer"]})
    response = fused_client.post("/v1/detect/stream", content=body, headers={"content-type": "application/x-ndjson"})
    assert response.status_code == 422
    assert response.json()["error"].startswith("a fused cascade does not stream")


class Wrapped(Detection):
    """A third party's detection: what the interface requires, around the session's detector."""

    def __init__(self, inner):
        self.inner, self.config = inner, inner.config

    def detect_checked(self, row, stop=None):
        self.with_options(**row.options)  # inherited: refuses a k or mode other than its own
        return self.inner.detect_checked(row, stop)

    def describe(self, chunks=None):
        return {**self.inner.describe(chunks), "kind": "wrapped"}


def test_the_app_serves_any_object_that_implements_the_interface(detector, wait_ready):
    with TestClient(create_app(ServiceSettings(), detection=lambda: Wrapped(detector))) as client:
        wait_ready(client.get)
        assert client.get("/readyz").json()["detection"]["kind"] == "wrapped"
        result = client.post("/v1/detect", json=ROW).json()
        assert result == {"id": None, **detector.detect(**ROW).to_dict()}  # a record: its id first, null
        refused = client.post("/v1/detect", json={**ROW, "options": {"k": 3}})
        assert refused.status_code == 422 and "per-request k or mode" in refused.json()["error"]


def test_a_request_is_checked_once_on_its_way_through_the_service(detector, scorer, wait_ready, validator_calls):
    from groundsense.verification import Cascade
    from groundsense.verification.judge import JudgeVerifier

    spanned = {**ROW, "id": "b", "sentences": [[0, len(ROW["answer"])]]}
    cascade = Cascade(detector, JudgeVerifier(scorer), escalate=0.5)
    with TestClient(create_app(ServiceSettings(timeout_s=300), detection=lambda: cascade)) as client:
        wait_ready(client.get)
        validator_calls.clear()
        single = client.post("/v1/detect", json=spanned)
        assert single.status_code == 200 and single.json()["cascade"]["n_escalated"] == 1
        assert validator_calls == {"check_row": 1, "check_inputs": 1, "check_spans": 1}
        validator_calls.clear()
        batch = client.post("/v1/detect/batch", json=[{**ROW, "id": "a"}, spanned, {**ROW, "answer": ""}]).json()
        assert [r["id"] for r in batch] == ["a", "b", None] and "answer is empty" in batch[2]["error"]["message"]
        assert batch[1]["sentences"] == single.json()["sentences"]
        assert validator_calls == {"check_row": 3, "check_inputs": 3, "check_spans": 1}
