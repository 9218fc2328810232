"""One DetectorConfig: its checks, and every entry point takes every setting."""

import dataclasses

import pytest

from groundsense.cli import cli
from groundsense.config import DEFAULTS, VERIFIER_FIELDS, DetectorConfig
from groundsense.errors import InputError
from groundsense.pipeline.detector import Detector
from groundsense.service.settings import ServiceSettings

SETTINGS = [f.name for f in dataclasses.fields(DetectorConfig)]


@pytest.mark.parametrize("bad", [{"k": 0}, {"k": 51}, {"mode": "three_pass"}, {"leave_one_out": "approximate"},
                                 {"max_context_tokens": 0}, {"max_answer_tokens": 2.5}, {"device": "bogus"},
                                 {"precision": "int4"}, {"scorer": 123}, {"scorer": "  "},
                                 {"escalate": 1.5, "verifier": "judge:x"},
                                 {"verifier_threshold": -0.1, "verifier": "judge:x"},
                                 {"verifier": ""}, {"verifier_url": "http://x"}, {"escalate": 0.5}])
def test_bad_settings_are_refused_with_a_message(bad):
    with pytest.raises(InputError, match=next(iter(bad))):
        DetectorConfig(**bad)


def test_a_cuda_device_this_torch_cannot_reach_is_refused_before_loading():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(InputError, match="sees no CUDA device"):
        DetectorConfig(device="cuda:0")
    assert DetectorConfig(device="cpu").device == "cpu"


@pytest.mark.parametrize("path, left_out", [
    (["detect"], set()), (["stream"], set()), (["batch"], set()), (["serve"], set()),
    # fitting scores in full mode, uncalibrated (its own --target-recall/--target-precision fit thresholds,
    # its own --score says which score --adapt adapts, and its own --fuse and --verifier adapt a fused cascade's fusion)
    (["calibrate"], {"mode", "calibration", *VERIFIER_FIELDS} - {"fuse", "verifier"}),
    (["eval", "extract"], {"score", "calibration", "target_recall", "target_precision", *VERIFIER_FIELDS}),
])
def test_every_command_takes_every_setting(path, left_out):
    import click

    command = cli
    for name in path:  # `eval` is the harness's plugin: loaded by name
        command = command.get_command(click.Context(command), name)
    assert set(SETTINGS) - {p.name for p in command.params} == left_out


def test_serve_takes_every_setting_from_its_variable(monkeypatch):
    values = {"scorer": "some/model", "k": "7", "mode": "two_pass", "leave_one_out": "masked",
              "calibration": "c.json", "max_context_tokens": "900", "max_answer_tokens": "100", "device": "cpu",
              "precision": "int8", "score": "fused", "target_recall": "0.8", "verifier": "openai:some-judge",
              "escalate": "0.3", "verifier_threshold": "0.6",
              "verifier_url": "http://127.0.0.1:8080/v1"}
    # one target at a time, and a fused cascade has no escalated share: those below
    assert set(values) | {"target_precision", "fuse", "fusion"} == set(SETTINGS)
    for name, value in values.items():
        monkeypatch.setenv(f"GROUNDSENSE_{name.upper()}", value)
    settings = ServiceSettings.from_env(k=3)  # a flag wins over its variable
    assert settings.detection == DetectorConfig(scorer="some/model", k=3, mode="two_pass", leave_one_out="masked",
                                               calibration="c.json", max_context_tokens=900, max_answer_tokens=100,
                                               device="cpu", precision="int8", score="fused", target_recall=0.8,
                                               verifier="openai:some-judge", escalate=0.3, verifier_threshold=0.6,
                                               verifier_url="http://127.0.0.1:8080/v1")
    monkeypatch.delenv("GROUNDSENSE_TARGET_RECALL")
    monkeypatch.setenv("GROUNDSENSE_TARGET_PRECISION", "0.5")
    assert ServiceSettings.from_env().detection.target_precision == 0.5
    for name in ("escalate", "verifier_threshold"):
        monkeypatch.delenv(f"GROUNDSENSE_{name.upper()}")
    monkeypatch.setenv("GROUNDSENSE_FUSE", "1")
    monkeypatch.setenv("GROUNDSENSE_FUSION", "f.json")
    detection = ServiceSettings.from_env().detection
    assert (detection.fuse, detection.fusion) == (True, "f.json")


@pytest.mark.parametrize("targets", [{"target_recall": 0}, {"target_precision": 1.5}, {"target_recall": "0.8"},
                                     {"target_recall": 0.8, "target_precision": 0.5}])
def test_a_target_is_one_share_in_the_unit_interval(targets):
    with pytest.raises(InputError, match="target"):
        DetectorConfig(**targets)


def test_a_detector_keeps_the_config_it_was_built_from(scorer):
    config = DetectorConfig(k=3, leave_one_out="masked", calibration=False, max_answer_tokens=64)
    detector = Detector.from_config(config, scorer)
    # its score resolved: calibration=False leaves the fused score no shipped fusion to flag by
    assert detector.config == dataclasses.replace(config, scorer=scorer.name, precision=scorer.precision,
                                                  score="sensitivity")
    assert (detector.config.k, detector.config.leave_one_out, detector.config.max_answer_tokens) == (3, "masked", 64)
    assert not any(hasattr(detector, name) for name in ("k", "mode", "leave_one_out", "max_answer_tokens"))
    sibling = detector.with_options(k=4)
    assert sibling.config == dataclasses.replace(detector.config, k=4) and sibling.scorer is scorer
    assert Detector(scorer).config == dataclasses.replace(DEFAULTS, scorer=scorer.name, precision=scorer.precision,
                                                          score="fused")  # what the default ("auto") resolved to
