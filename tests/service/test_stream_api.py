"""``POST /v1/detect/stream`` against the real default scorer: the events, their equality
with ``/v1/detect``, the errors, and verdicts written while the request is still arriving."""

import json
import socket
import threading

import httpx
import pytest
from fastapi.testclient import TestClient
from helpers.servers import LiveServer
from helpers.stream_http import END, EXAMPLE, HEAD, chunk, chunked_events, ndjson, open_stream, read_until

from groundsense.inputs.files import load_example
from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings

pytestmark = pytest.mark.slow


def words(text: str) -> list[str]:
    pieces = text.split(" ")
    return [p + " " for p in pieces[:-1]] + [pieces[-1]]


@pytest.fixture(scope="module")
def client(wait_ready):
    with TestClient(create_app(ServiceSettings(max_body_bytes=50_000))) as client:
        wait_ready(client.get)
        yield client


def post(client, body: bytes):
    return client.post("/v1/detect/stream", content=body, headers={"content-type": "application/x-ndjson"})


def test_stream_events_end_with_the_detect_result(client):
    body = ndjson(HEAD, *({"delta": w} for w in words(EXAMPLE["answer"])))
    response = post(client, body)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/x-ndjson")
    events = [json.loads(line) for line in response.text.splitlines()]
    assert [e["event"] for e in events] == ["sentence"] * (len(events) - 1) + ["result"]
    result = events[-1]["result"]
    # a sentence event each, those judged at the close too (fp32: the stream's own scores are the result's)
    assert result["id"] == "s1" and [e["sentence"] for e in events[:-1]] == result["sentences"]
    spans = [[s["start"], s["end"]] for s in result["sentences"]]
    whole = client.post("/v1/detect", json={**HEAD, "answer": EXAMPLE["answer"], "sentences": spans}).json()
    assert [s["flagged"] for s in result["sentences"]] == [s["flagged"] for s in whole["sentences"]]
    assert [s["score"] for s in result["sentences"]] == pytest.approx([s["score"] for s in whole["sentences"]],
                                                                       abs=1e-4)
    assert result["sentences"][2]["flagged"] is True and result["answer"]["flagged"] is True
    assert result["score_rule"] == whole["score_rule"] == "fused"  # the default score, on both routes
    metrics = client.get("/metrics").text  # counted like any scoring request
    assert any(line.startswith("groundsense_requests_total{") and 'route="/v1/detect/stream"' in line
               and 'outcome="flagged"' in line and line.endswith(" 1.0") for line in metrics.splitlines())
    assert "groundsense_open_streams{scorer=\"smollm2-135m-instruct\"} 0.0" in metrics.splitlines()  # its place freed


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "body is empty"),
        (ndjson({**HEAD, "answer": "x"}), "unknown field 'answer'"),
        (ndjson({"question": "q", "passages": ["  "]}), "evidence is empty"),
        (b"{not json\n", "not valid JSON"),
    ],
)
def test_a_bad_first_line_is_a_422(client, body, message):
    response = post(client, body)
    assert response.status_code == 422 and message in response.json()["error"]


def test_a_bad_delta_ends_the_stream_without_a_result(client):
    response = post(client, ndjson(HEAD, {"delta": "The bridge opened in 1937. "}, {"text": "oops"}))
    events = [json.loads(line) for line in response.text.splitlines()]
    assert events[-1]["event"] == "error" and events[-1]["status"] == 422 and '{"delta"' in events[-1]["error"]
    assert all(e["event"] != "result" for e in events)  # fail closed: not judged


