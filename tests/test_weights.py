"""Where a scorer's weights come from, without the network."""

import socket

import pytest

from groundsense import weights
from groundsense.errors import ScorerUnavailable
from groundsense.scorer import Scorer


def test_offline_an_unknown_scorer_fails_without_asking_the_hub(hub_offline, monkeypatch):
    lookups = []

    def getaddrinfo(host, *args, **kwargs):
        lookups.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(ScorerUnavailable, match="unknown scorer 'no-such-org/no-such-model'"):
        Scorer("no-such-org/no-such-model", device="cpu")
    assert lookups == []


@pytest.mark.parametrize(("name", "meant"), [("smollm", "smollm2-135m-instruct"),
                                             ("qwen-coder-1.5b", "qwen2.5-coder-1.5b-instruct"),
                                             ("qwen", None), ("no-such-org/no-such-model", None)])
def test_a_mistyped_scorer_is_answered_with_the_built_in_it_likely_meant(hub_offline, name, meant):
    with pytest.raises(ScorerUnavailable, match=f"unknown scorer '{name}'") as refused:
        Scorer(name, device="cpu")
    assert ("Did you mean" in str(refused.value)) is (meant is not None)
    assert meant is None or str(refused.value).endswith(f"Did you mean {meant}?")


def test_a_directory_without_a_model_is_refused_by_what_it_lacks(tmp_path):
    with pytest.raises(ScorerUnavailable, match="the directory has no config.json"):
        Scorer(str(tmp_path), device="cpu")


@pytest.mark.slow  # loads the real scorer
def test_a_detection_looks_for_its_scorers_weights_once(calls_counted):
    """They were looked for before the detection was made and again by the scorer's load (for a
    Hugging Face id, its config fetched twice)."""
    from groundsense import DetectorConfig, make_detection

    folder = weights.resolve(None)[1]  # the default's converted weights: a local model directory
    counts = calls_counted(weights, "check_available")
    detection = make_detection(DetectorConfig(scorer=folder, precision="fp32"))
    assert detection.describe()["scorer"] == folder and counts["check_available"] == 1
