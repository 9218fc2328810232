"""The fused score's lexical fusions as one file (``LexicalFusions``): what `groundsense calibrate
--adapt` writes for a domain and `detect --fusion` reads, and the settings it is refused with."""

import json

import numpy as np
import pytest

from groundsense.calibration.calibration import Calibration, shipped_calibration
from groundsense.calibration.fusion import LexicalFusions, RankFusion
from groundsense.calibration.judge_fusion import fusion_for, shipped_fusion
from groundsense.config import DetectorConfig
from groundsense.errors import InputError

SCORER = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def shipped():
    return LexicalFusions.shipped(SCORER, "fp32")


def test_both_fusions_round_trip_through_one_file(tmp_path, shipped):
    path = tmp_path / "fusions.json"
    shipped.save(path)
    assert json.loads(path.read_text())["kind"] == "lexical fusions"
    loaded = LexicalFusions.load(path)
    assert loaded == shipped and loaded.precision == "fp32" and loaded.scorer == SCORER
    assert loaded.for_mode("full").signal_names[0] == "sensitivity"
    assert loaded.for_mode("two_pass").signal_names[0] == "gap"
    assert LexicalFusions.shipped(SCORER, "bf16").precision == "bf16"
    assert LexicalFusions.shipped("another-scorer", "fp32") is None


def test_each_kind_of_fusion_file_is_refused_where_the_other_belongs(tmp_path, shipped):
    lexical, judge = tmp_path / "lexical.json", tmp_path / "judge.json"
    shipped.save(lexical)
    shipped_fusion("judge:qwen2.5-coder-1.5b-instruct").save(judge)
    with pytest.raises(InputError, match=r"is the fused score's lexical fusions, not a fusion: pass it with --fusion "
                       r"\(Python: fusion=\), without --verifier"):
        RankFusion.load(lexical)
    with pytest.raises(InputError, match=r"is a fusion, not the fused score's lexical fusions: it is a fused "
                       r"cascade's \(verifier judge:qwen2.5-coder-1.5b-instruct\): detect with --verifier "
                       "judge:qwen2.5-coder-1.5b-instruct --fuse --fusion"):
        LexicalFusions.load(judge)
    with pytest.raises(InputError, match="not the fused score's lexical fusions"):
        fusion_for("judge:qwen2.5-coder-1.5b-instruct", LexicalFusions.load(lexical))
    with pytest.raises(InputError, match="the full lexical fusion must rank sensitivity"):
        LexicalFusions(shipped.two_pass, shipped.full)
    with pytest.raises(InputError, match="two settings"):
        LexicalFusions(shipped.full, LexicalFusions.shipped(SCORER, "bf16").two_pass)
    calibration = tmp_path / "calibration.json"
    shipped_calibration(SCORER, None).save(calibration)
    with pytest.raises(InputError, match="is a calibration.*--calibration"):
        LexicalFusions.load(calibration)
    with pytest.raises(InputError, match="is the fused score's lexical fusions, not a calibration: pass it with "
                                         "--fusion"):
        Calibration.load(lexical)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"kind": "lexical fusions", "full": {}}))
    with pytest.raises(InputError, match="needs a 'full' and a 'two_pass' fusion"):
        LexicalFusions.load(broken)


def test_a_fusion_without_a_verifier_is_the_detectors_own(tmp_path):
    config = DetectorConfig(fusion=tmp_path / "mine.json")
    assert config.without_verifier().fusion == tmp_path / "mine.json"
    fused = DetectorConfig(verifier="judge:qwen2.5-coder-1.5b-instruct", fuse=True, fusion=tmp_path / "judge.json")
    assert fused.without_verifier().fusion is None and fused.without_verifier().verifier is None
    with pytest.raises(InputError, match="add --fuse"):
        DetectorConfig(verifier="judge:qwen2.5-coder-1.5b-instruct", fusion=tmp_path / "mine.json")


def test_adapting_both_takes_each_ones_references_and_keeps_the_thresholds(shipped):
    rng = np.random.default_rng(0)
    features = {name: rng.normal(size=200) for name in shipped.full.inputs + shipped.two_pass.inputs}
    for name in ("overlap_chunk", "stem_novel", "bigram_novel"):
        features[name] = rng.uniform(size=200)
    full = shipped.full.adapted(shipped.full.signals(features), source="mine.jsonl", answers=50)
    two_pass = shipped.two_pass.adapted(shipped.two_pass.signals(features), source="mine.jsonl", answers=50)
    adapted = LexicalFusions(full, two_pass)
    assert adapted.full.references != shipped.full.references
    assert (adapted.full.threshold, adapted.two_pass.answer_threshold) == (shipped.full.threshold,
                                                                           shipped.two_pass.answer_threshold)
    assert adapted.full.made_with["adaptation"]["answers"] == 50 and adapted.precision == "fp32"


def test_without_a_served_sentence_full_modes_fusion_is_kept(shipped):
    rng = np.random.default_rng(1)
    features = {name: rng.uniform(size=50) for name in shipped.full.inputs + shipped.two_pass.inputs}
    adapted = shipped.adapted(features, np.zeros(50, dtype=bool), source="mine.jsonl")
    assert adapted.full == shipped.full and adapted.two_pass.references != shipped.two_pass.references
    assert adapted.two_pass.made_with["adaptation"]["n_sentences"] == 50
