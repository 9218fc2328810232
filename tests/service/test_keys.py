"""API keys (``serve --api-key-file``, ``GROUNDSENSE_API_KEYS``) through the real app, without
its lifespan: the scorer never loads, so a request that gets past the key gets 503 (still
loading) from a scoring route, or its answer from one that needs no scorer."""

import hashlib
import json
import logging

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from groundsense.cli import cli
from groundsense.errors import InputError
from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings

KEY, OTHER = "k3y-for-the-ward-team-7Qp2", "k3y-for-the-audit-team-9Zr4"


def stored(key: str) -> str:
    """A key's line in the key file: its SHA-256, as the documentation says to make it."""
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "keys.txt"
    path.write_text(f"# who holds which key\n{stored(KEY)} ward team\n\n{stored(OTHER)}  # audit\n")
    return path


def app(key_file, **settings) -> TestClient:
    return TestClient(create_app(ServiceSettings(api_key_file=str(key_file), **settings)))


GUARDED = [("POST", "/v1/detect"), ("POST", "/v1/detect/batch"), ("POST", "/v1/detect/stream"),
           ("POST", "/alignscore_large"), ("GET", "/v1/examples"), ("GET", "/v1/examples/passages-qa"),
           ("GET", "/metrics")]


@pytest.mark.parametrize(("method", "path"), GUARDED)
def test_a_request_without_an_accepted_key_gets_401(key_file, method, path):
    client = app(key_file)
    for headers, message in [({}, "send the header 'Authorization: Bearer <key>'"),
                             ({"Authorization": f"Basic {KEY}"}, "send the header 'Authorization: Bearer <key>'"),
                             (bearer("not-a-key"), "not accepted (mistyped or revoked)"),
                             (bearer(stored(KEY)), "not accepted (mistyped or revoked)")]:  # the hash is no key
        response = client.request(method, path, headers=headers, json={"answer": "A.", "context": "B."})
        assert response.status_code == 401 and message in response.json()["error"], headers
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="groundsense"')
        assert ('error="invalid_token"' in challenge) == bool(headers)  # a key was sent, and refused


def test_the_right_key_opens_every_route(key_file):
    client = app(key_file)
    for key in (KEY, OTHER):
        assert "passages-qa" in client.get("/v1/examples", headers=bearer(key)).json()
        response = client.post("/v1/detect", headers=bearer(key), json={"answer": "A.", "context": "B."})
        assert response.status_code == 503 and "loading" in response.json()["error"]  # past the key
        assert client.get("/metrics", headers=bearer(key)).status_code == 200
    assert client.get("/v1/examples", headers={"authorization": f"bearer {KEY}"}).status_code == 200  # any case


def test_probes_and_the_page_stay_open(key_file):
    client = app(key_file)
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["status"] == "loading"
    assert client.get("/").status_code == client.get("/static/app.js").status_code == 200
    assert "/v1/detect" in client.get("/openapi.json").json()["paths"]
    assert client.get("/docs").status_code == 200
    help_text = " ".join(CliRunner().invoke(cli, ["serve", "--help"], terminal_width=200).output.split())
    assert "every route but the probes, the review page's files and the API's description" in help_text


def test_metrics_open_serves_metrics_without_a_key_and_nothing_else(key_file):
    client = app(key_file, metrics_open=True)
    assert client.get("/metrics").status_code == 200
    assert client.post("/v1/detect", json={"answer": "A.", "context": "B."}).status_code == 401


def test_a_key_removed_from_the_file_stops_working_without_a_restart(key_file):
    client = app(key_file)
    assert client.get("/v1/examples", headers=bearer(KEY)).status_code == 200
    key_file.write_text(f"{stored(OTHER)} audit\n")  # the ward team's key is revoked
    assert client.get("/v1/examples", headers=bearer(KEY)).status_code == 401
    assert client.get("/v1/examples", headers=bearer(OTHER)).status_code == 200
    key_file.write_text(f"{stored(OTHER)} audit\n{stored(KEY)} ward team, again\n")
    assert client.get("/v1/examples", headers=bearer(KEY)).status_code == 200


