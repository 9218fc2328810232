import math

import numpy as np
import pytest
import torch

from groundsense.features import assign_tokens, sentence_features, signed_features, support_chunk
from groundsense.inputs.text import Span
from groundsense.scorer import js_divergence

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def test_jsd_is_zero_for_identical_and_ln2_for_disjoint_distributions():
    p = torch.log(torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4]]))
    q = torch.log(torch.tensor([[0.0, 0.0, 0.5, 0.5], [0.1, 0.2, 0.3, 0.4]]))
    jsd = js_divergence(p, q)
    assert math.isclose(jsd[0].item(), math.log(2), rel_tol=1e-6)
    assert abs(jsd[1].item()) <= 1e-6  # the entropy form cancels to within float32 rounding


def test_jsd_equals_its_definition_as_two_kl_terms():
    gen = torch.Generator().manual_seed(1)
    logp = torch.log_softmax(torch.randn(64, 1000, generator=gen) * 4, dim=-1)
    logq = torch.log_softmax(torch.randn(64, 1000, generator=gen) * 4, dim=-1)
    logp[0, :500] = -math.inf  # zero-probability tokens count 0
    logp[0] = torch.log_softmax(logp[0], dim=-1)
    p, q = logp.double().exp(), logq.double().exp()
    m = (p + q) / 2
    kl = lambda a: torch.where(a > 0, a * (a.log() - m.log()), 0.0).sum(-1)  # noqa: E731
    assert torch.allclose(js_divergence(logp, logq).double(), (kl(p) + kl(q)) / 2, atol=1e-6)


def test_jsd_stays_within_bounds_and_is_symmetric():
    gen = torch.Generator().manual_seed(0)
    p = torch.log_softmax(torch.randn(200, 50, generator=gen) * 5, dim=-1)
    q = torch.log_softmax(torch.randn(200, 50, generator=gen) * 5, dim=-1)
    jsd = js_divergence(p, q)
    assert (jsd >= 0).all() and (jsd <= math.log(2)).all()
    assert torch.allclose(jsd, js_divergence(q, p), atol=1e-6)


def test_tokens_go_to_the_sentence_they_overlap_most():
    spans = [Span(0, 10), Span(11, 20)]
    offsets = np.array([[0, 4], [4, 10], [10, 11], [10, 15], [15, 20]])
    assert assign_tokens(offsets, spans).tolist() == [0, 0, -1, 1, 1]


def test_identical_conditions_give_zero_sensitivity():
    rng = np.random.default_rng(0)
    row_logp = -rng.random(6)
    logp = np.tile(row_logp, (4, 1))  # full, none, and two leave-one-out conditions all equal
    jsd = np.zeros_like(logp)
    features = sentence_features(logp, jsd, np.array([0, 0, 0, 1, 1, -1]), 2)
    for name in ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean"):
        assert (features.values[name] == 0).all(), name
    assert (features.drops == 0).all()
    assert features.values["n_tokens"].tolist() == [3, 2]
    assert np.allclose(features.values["surprisal"], [-row_logp[:3].mean(), -row_logp[3:5].mean()])


def test_sentence_features_are_token_means():
    logp = np.array([[-1.0, -2.0, -3.0], [-2.0, -2.0, -5.0], [-1.5, -2.0, -3.0], [-1.0, -4.0, -3.0]])
    jsd = np.array([[0, 0, 0], [0.2, 0.4, 0.6], [0.1, 0.0, 0.0], [0.0, 0.3, 0.0]])
    f = sentence_features(logp, jsd, np.array([0, 0, 1]), 2)
    assert np.allclose(f.values["gap"], [0.5, 2.0])
    assert np.allclose(f.drops, [[0.25, 1.0], [0.0, 0.0]])
    assert np.allclose(f.values["drop_max"], [1.0, 0.0])
    assert np.allclose(f.values["jsd_noctx"], [0.3, 0.6])
    assert np.allclose(f.values["jsd_loo_max"], [0.15, 0.0])


def test_two_pass_features_leave_leave_one_out_undefined():
    f = sentence_features(np.array([[-1.0], [-2.0]]), np.zeros((2, 1)), np.array([0]), 1)
    assert f.drops.shape == (1, 0)
    assert np.isnan(f.values["drop_max"]).all() and f.values["gap"][0] == 1.0


def test_signed_features_keep_the_sign_of_the_drops():
    # full, none, without chunk 0 (raises the sentence: a contradiction), without chunk 1 (lowers it)
    logp = np.array([[-1.0, -1.0], [-3.0, -3.0], [-0.5, -0.5], [-2.0, -2.0]])
    f = sentence_features(logp, np.zeros_like(logp), np.array([0, 0]), 1).values
    assert f["drop_min"][0] == -0.5 and f["neg_drop_mass"][0] == 0.5
    assert f["gap_rest"][0] == 2.0 - 1.0  # the context without chunk 1 still gains 1 nat over none


def test_signed_features_take_ragged_drops_and_none():
    f = signed_features(np.array([1.0, 2.0, 0.5]), [[0.2, -0.1, -0.3], [0.4, 0.1], []])
    assert np.allclose(f["drop_min"][:2], [-0.3, 0.1]) and np.isnan(f["drop_min"][2])
    assert np.allclose(f["neg_drop_mass"][:2], [0.4, 0.0])
    assert np.allclose(f["gap_rest"][:2], [0.8, 1.6]) and np.isnan(f["gap_rest"][2])


def test_support_is_the_largest_positive_drop():
    assert support_chunk(np.array([0.1, np.nan, 0.3])) == 2
    assert support_chunk(np.array([-0.1, 0.0])) is None
    assert support_chunk(np.array([])) is None
