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


@pytest.mark.parametrize(("name", "meant"), [("smollm", "smollm2-135m-instruct"),
                                             ("qwen-coder-1.5b", "qwen2.5-coder-1.5b-instruct"),
                                             ("qwen", None), ("no-such-org/no-such-model", None)])
def test_a_mistyped_scorer_is_answered_with_the_built_in_it_likely_meant(hub_offline, name, meant):
    with pytest.raises(ScorerUnavailable, match=f"unknown scorer '{name}'") as refused:
        resolve(name)
    assert ("Did you mean" in str(refused.value)) is (meant is not None)
    assert meant is None or str(refused.value).endswith(f"Did you mean {meant}?")
