"""``serve --max-streams``: how many streams a service holds open at once (the service's
``OpenStreams``; a stream's place is released when its events end or when it is dropped)."""

import gc

import pytest

from groundsense.service.settings import ServiceSettings
from groundsense.service.stream import OpenStreams, StepFailed


def test_a_stream_past_the_limit_is_refused_until_one_ends():
    streams = OpenStreams(2)
    first, second = streams.admit(), streams.admit()
    with pytest.raises(StepFailed) as refused:
        streams.admit()
    assert refused.value.status == 429 and "--max-streams" in refused.value.message
    streams.release(first)
    third = streams.admit()
    assert len(streams) == 2 and third is not second


def test_a_stream_the_load_leaves_no_room_for_is_refused():
    from groundsense.service.worker import Load

    streams = OpenStreams(4, admit_load=0.8)
    first = streams.admit(Load(steps=0.9, other=0.05, seconds=30))  # none open: admitted
    with pytest.raises(StepFailed) as refused:
        streams.admit(Load(steps=0.6, other=0.1, seconds=30))
    assert refused.value.status == 429 and "at capacity" in refused.value.message
    assert streams.admit(Load(steps=0.2, other=0.1, seconds=30)) is not first


def test_a_dropped_stream_frees_its_place():
    """A stream whose opening failed, or whose client left before the response began, holds
    its ticket nowhere: the place is free again without a release."""
    streams = OpenStreams(1)
    streams.admit()  # the ticket is dropped at once
    gc.collect()
    assert len(streams) == 0
    streams.admit()


def test_the_limit_comes_from_the_flag_or_the_environment(monkeypatch):
    assert ServiceSettings().max_streams == 4
    monkeypatch.setenv("GROUNDSENSE_MAX_STREAMS", "2")
    assert ServiceSettings.from_env().max_streams == 2
    assert ServiceSettings.from_env(max_streams=7).max_streams == 7


def test_the_stream_route_refuses_at_once_what_the_load_leaves_no_room_for(tiny_scorer, monkeypatch):
    """Through the app: a second stream, while the worker's load is full, gets 429 with
    Retry-After before any event; the first stream is unaffected."""
    import json

    from fastapi.testclient import TestClient

    from groundsense.pipeline.detector import Detector
    from groundsense.service.app import create_app
    from groundsense.service.worker import Load, ScoringWorker

    monkeypatch.setattr(ScoringWorker, "load", lambda self: Load(steps=0.7, other=0.2, seconds=30, streams=1))
    detector = Detector(tiny_scorer, calibration=False)
    head = {"question": "How long?", "passages": ["The span is 4,200 feet."]}
    body = "".join(json.dumps(line) + "\n" for line in [head, {"delta": "It is 4,200 feet. "}])
    with TestClient(create_app(ServiceSettings(), detection=lambda: detector)) as client:
        while client.get("/readyz").status_code != 200:
            pass
        streams = client.app.state.service.open_streams
        held = streams.admit()  # one stream open: the stubbed load leaves no room for another
        refused = client.post("/v1/detect/stream", content=body, headers={"content-type": "application/x-ndjson"})
        assert refused.status_code == 429 and refused.headers["retry-after"]
        assert "at capacity" in refused.json()["error"]
        streams.release(held)
        admitted = client.post("/v1/detect/stream", content=body, headers={"content-type": "application/x-ndjson"})
        assert admitted.status_code == 200 and '"event": "result"' in admitted.text
