"""The JSON API against the real default scorer (``slow``: the client waits for it to load);
the requests it refuses, and what needs no scorer, in the fast tier on the app without its
lifespan (the scorer never loads)."""

import socket
import time

import pytest
from fastapi.testclient import TestClient
from helpers.cli import run

from groundsense.config import DetectorConfig
from groundsense.errors import InputError, ScorerUnavailable
from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings

REQUEST = {
    "question": "How long is the main span?",
    "passages": ["The bridge opened to traffic on May 27, 1937.", "The bridge's main span is 4,200 feet long."],
    "answer": "Its main span is 4,200 feet long. It was painted gold in 1990.",
}
SETTINGS = ServiceSettings(max_body_bytes=20_000, max_batch_items=3)


@pytest.fixture(scope="module")
def client(wait_ready):
    with TestClient(create_app(SETTINGS)) as client:
        wait_ready(client.get)
        yield client


@pytest.fixture(scope="module")
def unloaded():
    """The same app without its lifespan: input checks and routing answer, nothing is scored."""
    return TestClient(create_app(SETTINGS))


def test_probes(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["scorer"] == "smollm2-135m-instruct"
    assert "/v1/detect" in client.get("/openapi.json").json()["paths"]


def test_detect_returns_the_cli_contract(client):
    response = client.post("/v1/detect", json={**REQUEST, "id": "q1"})
    assert response.status_code == 200
    data = response.json()
    assert data["id"] == "q1" and data["scorer"] == "smollm2-135m-instruct"
    assert {"sentences", "answer", "truncated"} <= data.keys()
    first = data["sentences"][0]
    assert REQUEST["answer"][first["start"] : first["end"]] == first["text"]
    assert first["support"]["text"] == REQUEST["passages"][1]
    assert len(first["drops"]) == 2


def test_options_choose_the_mode(client):
    data = client.post("/v1/detect", json={**REQUEST, "options": {"mode": "two_pass"}}).json()
    assert data["mode"] == "two_pass" and data["score_rule"] == "fused"  # two-pass mode's fusion, of the gap
    assert data["detector"] == "fused"  # the score rule's name before, kept for readers of stored results
    assert all(set(s["ranks"]) == {"gap", "overlap_chunk", "stem_novel", "bigram_novel"} for s in data["sentences"])
    assert all(s["drops"] == [] for s in data["sentences"])


def test_batch_keeps_order_and_reports_bad_items(client):
    items = [REQUEST, {**REQUEST, "answer": "   "}, {**REQUEST, "answer": "The bridge opened in 1937."}]
    response = client.post("/v1/detect/batch", json=items)
    assert response.status_code == 200
    first, bad, third = response.json()
    assert "sentences" in first and "sentences" in third
    assert "answer is empty" in bad["error"]["message"]


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({**REQUEST, "answer": " "}, 422, "answer is empty"),
        ({**REQUEST, "passages": None, "context": "  "}, 422, "evidence is empty"),
        ({"question": "q", "context": "c"}, 422, "no 'answer' field"),
        ({**REQUEST, "answr": "typo"}, 422, "unknown field 'answr'"),
        ({**REQUEST, "options": {"k": 0}}, 422, "options.k"),
        ({**REQUEST, "context": "x" * 30_000, "passages": None}, 413, "byte limit"),
    ],
)
def test_bad_requests_get_a_message_a_person_can_act_on(unloaded, body, status, message):
    response = unloaded.post("/v1/detect", json=body)
    assert response.status_code == status
    assert message in response.json()["error"]


def test_batch_limits(unloaded):
    assert unloaded.post("/v1/detect/batch", json=[REQUEST] * 4).status_code == 413
    assert unloaded.post("/v1/detect/batch", json=[]).status_code == 422


