"""The detector-selection protocol on the committed feature caches (no scorer needed)."""

from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from groundsense.eval.extract import load_cache
from groundsense.eval.benchmark_result import partitioned
from groundsense.eval.selection import (
    CANDIDATES, Transfer, apply_rule, detector_table, leave_one_benchmark_out, suspicion,
)

CACHE = Path(__file__).parents[2] / "results" / "features"


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
