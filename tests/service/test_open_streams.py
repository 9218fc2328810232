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

    streams = OpenStreams(4)
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
