"""A config holds plain values; the calibration and fusions it names are read once, where a
detection is made (``calibration/loaded.py``), or given as objects beside it."""

from dataclasses import replace

import pytest

from groundsense import Detector, make_detection
from groundsense.calibration.calibration import shipped_calibration
from groundsense.calibration.fusion import LexicalFusions
from groundsense.calibration.judge_fusion import SHIPPED_JUDGE, shipped_fusion
from groundsense.calibration.loaded import load_files
from groundsense.config import DetectorConfig
from groundsense.errors import InputError

SCORER = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def calibration():
    return shipped_calibration(SCORER, 5, "fp32")


def test_a_config_refuses_an_object_and_says_where_it_goes(calibration):
    with pytest.raises(InputError, match=r"not a Calibration: pass the object beside it, to Detector\(calibration"):
        DetectorConfig(calibration=calibration)
    with pytest.raises(InputError, match="not a LexicalFusions"):
        DetectorConfig(fusion=LexicalFusions.shipped(SCORER, "fp32"))
    with pytest.raises(InputError, match="not False"):
        DetectorConfig(fusion=False)
    assert hash(DetectorConfig(calibration="mine.json")) == hash(DetectorConfig(calibration="mine.json"))


def test_a_file_is_read_and_its_path_kept(tmp_path, calibration):
    path = tmp_path / "mine.json"
    calibration.save(path)
    config, loaded = load_files(DetectorConfig(calibration=path))
    assert config.calibration == path and loaded.calibration == calibration
    assert loaded.lexical_fusions is None and loaded.cascade_fusion is None
    again, same = load_files(config, loaded.calibration)  # as a Ray actor does with what the driver read
    assert again == config and same.calibration is loaded.calibration


def test_an_object_given_is_recorded_as_given(calibration):
    config, loaded = load_files(DetectorConfig(), calibration)
    assert config.calibration is True and loaded.calibration is calibration
    with pytest.raises(InputError, match="none was: pass it beside the config"):
        load_files(config)
    with pytest.raises(InputError, match="asks for no calibration, and one was given"):
        load_files(DetectorConfig(calibration=False), calibration)
    with pytest.raises(InputError, match="must be a Calibration, not str"):
        load_files(DetectorConfig(), "mine.json")  # type: ignore[arg-type]


def test_each_fusion_goes_where_it_belongs():
    lexical = LexicalFusions.shipped(SCORER, "fp32")
    config, loaded = load_files(DetectorConfig(), fusion=lexical)
    assert config.fusion is True and loaded.lexical_fusions is lexical and loaded.fusion is lexical
    judge = shipped_fusion(SHIPPED_JUDGE)
    assert judge is not None
    with pytest.raises(InputError, match="not one RankFusion"):
        load_files(DetectorConfig(), fusion=judge)
    fused = DetectorConfig(verifier=SHIPPED_JUDGE, fuse=True)
    config, loaded = load_files(fused)  # none named: the one shipped for the verifier
    assert config.fusion is None and loaded.cascade_fusion == judge and loaded.lexical_fusions is None
    with pytest.raises(InputError, match="made for verifier"):
        load_files(replace(fused, verifier="judge:another"), fusion=judge)


def test_a_calibration_for_another_scorer_is_refused(tiny_scorer, calibration):
    with pytest.raises(InputError, match=f"fitted for scorer {SCORER}, and this detector runs tiny-random-llama"):
        Detector(tiny_scorer, k=5, calibration=calibration)


def test_a_detector_and_its_siblings_share_what_it_was_given(tiny_scorer, calibration):
    calibration = replace(calibration, scorer=tiny_scorer.name)  # plumbing: the tiny scorer's calibration
    detector = Detector(tiny_scorer, k=5, calibration=calibration)
    assert detector.config.calibration is True and detector.adjudicator.calibration is calibration
    assert detector.describe()["calibration"] == "given"
    sibling = detector.with_options(k=3)
    assert sibling.adjudicator.calibration is calibration and sibling.config.calibration is True
    made = make_detection(DetectorConfig(k=5), tiny_scorer, calibration=calibration)
    assert isinstance(made, Detector) and made.adjudicator.calibration is calibration
    assert made.config == detector.config
