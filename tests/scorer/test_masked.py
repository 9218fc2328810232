"""Masked (approximate) leave-one-out, end to end with the real default scorer (the tiny model
for the other ways of packing and keeping the tails)."""

import json
import math

import numpy as np
import pytest
from helpers.bridge_answer import ANSWER, PASSAGES, assert_same_sentence_features
from helpers.cli import run

from groundsense.calibration.calibration import Calibration
from groundsense.config import DetectorConfig
from groundsense.errors import InputError
from groundsense.features import GROUNDING
from groundsense.inputs.text import chunk_context
from groundsense.pipeline.detector import Detector
from groundsense.scorer import Scorer
from groundsense.scorer import masked as masked_module
from groundsense.scorer.reference import masked_token_scores
from groundsense_eval.caches.extract import ExtractionConfig

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

CONTEXT = " ".join(PASSAGES) + " The bridge is painted every year by a crew of about 30."


def encode(scorer):
    chunks = chunk_context(CONTEXT, 4)
    return scorer.encode("Tell me about the bridge.", [c.removal.of(CONTEXT) for c in chunks], ANSWER, 256)


@pytest.fixture(scope="module")
def prompt(scorer):
    return encode(scorer)


def test_a_mask_hiding_nothing_gives_the_full_context_row(scorer, prompt):
    exact = scorer.score(prompt)
    prompt.chunks.append([])  # a chunk with no tokens: its mask hides nothing
    try:
        masked = scorer.score(prompt, masked=True)
    finally:
        prompt.chunks.pop()
    assert masked.logp.shape == (2 + 5, len(prompt.answer.ids))
    # fp32 noise between two computation paths: the project's exactness bar, 1e-4 (1e-5 failed once at 1.19e-5)
    assert np.abs(masked.logp[-1] - masked.logp[0]).max() <= 1e-4
    assert np.abs(masked.jsd[-1]).max() <= 1e-4
    # the full- and no-context rows are the exact ones
    assert np.abs(masked.logp[:2] - exact.logp[:2]).max() <= 1e-4
    assert np.abs(masked.jsd[:2] - exact.jsd[:2]).max() <= 1e-4


# Every tail in one pass (PACK_ATTENTION 10**9) or one per pass (1); evidence caches kept for later
# answers, or not. The default way on the real scorer; the others, which only pack and keep
# otherwise, on the tiny model.
@pytest.mark.parametrize(("pack_attention", "kept", "held"), [
    pytest.param(10**9, True, "scorer", marks=pytest.mark.slow), (10**9, False, "tiny_scorer"),
    (1, True, "tiny_scorer"), (1, False, "tiny_scorer")])
def test_masked_tails_equal_a_manual_masked_forward_pass(request, monkeypatch, pack_attention, kept, held):
    scorer = request.getfixturevalue(held)
    prompt = encode(scorer)
    monkeypatch.setattr(masked_module, "PACK_ATTENTION", pack_attention)
    scorer.forget_evidence()
    fast_scorer = (scorer if kept
                   else Scorer.from_model(scorer.model, scorer.tokenizer, scorer.name, evidence_cache_bytes=0))
    fast, slow = fast_scorer.score(prompt, masked=True), masked_token_scores(scorer, prompt)
    assert fast.logp.shape == slow.logp.shape == (2 + len(prompt.chunks), len(prompt.answer.ids))
    assert np.abs(fast.logp - slow.logp).max() <= 1e-4
    assert np.abs(fast.jsd - slow.jsd).max() <= 1e-4
    assert_same_sentence_features(fast, slow, prompt, GROUNDING)


def test_masked_detection_separates_copied_from_invented(scorer):
    detector = Detector(scorer, leave_one_out="masked")
    result = detector.detect(answer=ANSWER, passages=PASSAGES, question="How long is the main span?")
    copied, invented = result.sentences
    for s in result.sentences:
        assert all(math.isfinite(v) for v in s.features.values())
        for name in ("jsd_noctx", "jsd_loo_max", "jsd_loo_mean"):
            assert 0 <= s.features[name] <= math.log(2)
        assert len(s.drops) == len(PASSAGES)
    assert copied.features["drop_max"] > invented.features["drop_max"]
    data = result.to_dict()
    assert (data["mode"], data["leave_one_out"]) == ("full", "masked")
    assert data["score_rule"] == "fused"  # two-pass mode's fusion: the shipped calibration holds for the gap only
    assert all(set(s["ranks"]) == {"gap", "overlap_chunk", "stem_novel", "bigram_novel"} for s in data["sentences"])
    sensitivity = Detector(scorer, leave_one_out="masked", score="sensitivity")
    assert sensitivity.detect(answer=ANSWER, passages=PASSAGES).score_rule == "gap"


def test_a_calibration_must_match_the_leave_one_out_kind(scorer):
    stats = {name: (0.0, 1.0) for name in ("gap", "jsd_noctx", "drop_max", "jsd_loo_max")}
    exact = Calibration(scorer.name, 5, stats, {"sensitivity": 0.0, "gap": 0.0})
    with pytest.raises(InputError, match="--loo masked"):
        Detector(scorer, calibration=exact, leave_one_out="masked")
    masked = Calibration(scorer.name, 5, stats, {"sensitivity": 0.0, "gap": 0.0}, {"leave_one_out": "masked"})
    assert Detector(scorer, calibration=masked, leave_one_out="masked").describe()["score_rule"] == "sensitivity"
    with pytest.raises(InputError, match="leave_one_out must be"):
        Detector(scorer, leave_one_out="approximate")


def test_cli_says_which_leave_one_out_produced_the_result(cli_scorer):
    masked = run("detect", "--example", "passages-qa", "--loo", "masked", "--json")
    assert masked.exit_code == 0, masked.output
    assert json.loads(masked.output)["leave_one_out"] == "masked"
    shown = run("detect", "--example", "passages-qa", "--loo", "masked")
    assert "mode full (masked leave-one-out)" in shown.output
    two_pass = run("detect", "--example", "passages-qa", "--mode", "two_pass", "--json")
    assert json.loads(two_pass.output)["leave_one_out"] is None


def test_masked_features_are_cached_under_their_own_key():
    exact = ExtractionConfig(DetectorConfig(scorer="smollm2-135m-instruct", precision="fp32"))
    masked = ExtractionConfig(DetectorConfig(scorer="smollm2-135m-instruct", leave_one_out="masked", precision="fp32"))
    assert exact.key == "smollm2-135m-instruct__full-k5-cd42f428"  # the key of the committed results/features
    assert masked.key.startswith("smollm2-135m-instruct__full-masked-k5-")
    assert masked.key.split("-")[-1] != exact.key.split("-")[-1]