def test_a_key_file_that_breaks_refuses_everyone_until_it_is_fixed(key_file, caplog):
    client = app(key_file)
    key_file.write_text(f"{stored(OTHER)}\n{KEY}\n")  # a key pasted instead of its hash
    for key in (KEY, OTHER):
        response = client.get("/v1/examples", headers=bearer(key))
        assert response.status_code == 503 and "key file" in response.json()["error"]
    assert "line 2 does not start with a key hash" in caplog.text and KEY not in caplog.text
    key_file.unlink()
    assert client.get("/v1/examples", headers=bearer(OTHER)).status_code == 503
    key_file.write_text(stored(OTHER) + "\n")
    assert client.get("/v1/examples", headers=bearer(OTHER)).status_code == 200


def test_keys_from_the_environment_add_to_the_file(key_file, monkeypatch):
    third = "k3y-from-the-environment"
    monkeypatch.setenv("GROUNDSENSE_API_KEYS", f" {stored(third)}, ")
    client = TestClient(create_app(ServiceSettings.from_env(api_key_file=str(key_file))))
    assert [client.get("/v1/examples", headers=bearer(k)).status_code for k in (third, KEY, "x")] == [200, 200, 401]
    monkeypatch.setenv("GROUNDSENSE_METRICS_OPEN", "1")
    monkeypatch.setenv("GROUNDSENSE_GRACE_S", "5")
    settings = ServiceSettings.from_env()
    assert (settings.api_keys, settings.metrics_open, settings.grace_s) == (f" {stored(third)}, ", True, 5.0)


@pytest.mark.parametrize(("settings", "message"), [
    ({"api_keys": KEY}, "GROUNDSENSE_API_KEYS entry 1 is not a key hash"),
    ({"api_keys": stored(KEY).upper()}, "is not a key hash"),
    ({"api_key_file": "no-such-file.txt"}, "cannot read the API key file no-such-file.txt"),
    ({"api_key_file": "{empty}"}, "holds no key hash"),
    ({"api_key_file": "{raw}"}, "line 1 does not start with a key hash"),
])
def test_a_bad_key_configuration_stops_the_server_from_starting(tmp_path, settings, message):
    (tmp_path / "empty").write_text("# no keys yet\n")
    (tmp_path / "raw").write_text(KEY + "\n")
    settings = {name: value.format(empty=tmp_path / "empty", raw=tmp_path / "raw") for name, value in settings.items()}
    with pytest.raises(InputError, match=message) as error:
        create_app(ServiceSettings(**settings))
    assert KEY not in str(error.value)  # a key put where a hash belongs is not echoed


def test_the_log_and_the_metrics_name_a_key_by_its_id_never_by_itself(key_file, caplog):
    caplog.set_level(logging.INFO, logger="groundsense.requests")
    client = app(key_file)
    client.post("/v1/detect", headers=bearer(KEY), json={"answer": "A.", "context": "B."})
    client.post("/v1/detect", headers=bearer("wrong"), json={"answer": "A.", "context": "B."})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "groundsense.requests"]
    key_id = stored(KEY)[len("sha256:") :][:8]
    assert [(line["status"], line["key"]) for line in lines] == [(503, key_id), (401, None)]
    metrics = client.get("/metrics", headers=bearer(OTHER)).text
    requests = {(s.labels["status"], s.labels["key"]): s.value for family in text_string_to_metric_families(metrics)
                for s in family.samples if s.name == "groundsense_requests_total"}
    assert requests == {("503", key_id): 1, ("401", ""): 1}
    for text in (caplog.text, metrics):
        assert KEY not in text and "wrong" not in text and stored(KEY) not in text


def test_serve_hash_key_prints_the_line_for_the_key_file(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--hash-key"], input=KEY + "\n")
    assert result.exit_code == 0 and result.stdout == stored(KEY) + "\n"
    (tmp_path / "keys.txt").write_text(result.stdout)
    assert app(tmp_path / "keys.txt").get("/v1/examples", headers=bearer(KEY)).status_code == 200
    empty = CliRunner().invoke(cli, ["serve", "--hash-key"], input="")
    assert empty.exit_code == 2 and "got none" in empty.output


def test_serve_with_a_bad_key_file_exits_2_before_serving(tmp_path):
    (tmp_path / "keys.txt").write_text(KEY + "\n")
    result = CliRunner().invoke(cli, ["serve", "--api-key-file", str(tmp_path / "keys.txt")])
    assert result.exit_code == 2 and "does not start with a key hash" in result.output
    assert "serving on" not in result.output and KEY not in result.output
