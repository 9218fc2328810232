"""Where a scorer's weights come from, without the network."""

import socket

import pytest

from groundsense.errors import ScorerUnavailable
from groundsense.weights import resolve


def test_offline_an_unknown_scorer_fails_without_asking_the_hub(hub_offline, monkeypatch):
    lookups = []

    def getaddrinfo(host, *args, **kwargs):
        lookups.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(ScorerUnavailable, match="unknown scorer 'no-such-org/no-such-model'"):
        resolve("no-such-org/no-such-model")
    assert lookups == []
