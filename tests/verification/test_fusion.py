"""The fused score's math (candidate J): ranks as the evaluation's rank average computes them,
the file round trip, the adapted references and the shipped file."""

import numpy as np
import pandas as pd
import pytest

from groundsense.errors import InputError
from groundsense.eval.reports.fusion import label_free_score
from groundsense.verification.fusion import (
    SIGNALS,
    RankFusion,
    reference_sample,
    shipped_fusion,
    top_two_mean,
)

STATS = {"gap": (-1.0, 2.0), "jsd_noctx": (0.1, 0.05), "drop_max": (0.5, 0.4), "jsd_loo_max": (0.02, 0.01)}


def fusion(references, threshold=0.5, answer_threshold=0.6):
    return RankFusion("judge:test", "tiny", STATS, references, threshold, answer_threshold, {"data": "test"})


def random_signals(rng, n):
    """Signals with ties, as the lexical ones and a judge's rounded probabilities have."""
    return {"sensitivity": rng.normal(size=n), "judge": rng.integers(0, 5, n) / 4,
            "overlap_chunk": rng.integers(0, 10, n) / 10, "stem_novel": rng.integers(0, 3, n) / 2,
            "bigram_novel": rng.uniform(size=n)}


def test_score_is_the_evaluations_rank_average_divided_by_the_signals():
    rng = np.random.default_rng(0)
    reference, rows = pd.DataFrame(random_signals(rng, 300)), pd.DataFrame(random_signals(rng, 50))
    fused = fusion({name: reference_sample(reference[name]) for name in SIGNALS})
    expected = label_free_score("rank average", reference, rows, SIGNALS) / len(SIGNALS)
    np.testing.assert_allclose(fused.score({name: rows[name].to_numpy() for name in SIGNALS}), expected, atol=1e-12)


def test_a_large_reference_keeps_evenly_spaced_order_statistics():
    values = np.random.default_rng(1).normal(size=20_000)
    kept = reference_sample(np.append(values, [np.nan, np.inf]))
    assert len(kept) == 1001 and kept[0] == values.min() and kept[-1] == values.max()
    assert kept == sorted(kept)
    x = np.linspace(-2, 2, 9)  # the compact ranks stay within a quantile step of the full sample's
    full = fusion({name: reference_sample(values, size=len(values)) for name in SIGNALS})
    small = fusion({name: kept for name in SIGNALS})
    values_of = {name: x for name in SIGNALS}
    assert np.abs(small.score(values_of) - full.score(values_of)).max() < 2e-3


def test_a_missing_signal_gives_no_fused_score():
    fused = fusion({name: [0.0, 1.0] for name in SIGNALS})
    values = {name: np.array([0.5, 0.5]) for name in SIGNALS}
    values["judge"] = np.array([np.nan, 2.0])
    assert np.isnan(fused.score(values)[0]) and fused.score(values)[1] == pytest.approx(0.6)


def test_answer_score_is_the_mean_of_the_top_two():
    assert top_two_mean(np.array([0.1, 0.9, 0.5, np.nan])) == pytest.approx(0.7)
    assert top_two_mean(np.array([0.3])) == 0.3
    assert np.isnan(top_two_mean(np.array([np.nan])))


def test_signals_of_sentence_features(tmp_path):
    fused = fusion({name: [0.0] for name in SIGNALS})
    features = {"gap": np.array([1.0]), "jsd_noctx": np.array([0.1]), "drop_max": np.array([0.5]),
                "jsd_loo_max": np.array([0.03]), "overlap_chunk": np.array([0.2]), "stem_novel": np.array([0.0]),
                "bigram_novel": np.array([0.4])}
    values = fused.signals(features, np.array([0.7]))
    assert values["sensitivity"][0] == pytest.approx(-(1.0 + 0 + 0 + 1.0))  # -(sum of z-scores)
    assert values["judge"][0] == 0.7 and values["bigram_novel"][0] == 0.4


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    fused = fusion({name: reference_sample(v) for name, v in random_signals(rng, 40).items()}, 0.61, 0.67)
    fused.save(tmp_path / "f.json")
    assert RankFusion.load(tmp_path / "f.json") == fused
    assert RankFusion.load(str(tmp_path / "f.json")) == fused


def test_an_unreadable_file_is_refused(tmp_path):
    (tmp_path / "bad.json").write_text('{"verifier": "judge:x"}')
    with pytest.raises(InputError, match="cannot read fusion file"):
        RankFusion.load(tmp_path / "bad.json")
    fused = fusion({name: [0.0] for name in SIGNALS})
    fused.references["judge"] = []
    fused.save(tmp_path / "empty.json")
    with pytest.raises(InputError, match="no reference for judge"):
        RankFusion.load(tmp_path / "empty.json")


def test_adapted_takes_the_references_from_the_domain_and_keeps_the_thresholds():
    rng = np.random.default_rng(3)
    base = fusion({name: reference_sample(v) for name, v in random_signals(rng, 100).items()}, 0.6, 0.65)
    domain = {name: values + 5 for name, values in random_signals(rng, 200).items()}  # shifted: ranks move
    adapted = base.adapted(domain, source="rows.jsonl")
    assert adapted.references == {name: reference_sample(domain[name]) for name in SIGNALS}
    assert (adapted.threshold, adapted.answer_threshold) == (0.6, 0.65)
    assert adapted.made_with["adaptation"]["n_sentences"] == 200
    assert adapted.made_with["adaptation"]["source"] == "rows.jsonl" and adapted.made_with["data"] == "test"
    assert base.references != adapted.references  # a copy: the base is unchanged
    np.testing.assert_allclose(np.median(adapted.score(domain)), 0.5, atol=0.05)


def test_adapting_on_no_finite_signal_is_refused():
    base = fusion({name: [0.0] for name in SIGNALS})
    with pytest.raises(InputError, match="judge"):
        base.adapted({**{name: np.zeros(3) for name in SIGNALS}, "judge": np.full(3, np.nan)})


def test_the_shipped_fusion_is_the_1_5b_judges():
    shipped = shipped_fusion("judge:qwen2.5-coder-1.5b-instruct")
    assert shipped is not None and shipped.verifier == "judge:qwen2.5-coder-1.5b-instruct"
    assert all(0 < len(shipped.references[name]) <= 1001 for name in SIGNALS)
    assert 0 < shipped.threshold < 1 and 0 < shipped.answer_threshold < 1
    assert shipped_fusion("judge:qwen2.5-coder-0.5b-instruct") is None