def test_malformed_json_is_a_422(unloaded):
    response = unloaded.post("/v1/detect", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 422 and "not valid JSON" in response.json()["error"]


def test_examples_are_served(unloaded):
    names = unloaded.get("/v1/examples").json()
    assert "passages-qa" in names
    assert "answer" in unloaded.get("/v1/examples/passages-qa").json()
    assert unloaded.get("/v1/examples/nope").status_code == 404


def test_a_scorer_whose_weights_are_not_here_is_refused_before_the_app_is_made(absent_scorer):
    with pytest.raises(ScorerUnavailable, match="are not installed") as refused:
        create_app(ServiceSettings(detection=DetectorConfig(scorer=absent_scorer.name)))
    assert absent_scorer.pip_command in str(refused.value)


def test_a_scorer_that_cannot_load_fails_closed(unloadable_scorer):
    settings = ServiceSettings(detection=DetectorConfig(scorer=unloadable_scorer))
    with TestClient(create_app(settings)) as client:
        for _ in range(600):
            if client.get("/readyz").json()["status"] != "loading":
                break
            time.sleep(0.1)
        assert client.get("/readyz").status_code == 503
        response = client.post("/v1/detect", json=REQUEST)
        assert response.status_code == 503
        assert f"the scorer failed to load: cannot load scorer {unloadable_scorer!r}" in response.json()["error"]


def test_a_request_over_the_time_limit_gets_504(wait_ready):
    with TestClient(create_app(ServiceSettings(timeout_s=0.001))) as client:
        wait_ready(client.get)
        response = client.post("/v1/detect", json=REQUEST)
        assert response.status_code == 504
        assert "longer than" in response.json()["error"] and int(response.headers["Retry-After"]) >= 1


def test_settings_come_from_flags_then_environment(monkeypatch):
    monkeypatch.setenv("GROUNDSENSE_PORT", "9001")
    monkeypatch.setenv("GROUNDSENSE_K", "3")
    monkeypatch.setenv("GROUNDSENSE_TIMEOUT_S", "2.5")
    monkeypatch.setenv("GROUNDSENSE_TARGET_RECALL", "0.8")  # None defaults: typed by their annotations
    monkeypatch.setenv("GROUNDSENSE_CALIBRATION", "my-calibration.json")
    monkeypatch.setenv("GROUNDSENSE_LOG_TEXT", "yes")
    settings = ServiceSettings.from_env(k=7, scorer=None)
    assert (settings.port, settings.detection.k, settings.timeout_s, settings.host) == (9001, 7, 2.5, "127.0.0.1")
    assert (settings.detection.target_recall, settings.detection.calibration, settings.log_text) == (
        0.8, "my-calibration.json", True)
    monkeypatch.setenv("GROUNDSENSE_TARGET_RECALL", "most")
    with pytest.raises(InputError, match="GROUNDSENSE_TARGET_RECALL='most': expected float"):
        ServiceSettings.from_env()
    monkeypatch.delenv("GROUNDSENSE_TARGET_RECALL")
    monkeypatch.setenv("GROUNDSENSE_LOG_TEXT", "off")
    assert ServiceSettings.from_env().log_text is False
    monkeypatch.setenv("GROUNDSENSE_FUSE", "y")  # a typo is refused, not taken as off
    with pytest.raises(InputError, match=r"GROUNDSENSE_FUSE='y': expected 1 or 0 \(true or false"):
        ServiceSettings.from_env()


@pytest.mark.parametrize("setting, value, message", [
    ("GROUNDSENSE_TIMEOUT_S", "0", "timeout_s .* must be above 0, not 0.0"),
    ("GROUNDSENSE_MAX_BODY_BYTES", "-1", "max_body_bytes .* must be at least 1, not -1"),
    ("GROUNDSENSE_PORT", "99999", "port .* must be 0 to 65535, not 99999"),
])
def test_a_setting_no_request_could_pass_is_refused_before_the_server_starts(monkeypatch, setting, value, message):
    monkeypatch.setenv(setting, value)
    with pytest.raises(InputError, match=message):
        ServiceSettings.from_env()
    option = {"GROUNDSENSE_TIMEOUT_S": "--timeout", "GROUNDSENSE_MAX_BODY_BYTES": "--max-body-bytes",
              "GROUNDSENSE_PORT": "--port"}[setting]
    monkeypatch.delenv(setting)
    refused = run("serve", option, value)
    assert refused.exit_code == 2 and option in refused.output and "serving on" not in refused.output


def test_a_port_in_use_is_refused_before_the_scorer_loads():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        refused = run("serve", "--port", str(taken.getsockname()[1]))
    assert refused.exit_code == 2 and "cannot listen on 127.0.0.1:" in refused.output
    assert "choose another --port" in refused.output and "serving on" not in refused.output


def test_an_internal_error_is_a_500_with_a_request_id_and_no_details(client, monkeypatch, caplog):
    from groundsense.pipeline.detector import Detector

    def broken(self, row, stop=None):
        raise RuntimeError("secret detail from /home/someone/notes.txt")

    monkeypatch.setattr(Detector, "detect_checked", broken)
    response = client.post("/v1/detect", json=REQUEST)
    assert response.status_code == 500
    body = response.json()
    assert body["error"].startswith("internal error") and body["request_id"] in body["error"]
    assert "secret" not in response.text and "RuntimeError" not in response.text
    assert body["request_id"] in caplog.text and "secret detail" in caplog.text  # the log has the details
    batch = client.post("/v1/detect/batch", json=[REQUEST, {**REQUEST, "answer": ""}])
    assert batch.status_code == 200
    failed, refused = batch.json()
    assert failed["error"]["type"] == "InternalError" and "secret" not in failed["error"]["message"]
    assert "answer is empty" in refused["error"]["message"]


def test_openapi_documents_the_request_body(unloaded):
    schema = unloaded.get("/openapi.json").json()
    body = schema["paths"]["/v1/detect"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/DetectRequest"}
    from groundsense.inputs.validate import FIELDS

    assert set(schema["components"]["schemas"]["DetectRequest"]["properties"]) == set(FIELDS)
