"""Draining on SIGTERM: new work gets 503 with Retry-After while the requests and streams in
flight finish, within ``--grace`` seconds; then the server exits 0. On a real `groundsense
serve` process, and (the refusals) on the app in this process."""

import asyncio
import json
import signal
import socket
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from helpers.servers import ServeProcess
from helpers.stream_http import END, EXAMPLE, HEAD, chunk, chunked_events, ndjson, open_stream, read_until

from groundsense.detection import Detection
from groundsense.errors import Cancelled
from groundsense.inputs.validate import check_row
from groundsense.service.app import create_app, lifespan
from groundsense.service.observe import RequestRecord, _current
from groundsense.service.routes.detect import score
from groundsense.service.settings import ServiceSettings


def test_a_draining_app_refuses_new_work_but_answers_its_probe_and_metrics():
    app = create_app(ServiceSettings(grace_s=20))
    client = TestClient(app)
    assert client.get("/v1/examples").status_code == 200
    app.state.service.drain.begin()
    for method, path in [("POST", "/v1/detect"), ("POST", "/v1/detect/stream"), ("GET", "/v1/examples"),
                         ("GET", "/readyz"), ("GET", "/")]:
        response = client.request(method, path, json={"answer": "A.", "context": "B."})
        assert response.status_code == 503 and "shutting down" in response.json()["error"], path
        assert 1 <= int(response.headers["retry-after"]) <= 20
    assert client.get("/healthz").status_code == 200
    assert 'route="/v1/detect",scorer="smollm2-135m-instruct",status="503"' in client.get("/metrics").text


class UntilStopped(Detection):
    """Scores until told to stop (at most 30 s), as a long batch on the real scorer would."""

    def detect_checked(self, row, stop=None):
        deadline = time.monotonic() + 30
        while not stop() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise Cancelled("stopped")

    def describe(self, chunks=None):
        return {"kind": "until-stopped", "scorer": "none"}


def test_a_request_cut_off_at_the_end_of_the_grace_stops_its_work_and_the_shutdown_waits_for_no_more():
    """As uvicorn ends the grace: cancel the request in flight, then shut the app down. The
    request stops its running job at the scorer's next check, as a timed-out one does, and the
    shutdown waits for the scorer's thread off the event loop, so the cut-off request gets its
    503 and the process exits at once, not when the job would have ended."""
    app = create_app(ServiceSettings(), detection=UntilStopped)
    service = app.state.service

    async def serve_and_cut_off() -> None:
        async with lifespan(app):
            assert await asyncio.to_thread(service.worker.ready.wait, 10)
            _current.set(RequestRecord())
            request = asyncio.create_task(score(service, [check_row({"answer": "A.", "context": "B."})]))
            while not service.worker.running:
                await asyncio.sleep(0.01)
            request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request

    started = time.monotonic()
    asyncio.run(serve_and_cut_off())
    assert time.monotonic() - started < 5, "the shutdown waited for the work of a request it had cut off"


@pytest.mark.slow  # the real scorer, in a `groundsense serve` process
@pytest.mark.system
def test_sigterm_lets_an_open_stream_finish_refuses_new_work_and_exits_0(tmp_path):
    answer = EXAMPLE["answer"]
    cut = answer.index(" Its main span") + len(" Its")
    with ServeProcess(tmp_path, "--grace", "300") as server:
        server.wait_status("ready")
        with open_stream(server.port, HEAD, {"delta": answer[:cut]}) as stream:
            received = read_until(stream, b'"event": "sentence"')  # the stream is open and judging
            server.process.send_signal(signal.SIGTERM)
            deadline = time.time() + 30
            while httpx.get(server.url + "/readyz").status_code != 503:  # the signal has landed
                assert time.time() < deadline
                time.sleep(0.05)
            refused = httpx.post(server.url + "/v1/detect", json={**EXAMPLE, "id": "late"})
            assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1
            assert httpx.get(server.url + "/healthz").status_code == 200
            assert server.process.poll() is None  # still serving the stream
            stream.sendall(chunk(ndjson({"delta": answer[cut:]})) + b"0\r\n\r\n")
            received = read_until(stream, END, received)
        assert server.process.wait(timeout=60) == 0
    events = chunked_events(received)
    assert received.startswith(b"HTTP/1.1 200") and events[-1]["event"] == "result"
    assert events[-1]["result"]["answer"]["flagged"] is True  # judged whole: the README's flagged sentence
    log = [json.loads(line) for line in server.stdout.read_text().splitlines()]
    assert [(line["route"], line["status"]) for line in log] == [("/v1/detect", 503), ("/v1/detect/stream", 200)]


@pytest.mark.slow  # starts `groundsense serve`; its scorer cannot load, so no scorer is needed
@pytest.mark.system
def test_a_request_still_in_flight_when_the_grace_ends_gets_503_and_the_server_exits_0(tmp_path, unloadable_scorer):
    grace = 2
    with ServeProcess(tmp_path, "--grace", str(grace), "--scorer", unloadable_scorer,
                      env={"HF_HUB_OFFLINE": "1"}) as server:
        server.wait_status("failed")
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as held:
            # a request whose body never ends: in flight until the grace runs out
            held.sendall(b"POST /v1/detect HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 1000\r\n\r\n" + b'{"answer": "')
            assert httpx.get(server.url + "/healthz").status_code == 200  # the held request's headers were read
            signalled = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=60) == 0
            waited = time.monotonic() - signalled
            reply = read_until(held, b"}")
        assert reply.startswith(b"HTTP/1.1 503") and b"not judged" in reply  # cut off: never a result
        assert_cut_off_quietly(server, "POST /v1/detect")
    assert grace <= waited < grace + 20


@pytest.mark.slow  # the real scorer, in a `groundsense serve` process
@pytest.mark.system
def test_a_stream_still_open_when_the_grace_ends_ends_with_an_error_event_and_no_result(tmp_path):
    answer = EXAMPLE["answer"]
    first = answer[: answer.index(" Its main span") + len(" Its")]  # the first sentence, known to have ended
    with ServeProcess(tmp_path, "--grace", "2") as server:
        server.wait_status("ready")
        with open_stream(server.port, HEAD, {"delta": first}) as stream:
            received = read_until(stream, b'"event": "sentence"')  # judging; the client sends no more
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=60) == 0
            received = read_until(stream, b"0\r\n\r\n", received)  # the response's end
        events = chunked_events(received)
        assert [event["event"] for event in events] == ["sentence", "error"] and events[-1]["status"] == 503
        assert_cut_off_quietly(server, "POST /v1/detect/stream")


def assert_cut_off_quietly(server: ServeProcess, request: str) -> None:
    """The server logged the request it cut off, as a warning, not an error's traceback."""
    log = server.stderr.read_text()
    assert f"WARNING: cut off {request} at the end of the shutdown's grace" in log
    assert "Exception in ASGI application" not in log, log
