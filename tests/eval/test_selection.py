"""The detector-selection protocol on the committed feature caches (no scorer needed)."""

from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from groundsense.eval.extract import load_cache
from groundsense.eval.benchmark_result import partitioned
from groundsense.eval.selection import (
    CANDIDATES, THRESHOLD_GRID, Transfer, apply_rule, detector_table, fit_inputs, leave_one_benchmark_out,
    selection_report, suspicion, token_threshold_sweep, tuned_thresholds, with_token_features,
)

RESULTS = Path(__file__).parents[2] / "results"
CACHE = RESULTS / "features"


@pytest.fixture(scope="module")
def parts():
    sets = {s.benchmark: s for s in load_cache(CACHE, "smollm2-135m-instruct")
            if s.config["mode"] == "full" and s.config.get("leave_one_out", "exact") == "exact"}
    assert set(sets) == {"ragtruth", "tofueval", "ragbench"}
    return {name: partitioned(detector_table(fs)) for name, fs in sets.items()}


def test_detector_table_has_every_sentence_input(parts):
    dev, test = parts["ragtruth"]
    assert set(CANDIDATES["A"]) <= set(dev.columns)
    assert dev[CANDIDATES["A"]].notna().all().all()
    assert not set(dev["source_id"]) & set(test["source_id"])  # partitions by source


def test_leave_one_benchmark_out_scores_each_held_out_test_partition(parts):
    transfers = leave_one_benchmark_out(parts, CANDIDATES["A"], n_resamples=100)
    assert [t.benchmark for t in transfers] == list(parts)
    for t in transfers:
        test = parts[t.benchmark][1]
        assert t.sentences == len(test) and t.unsupported == int(test["label"].sum())
        gap_auc = roc_auc_score(test["label"], suspicion(test, "gap"))
        assert t.intervals.loc["sentence gap", "auc"] == pytest.approx(gap_auc)
        assert 0.5 < t.intervals.loc["candidate", "auc"] < 1
        assert {"lowest sentence gap", "mean gap"} <= set(t.answers.index)


@pytest.fixture(scope="module")
def token_devs():
    """Dev partitions of the token-row caches of TofuEval and the RAGTruth sample."""
    sets = {s.benchmark: s for s in load_cache(RESULTS / "tokens", "smollm2-135m-instruct") if s.full_exact}
    return {name: partitioned(detector_table(sets[name]))[0] for name in ("tofueval", "ragtruth")}


def test_the_threshold_sweep_equals_the_token_features_it_tunes(token_devs):
    sweep = token_threshold_sweep(token_devs)
    assert len(sweep) == len(THRESHOLD_GRID) and list(sweep.columns) == list(token_devs)
    for pair in [(2.0, 2.0), (3.0, 1.0)]:
        dev = with_token_features(token_devs["tofueval"], pair)
        both = (roc_auc_score(dev["label"], suspicion(dev, "gap_dep"))
                + roc_auc_score(dev["label"], suspicion(dev, "unresolved_share"))) / 2
        assert sweep.iloc[THRESHOLD_GRID.index(pair)]["tofueval"] == pytest.approx(both, abs=1e-6)
    # thresholds move the features they define
    low, high = (with_token_features(token_devs["tofueval"], pair)["dep_share"].mean() for pair in [(1.0, 1.0), (4.0, 1.0)])
    assert low > high


def test_token_thresholds_are_tuned_on_the_fit_s_dev_partitions_only(token_devs):
    chosen = tuned_thresholds(token_devs)
    assert chosen == THRESHOLD_GRID[int(token_threshold_sweep(token_devs).mean(axis=1).argmax())]
    alone = {name: tuned_thresholds({name: dev}) for name, dev in token_devs.items()}
    test = token_devs["ragtruth"].head(50)
    _, scored, thresholds = fit_inputs({"tofueval": token_devs["tofueval"]}, test, CANDIDATES["B"])
    assert thresholds == alone["tofueval"]
    assert scored[CANDIDATES["B"]].notna().all().all()
    assert fit_inputs({"tofueval": token_devs["tofueval"]}, test, CANDIDATES["A"])[2] is None


def test_candidate_b_asks_for_token_rows():
    sets = {s.benchmark: s for s in load_cache(CACHE, "smollm2-135m-instruct") if s.full_exact}
    with pytest.raises(ValueError, match=r"candidate B needs token rows for (ragbench|ragtruth|tofueval), .*--token-rows"):
        selection_report(sets, None, "B", "cmd")


def _transfer(name: str, lo: float, hi: float) -> Transfer:
    against = pd.DataFrame({"diff": [(lo + hi) / 2], "lo": [lo], "hi": [hi], "significant": [lo > 0 or hi < 0]},
                           index=["candidate"])
    return Transfer(name, 100, 10, pd.DataFrame(), against)


@pytest.mark.parametrize(
    ("bounds", "split", "adopted"),
    [
        ([(0.01, 0.05), (0.02, 0.04), (-0.01, 0.02)], 0.0, True),
        ([(0.01, 0.05), (0.02, 0.04), (-0.03, -0.01)], 0.01, False),  # significantly worse on the third
        ([(0.01, 0.05), (-0.01, 0.04), (-0.01, 0.02)], 0.01, False),  # better on one only
        ([(0.01, 0.05), (0.02, 0.04), (-0.01, 0.02)], -0.001, False),  # worse on the whole split
        ([(0.01, 0.05), (0.02, 0.04), (0.01, 0.02)], None, False),  # the split not measured
    ],
)
def test_the_adoption_rule(bounds, split, adopted):
    verdict = apply_rule([_transfer(f"b{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)], split)
    assert verdict.adopted is adopted
    assert ("do not adopt" in verdict.text()) is (not adopted)
