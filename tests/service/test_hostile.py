"""The service under hostile requests: the security review's points (docs/reliability.md),
each held here, and the status codes of the documented table for the cases the corpus
(tests/corpus) does not reach."""

import json
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from groundsense.service.app import create_app
from groundsense.service.keys import hash_key
from groundsense.service.settings import ServiceSettings

SOURCE = Path(__file__).resolve().parents[2] / "src" / "groundsense"
REQUEST = {"passages": ["The bridge opened in 1937.", "It is orange."], "answer": "The bridge opened in 1937."}


@pytest.fixture(scope="module")
def unloaded():
    """The real app without its lifespan, so the scorer never loads: only input checks and
    routing answer (a valid request gets 503, still loading)."""
    return TestClient(create_app(ServiceSettings(max_body_bytes=1000)))


def test_the_service_binds_to_loopback_by_default(monkeypatch):
    monkeypatch.delenv("GROUNDSENSE_HOST", raising=False)
    assert ServiceSettings().host == ServiceSettings.from_env().host == "127.0.0.1"


def test_a_chunked_body_over_the_limit_gets_413(unloaded):
    def chunks():
        for _ in range(10):
            yield b'{"answer": "' + b"x" * 200

    response = unloaded.post("/v1/detect", content=chunks(), headers={"Content-Type": "application/json"})
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 413 and "byte limit" in response.json()["error"]
    sized = unloaded.post("/v1/detect", content=b"{" * 2000, headers={"Content-Type": "application/json"})
    assert sized.status_code == 413


def test_no_cors_headers_so_other_origins_cannot_read_answers(unloaded):
    response = unloaded.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers
    preflight = unloaded.options("/v1/detect", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 405 and "access-control-allow-origin" not in preflight.headers


@pytest.mark.parametrize("path", [
    "/static/../../pyproject.toml", "/static/%2e%2e/%2e%2e/pyproject.toml", "/static/..%2f..%2fpyproject.toml",
    "/static/%2e%2e%2fapp.py", "/static//etc/passwd", "/static/....//....//etc/passwd", "/static/..\\..\\app.py",
    "/v1/examples/..%2f..%2fcalibrations%2fsmollm2-135m-instruct-k5", "/v1/examples/..", "/static/%00",
])
def test_static_files_do_not_escape_their_folder(unloaded, path):
    response = unloaded.get(path)
    assert response.status_code in (400, 404), (path, response.status_code)
    assert "[project]" not in response.text and "root:" not in response.text and "create_app" not in response.text


def test_the_review_page_never_inserts_text_as_html():
    script = (SOURCE / "service" / "static" / "app.js").read_text()
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function", script)
    assert "textContent" in script  # text goes in as text (tests/service/test_page.py renders markup inertly)


def test_no_request_can_load_another_model_or_remote_code(unloaded):
    for options in ({"scorer": "Qwen/Qwen2.5-7B"}, {"trust_remote_code": True}, {"device": "cuda"}):
        response = unloaded.post("/v1/detect", json={**REQUEST, "options": options})
        assert response.status_code == 422 and "unknown option" in response.json()["error"]
    response = unloaded.post("/v1/detect", json={**REQUEST, "scorer": "/tmp/model"})
    assert response.status_code == 422 and "unknown field 'scorer'" in response.json()["error"]
    assert not list(filter(lambda p: "trust_remote_code" in p.read_text(), SOURCE.rglob("*.py")))


def test_allowed_hosts_refuse_other_host_headers():
    settings = ServiceSettings(allowed_hosts="review.example.org, localhost")
    client = TestClient(create_app(settings), base_url="http://review.example.org")  # no lifespan: no scorer load
    assert client.get("/healthz").status_code == 200
    assert client.get("/healthz", headers={"Host": "localhost:8000"}).status_code == 200
    rebound = client.get("/healthz", headers={"Host": "attacker.example"})
    assert rebound.status_code == 400
    keyed = TestClient(create_app(replace(settings, api_keys=hash_key("k"))), base_url="http://review.example.org")
    assert keyed.post("/v1/detect", json=REQUEST, headers={"Host": "attacker.example"}).status_code == 400  # not 401


def test_a_body_a_web_page_could_send_without_a_preflight_is_refused(unloaded):
    """A form or text/plain POST is a CORS "simple request": a browser sends it from any page to a
    service on loopback without asking first. Only the JSON and NDJSON media types are read."""
    body = json.dumps(REQUEST).encode()
    for path, media_type in (("/v1/detect", "text/plain"), ("/v1/detect/batch", "application/x-www-form-urlencoded"),
                             ("/alignscore_large", "multipart/form-data"), ("/v1/detect/stream", "text/plain"),
                             ("/v1/detect", None)):
        response = unloaded.post(path, content=body, headers={"Content-Type": media_type} if media_type else {})
        assert response.status_code == 415, path
        assert "send the body with Content-Type: application/" in response.json()["error"]
    charset = unloaded.post("/v1/detect", content=body, headers={"Content-Type": "application/json; charset=utf-8"})
    assert charset.status_code == 503  # read (the scorer is not loaded here)


def test_errors_have_one_shape(unloaded):
    for response in (
        unloaded.post("/v1/detect", content=b"\xff\xfe{", headers={"Content-Type": "application/json"}),
        unloaded.post("/v1/detect/batch", json=[]),
        unloaded.post("/v1/detect/batch", json={"answer": "not a list"}),
        unloaded.post("/v1/detect", json=REQUEST),  # valid, but the scorer is not loaded: 503
        unloaded.get("/v1/no-such-route"),  # 404, and 405 for another method: Starlette's, in the same shape
        unloaded.put("/v1/detect", json=REQUEST),
    ):
        assert response.status_code in (404, 405, 422, 503) and set(response.json()) == {"error"}, response.text
    assert unloaded.post("/v1/detect/batch", json=[REQUEST] * 33).status_code == 413


@pytest.mark.slow
def test_a_timed_out_request_frees_the_worker_within_a_second(wait_ready):
    """A 32-item batch past a 2 s timeout: 504, and the worker drops the rest of it at its
    next check (between conditions or items) instead of scoring on."""
    context = " ".join(f"Fact {i}: the bridge's tower {i} is {i * 7} metres tall." for i in range(60))
    items = [{"context": context, "answer": f"Tower {i} is {i * 7} metres tall. It was painted in {1900 + i}."}
             for i in range(32)]
    with TestClient(create_app(ServiceSettings(timeout_s=2.0))) as client:
        wait_ready(client.get)
        worker = client.app.state.service.worker
        started = time.perf_counter()
        response = client.post("/v1/detect/batch", json=items)
        answered = time.perf_counter()
        assert response.status_code == 504 and int(response.headers["Retry-After"]) >= 1
        while worker.running and time.perf_counter() - answered < 30:
            time.sleep(0.01)
        freed = time.perf_counter() - answered
        assert freed < 1.5, f"the worker kept scoring for {freed:.1f} s after the 504 at {answered - started:.1f} s"
        settings_timeout = client.app.state.service.settings.timeout_s
        assert answered - started < settings_timeout + 1.5
        ok = client.post("/v1/detect", json=REQUEST)
        assert ok.status_code in (200, 504)  # a free worker: the next request is scored, not queued behind
