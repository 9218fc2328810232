"""The detector-selection protocol on the committed feature caches (no scorer needed)."""

from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from groundsense_eval.caches.detector_inputs import detector_table, suspicion, token_threshold_sweep, tuned_thresholds
from groundsense_eval.caches.extract import load_cache
from groundsense_eval.reports.selection import (
    CANDIDATES,
    Transfer,
    apply_rule,
    fit_inputs,
    leave_one_benchmark_out,
    selection_report,
    transfer_table,
    with_overlap,
)
from groundsense_eval.statistics.benchmark_result import partitioned

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

RESULTS = Path(__file__).parents[3] / "results"
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
    table = transfer_table(transfers)
    assert list(table.index) == list(parts)
    for t in transfers:
        assert table.loc[t.benchmark, "candidate"] == t.intervals.loc["candidate", "auc"]


def test_word_overlap_sits_beside_the_candidate_where_the_lexical_signals_are_stored(tmp_path):
    import shutil

    sets = {s.benchmark: s for s in load_cache(CACHE, "smollm2-135m-instruct") if s.full_exact}
    with_lexical = {name: partitioned(with_overlap(fs)) for name, fs in sets.items()}
    transfers = leave_one_benchmark_out(with_lexical, CANDIDATES["A"], n_resamples=100)
    for t in transfers:
        test = with_lexical[t.benchmark][1]
        assert t.intervals.loc["word overlap", "auc"] == pytest.approx(roc_auc_score(test["label"],
                                                                                     test["overlap_chunk"]))
    # stored signals that miss sentences leave the row out instead of failing the report
    folder = tmp_path / "tofueval" / sets["tofueval"].key
    shutil.copytree(sets["tofueval"].folder, folder)
    stale = pd.read_parquet(folder / "lexical.parquet")
    stale.iloc[: len(stale) // 2].to_parquet(folder / "lexical.parquet")
    (copied,) = [s for s in load_cache(tmp_path, "smollm2-135m-instruct") if s.full_exact]
    assert "overlap_chunk" not in with_overlap(copied)


@pytest.fixture(scope="module")
def token_parts():
    """Partitions of the token-row caches of TofuEval and the RAGTruth sample."""
    sets = {s.benchmark: s for s in load_cache(RESULTS / "tokens", "smollm2-135m-instruct") if s.full_exact}
    return {name: partitioned(detector_table(sets[name])) for name in ("tofueval", "ragtruth")}


@pytest.fixture(scope="module")
def sweep(token_parts):
    return token_threshold_sweep({name: dev for name, (dev, _) in token_parts.items()})


@pytest.mark.slow
def test_each_fit_tunes_the_token_thresholds_without_the_held_out_benchmark(token_parts, sweep):
    # Make the held-out benchmark's own dev partition favour another pair: a leak would follow it.
    rigged = sweep.copy()
    rigged.loc[(4.0, 4.0), "ragtruth"] = 10.0
    transfers = leave_one_benchmark_out(token_parts, CANDIDATES["B"], n_resamples=20, sweep=rigged)
    by_held_out = {t.benchmark: t.thresholds for t in transfers}
    assert by_held_out["ragtruth"] == tuned_thresholds(sweep[["tofueval"]])
    assert by_held_out["tofueval"] == (4.0, 4.0)  # fitted on ragtruth's dev, so its rigged score counts
    for t in transfers:
        assert 0.5 < t.intervals.loc["candidate", "auc"] < 1
    devs, scored, thresholds = fit_inputs({"tofueval": token_parts["tofueval"][0]}, token_parts["ragtruth"][1],
                                          CANDIDATES["B"], sweep)
    assert thresholds == by_held_out["ragtruth"] and scored[CANDIDATES["B"]].notna().all().all()
    assert fit_inputs({"tofueval": token_parts["tofueval"][0]}, token_parts["ragtruth"][1], CANDIDATES["A"])[2] is None


def test_candidate_b_asks_for_token_rows():
    sets = {s.benchmark: s for s in load_cache(CACHE, "smollm2-135m-instruct") if s.full_exact}
    with pytest.raises(ValueError,
                       match=r"candidate B needs token rows for (ragbench|ragtruth|tofueval), .*--token-rows"):
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


def test_token_features_without_a_threshold_sweep_are_refused(parts):
    dev, test = parts["tofueval"]
    with pytest.raises(ValueError, match="threshold sweep"):
        fit_inputs({"tofueval": dev}, test, CANDIDATES["B"])