def test_a_verdict_arrives_while_the_answer_is_still_being_sent(live_server):
    """A raw HTTP/1.1 client sends the evidence and the first sentence and part of the second,
    reads the first verdict, and only then sends the rest of the answer."""
    answer = EXAMPLE["answer"]
    cut = answer.index(" Its main span") + len(" Its")
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=120) as sock:
        sock.sendall(b"POST /v1/detect/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
        sock.sendall(chunk(ndjson(HEAD, {"delta": answer[:cut]})))
        received = b""
        while b'"event": "sentence"' not in received:
            data = sock.recv(65536)
            assert data, f"the connection closed before a verdict: {received!r}"
            received += data
        assert b'"event": "result"' not in received  # the answer is not finished yet
        sock.sendall(chunk(ndjson({"delta": answer[cut:]})) + b"0\r\n\r\n")
        while b'"event": "result"' not in received:
            data = sock.recv(65536)
            assert data, f"the connection closed before the result: {received!r}"
            received += data
    assert received.startswith(b"HTTP/1.1 200")


def test_two_concurrent_streams_both_equal_detect(live_server):
    """Stream A is admitted and has its first verdict; stream B then opens and sends its whole
    answer in one delta (fed in pieces) while A sends the rest of its answer word by word.
    Both end with a result equal to /v1/detect: the server's queue holds one job, but the
    steps of admitted streams are never refused."""
    other = load_example("clinical-summary")
    heads = {"a": HEAD, "b": {"id": "s2", "question": other["question"], "context": other["context"]}}
    answers = {"a": EXAMPLE["answer"], "b": other["answer"]}
    cut = answers["a"].index(" Its main span") + len(" Its")
    received = {}
    with open_stream(live_server.port, heads["a"], {"delta": answers["a"][:cut]}) as a:
        received["a"] = read_until(a, b'"event": "sentence"')
        with open_stream(live_server.port, heads["b"], {"delta": answers["b"]}) as b:
            received["b"] = read_until(b, b"\r\n\r\n")  # B is admitted (its open ran) before A goes on

            def rest_of_a():
                for word in words(answers["a"][cut:]):
                    a.sendall(chunk(ndjson({"delta": word})))
                a.sendall(b"0\r\n\r\n")
                received["a"] = read_until(a, END, received["a"])

            sender = threading.Thread(target=rest_of_a)
            sender.start()
            b.sendall(b"0\r\n\r\n")
            received["b"] = read_until(b, END, received["b"])
            sender.join(600)
            assert not sender.is_alive()
    for name in ("a", "b"):
        assert received[name].startswith(b"HTTP/1.1 200")
        events = chunked_events(received[name])
        assert [e["event"] for e in events] == ["sentence"] * (len(events) - 1) + ["result"]
        result = events[-1]["result"]
        assert result["id"] == heads[name]["id"]
        spans = [[s["start"], s["end"]] for s in result["sentences"]]
        whole = httpx.post(live_server.url + "/v1/detect", timeout=300,
                           json={**heads[name], "answer": answers[name], "sentences": spans}).json()
        assert [s["flagged"] for s in result["sentences"]] == [s["flagged"] for s in whole["sentences"]]
        assert [s["score"] for s in result["sentences"]] == pytest.approx(
            [s["score"] for s in whole["sentences"]], abs=1e-4)


@pytest.mark.system
def test_a_silent_stream_is_ended_with_a_504_and_frees_its_place(detector):
    """A client that opens a stream and then sends nothing does not hold one of the service's
    streams for ever: past ``--timeout`` without a line, the stream ends with an error event."""
    with LiveServer(ServiceSettings(timeout_s=5, max_streams=1, admit_load=0), detection=lambda: detector) as server:
        with open_stream(server.port, HEAD) as silent:
            events = chunked_events(read_until(silent, END))
        assert [e["event"] for e in events] == ["error"] and events[0]["status"] == 504
        assert "nothing arrived for 5 s" in events[0]["error"]
        metrics = httpx.get(server.url + "/metrics", timeout=30).text
        assert 'groundsense_open_streams{scorer="smollm2-135m-instruct"} 0.0' in metrics


def test_a_masked_detectors_stream_is_refused_naming_the_option_a_client_can_send(scorer):
    """An HTTP client cannot change the served leave-one-out kind; the refusal names the option it can send."""
    from groundsense import Detector

    detector = Detector(scorer, leave_one_out="masked")
    with TestClient(create_app(ServiceSettings(), detection=lambda: detector)) as client:
        answer = {"delta": EXAMPLE["answer"]}
        refused = post(client, ndjson(HEAD, answer))
        assert refused.status_code == 422 and '"options": {"mode": "two_pass"}' in refused.json()["error"]
        done = post(client, ndjson({**HEAD, "options": {"mode": "two_pass"}}, answer))
        assert done.status_code == 200 and json.loads(done.text.splitlines()[-1])["result"]["mode"] == "two_pass"
