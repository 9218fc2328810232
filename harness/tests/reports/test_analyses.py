"""The analyses beyond Tables 3-9, on small hand-made tables."""

import json

import numpy as np
import pandas as pd
import pytest
from helpers.plugin_verifier import install
from helpers.synthetic_features import feature_set

from groundsense.features import GROUNDING
from groundsense_eval.caches.attribution import attribution_pairs, attribution_summary
from groundsense_eval.caches.store import write_part
from groundsense_eval.caches.verifier_scores import join_scores, load_verifier_cache
from groundsense_eval.reports.report import write_report
from groundsense_eval.statistics.benchmark_result import cost_table, evaluate_set, partitioned
from groundsense_eval.statistics.compare import compare_verifier, flagging_table, table7, table8
from groundsense_eval.statistics.escalation import cascade_scores, cascade_table
from groundsense_eval.statistics.frontier import frontier_table
from groundsense_eval.statistics.metrics import auc_or_nan
from groundsense_eval.statistics.signed import kind_separation, with_signed


def unsupported_part(n_sources: int, seed: int, conflict_shift: float) -> pd.DataFrame:
    """Unsupported sentences, a third conflicting; a conflict's drops are shifted by ``conflict_shift``."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_sources * 4):
        conflict = i % 3 == 0
        drops = rng.normal(0, 0.1, 3) + (conflict_shift if conflict else 0.0)
        rows.append({"source_id": f"s{i // 4}", "label": 1, "type": "conflict" if conflict else "baseless",
                     "gap": rng.normal(), "drops": drops.tolist(),
                     **{f: rng.normal() for f in GROUNDING if f != "gap"}})
    return pd.DataFrame(rows)


def verifier_rows(table: pd.DataFrame, noise: float, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "case_id": table["case_id"], "sentence_index": table["sentence_index"].astype("Int32"),
        "score": table["label"] + rng.normal(0, noise, len(table)), "seconds": 0.5, "gflops": 10.0,
        "status": "scored", "error": None,
    })


def test_signed_columns_come_from_gap_and_drops():
    table = with_signed(pd.DataFrame({"gap": [1.0, 0.5], "drops": [[0.4, -0.2], [-0.1, -0.3]]}))
    assert table["drop_min"].tolist() == [-0.2, -0.3]
    assert table["neg_drop_mass"].tolist() == pytest.approx([0.2, 0.4])
    assert table["gap_rest"].tolist() == pytest.approx([0.6, 0.6])


def test_kind_is_reliable_only_when_signed_features_separate_conflicts():
    separated = kind_separation(unsupported_part(40, 0, -1.0), unsupported_part(30, 1, -1.0), n_resamples=200)
    assert separated.reliable
    assert separated.table().loc["drop_min", "auc"] > 0.9 and separated.orientation["drop_min"] == -1
    mixed = kind_separation(unsupported_part(40, 0, 0.0), unsupported_part(30, 1, 0.0), n_resamples=200)
    assert not mixed.reliable
    assert mixed.n_conflict == 40 and mixed.n_baseless == 80 and mixed.n_sources == 30
    assert kind_separation(unsupported_part(5, 0, 0.0).assign(type="baseless"), unsupported_part(5, 1, 0.0)) is None


def test_a_strong_verifier_beats_the_detector_and_complements_it():
    fs = feature_set("a", 0)
    dev, test = partitioned(fs.table)
    strong = compare_verifier(dev, test, verifier_rows(fs.rows, 0.3), "strong", n_resamples=200)
    weak = compare_verifier(dev, test, verifier_rows(fs.rows, 50.0), "weak", n_resamples=200)
    t7 = table7([strong, weak])
    assert t7.loc["strong", "verifier"] > 0.9 and "sentence gap" in t7.loc["strong", "beats"]
    assert t7.loc["weak", "beats"] == "—"
    assert t7.loc["strong", "n"] == len(test)
    t8 = table8([strong, weak])
    assert t8.loc["weak", "Δ1 lo"] > 0  # the grounding features add to a useless verifier
    assert abs(t8.loc["weak", "ρ sentence gap"]) < 0.3
    flags = flagging_table([strong, weak])
    assert flags.loc["strong", "verifier f1"] > flags.loc["weak", "verifier f1"]
    assert flags.loc["strong", "Brier calibrated"] < flags.loc["strong", "Brier base rate"]
    assert flags.loc["strong", "sentence gap f1"] == flags.loc["weak", "sentence gap f1"]  # same sentences


@pytest.mark.parametrize(("kind", "installed"), [("judge", False), ("words", True), ("words", False)])
def test_a_raw_brier_score_is_given_for_a_kind_whose_scores_are_probabilities(tmp_path, monkeypatch, kind, installed):
    if installed:  # docs/verifiers.md's "words" kind, whose scores are probabilities
        install(tmp_path, monkeypatch)
    fs = feature_set("a", 0)
    dev, test = partitioned(fs.table)
    rows = verifier_rows(fs.rows, 0.3).assign(score=lambda frame: frame["score"].clip(0, 1))
    rows.attrs["config"] = {"verifier": kind}
    brier = compare_verifier(dev, test, rows, "v", n_resamples=50).flagging_row()["Brier raw"]
    assert bool(np.isnan(brier)) == (kind == "words" and not installed)  # a kind not installed here cannot say


def test_table_7_holds_the_verifier_against_word_overlap_where_the_sentences_carry_it():
    fs = feature_set("a", 0)
    rng = np.random.default_rng(1)
    table = fs.table.assign(overlap_chunk=fs.table["label"] * 0.5 + rng.uniform(size=len(fs.table)))
    dev, test = partitioned(table)
    strong = compare_verifier(dev, test, verifier_rows(fs.rows, 0.3), "strong", n_resamples=200)
    weak = compare_verifier(dev, test, verifier_rows(fs.rows, 50.0), "weak", n_resamples=200)
    t7 = table7([strong, weak])
    assert t7.loc["strong", "word overlap"] == t7.loc["weak", "word overlap"] > 0.6  # the same sentences
    assert "word overlap" in t7.loc["strong", "beats"] and t7.loc["weak", "Δ vs word overlap hi"] < 0
    plain = partitioned(fs.table)
    assert "word overlap" not in table7([compare_verifier(*plain, verifier_rows(fs.rows, 0.3), "v", n_resamples=200)])


def test_the_verifier_is_joined_on_its_scored_sentences_only():
    table = pd.DataFrame({"case_id": ["a", "a", "b"], "sentence_index": [0, 1, 0], "label": [0, 1, 0]})
    rows = verifier_rows(table, 0.0).assign(status=["scored", "error", "scored"], score=[0.1, np.nan, 0.2])
    joined = join_scores(table, rows)
    assert joined[["case_id", "sentence_index"]].values.tolist() == [["a", 0], ["b", 0]]
    assert joined["verifier"].tolist() == [0.1, 0.2] and (joined["verifier_gflops"] == 10.0).all()


def test_verifier_cache_is_read_by_key_with_its_config(tmp_path):
    folder = tmp_path / "ragtruth" / "judge-x__1234"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"name": "judge", "n_parameters": 5}))
    rows = verifier_rows(pd.DataFrame({"case_id": ["a"], "sentence_index": [0], "label": [1]}), 0.0)
    write_part(folder, rows)
    caches = load_verifier_cache(tmp_path, "ragtruth")
    assert list(caches) == ["judge-x__1234"] and caches["judge-x__1234"].attrs["config"]["n_parameters"] == 5
    for part in folder.glob("part-*.parquet"):
        part.unlink()
    write_part(folder, rows.drop(columns="gflops"))
    with pytest.raises(ValueError, match="gflops"):
        load_verifier_cache(tmp_path, "ragtruth")


def test_cascade_ranks_escalated_sentences_first_by_the_verifier():
    detector = np.array([0.9, 0.8, 0.1, 0.2])
    verifier = np.array([0.1, 0.7, 0.9, 0.3])
    scores = cascade_scores(detector, verifier, np.array([True, True, False, False]))
    assert np.argsort(-scores).tolist() == [1, 0, 3, 2]


def test_cascade_goes_from_the_detector_to_the_verifier_and_adds_its_cost():
    fs = feature_set("a", 0)
    dev, test = partitioned(fs.table)
    comparison = compare_verifier(dev, test, verifier_rows(fs.rows, 0.3), "v", n_resamples=200)
    cost = cost_table(fs)
    table = cascade_table(comparison, "sentence gap", cost, rates=(0.2, 1.0), n_resamples=200)
    y = comparison.test["label"].to_numpy()
    assert table.loc["sentence gap alone", "auc"] == pytest.approx(
        auc_or_nan(y, comparison.detector_scores["sentence gap"]))
    assert table.loc["escalate 100%", "auc"] == pytest.approx(table.loc["verifier alone", "auc"])
    gap_gflops = cost.loc["sentence gap", "gflops"]
    assert table.loc["escalate 20%", "gflops"] == pytest.approx(
        gap_gflops + 10.0 * table.loc["escalate 20%", "escalated"])
    assert table.loc["verifier alone", "gflops"] == 10.0 and table.loc["sentence gap alone", "gflops"] == gap_gflops
    assert (table.loc["sentence gap alone", "auc"] < table.loc["escalate 20%", "auc"]
            < table.loc["verifier alone", "auc"])


def test_frontier_lists_every_configuration_and_verifier_once():
    results = [evaluate_set(feature_set("a", 0), n_resamples=200), evaluate_set(feature_set("a", 2, mode="two_pass"))]
    comparison = compare_verifier(results[0].dev, results[0].test, verifier_rows(results[0].features.rows, 0.3), "v",
                                  n_resamples=200)
    frame = frontier_table(results, {"a-tiny__full-k5-0000": [comparison]})
    detectors = frame[frame["kind"] == "detector"]
    assert len(detectors) == 7 + 4  # the full set's methods, the two-pass set's gap methods
    assert "sentence gap (two_pass, K=5)" in set(detectors["method"])
    verifier = frame[frame["kind"] == "verifier"].iloc[0]
    assert verifier["gflops"] == 10.0 and verifier["seconds"] == 0.5 and verifier["auc"] > 0.9
    assert verifier["n"] == comparison.n_test
    assert verifier["gap_same_sentences"] == comparison.span.point["sentence gap"]
    assert verifier["gap_scorer"] == results[0].features.config["scorer"]


def test_frontier_takes_a_verifier_from_the_set_it_scored_most_sentences_of():
    results = [evaluate_set(feature_set("a", 0), n_resamples=200), evaluate_set(feature_set("a", 1), n_resamples=200)]
    rows = verifier_rows(results[1].features.rows, 0.3)
    narrow = compare_verifier(results[0].dev, results[0].test, rows.iloc[: len(rows) // 2], "v", n_resamples=200)
    wide = compare_verifier(results[1].dev, results[1].test, rows, "v", n_resamples=200)
    assert narrow.n_test < wide.n_test
    frame = frontier_table(results, {"a-tiny__full-k5-0000": [narrow, wide]})
    verifiers = frame[frame["kind"] == "verifier"]
    assert len(verifiers) == 1 and verifiers.iloc[0]["n"] == wide.n_test


CHUNKS = {"c1": ["Paris is the capital of France.", "The Seine flows through Paris.", "Cheese is popular."]}


def test_attribution_pairs_use_the_detector_rule_and_word_overlap():
    table = pd.DataFrame({
        "case_id": ["c1", "c1", "c1"], "sentence_index": [0, 1, 2], "label": [0, 0, 1],
        "sentence": ["The Seine flows through Paris.", "Nothing here.", "x"],
        "drops": [[0.5, 0.1, -0.2], [-0.1, -0.2, 0.0], [0.3, 0.0, 0.0]],
    })
    pairs = attribution_pairs(table, CHUNKS, seed=0)
    assert len(pairs) == 3  # one grounded sentence with a positive drop, three picks
    picks = dict(zip(pairs["which"], pairs["chunk"]))
    assert picks["detector"] == 0 and picks["lexical"] == 1 and 0 <= picks["random"] < 3
    assert pairs.loc[pairs["which"] == "lexical", "chunk_text"].item() == CHUNKS["c1"][1]
    with pytest.raises(ValueError, match="chunks rebuilt"):
        attribution_pairs(table.assign(drops=[[0.5, 0.1]] * 3), CHUNKS)


def ratings(n: int) -> pd.DataFrame:
    rows = []
    for i in range(n):
        for which, rating in {"detector": "full", "random": ["none", "partial", "contradicts"][i % 3],
                              "lexical": ["full", "partial"][i % 2]}.items():
            rows.append({"case_id": f"c{i}", "sentence_index": 0, "which": which, "chunk": 0, "rating": rating})
    return pd.DataFrame(rows)


def test_attribution_summary_rates_and_paired_tests():
    summary = attribution_summary(ratings(30))
    assert summary.rates.loc["detector", "supported"] == 1.0
    assert summary.rates.loc["random", "supported"] == pytest.approx(1 / 3)
    assert summary.rates.loc["random", "contradicts"] == pytest.approx(1 / 3)
    tests = summary.tests
    assert tests.loc["detector vs random", "p"] < 0.001 and tests.loc["detector vs random", "detector better"] == 30
    assert tests.loc["detector vs lexical", "pairs"] == 30 and tests.loc["detector vs lexical", "other better"] == 0
    with pytest.raises(ValueError, match="unknown ratings"):
        attribution_summary(ratings(3).assign(rating="maybe"))


def test_report_adds_verifier_and_attribution_sections_when_their_caches_exist(tmp_path):
    fs = feature_set("a", 0)
    fs.rows["drops"] = [[g, -0.1, 0.05] for g in fs.rows["drop_max"]]
    missing = write_report([fs], tmp_path / "bare", n_resamples=200, verifiers=tmp_path / "v",
                           attribution=tmp_path / "r")
    text = missing.read_text()
    assert "No verifier scores under" in text and "No ratings under" in text and "Figure 4" in text
    assert "Signed sensitivity" in text
    folder = tmp_path / "v" / "a" / "judge__0"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    write_part(folder, verifier_rows(fs.rows, 0.3))
    rated = tmp_path / "r" / "a" / fs.key
    rated.mkdir(parents=True)
    ratings(20).to_parquet(rated / "ratings-judge.parquet")
    text = write_report([fs], tmp_path / "full", n_resamples=200, verifiers=tmp_path / "v",
                        attribution=tmp_path / "r").read_text()
    for heading in ("Table 7", "Table 8", "Cascade: sentence gap → judge__0", "Attribution quality", "ratings-judge"):
        assert heading in text
    numbers = json.loads((tmp_path / "full" / "report.json").read_text())
    assert numbers["sets"]["a-tiny__full-k5-0000"]["verifiers"]["table7"]["judge__0"]["verifier"] > 0.9
    assert any(row["kind"] == "verifier" for row in numbers["frontier"])
    assert (tmp_path / "full" / "figures" / "frontier-a.png").exists()


def test_a_contextcite_run_gives_both_variants(tmp_path):
    folder = tmp_path / "ragtruth" / "contextcite-x__1234"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"verifier": "contextcite", "params": {"variant": "raw"}}))
    table = pd.DataFrame({"case_id": ["a", "a"], "sentence_index": [0, 1], "label": [1, 0]})
    raw, per_token = np.array([2.0, 0.0]), np.array([0.5, 0.0])
    write_part(folder, verifier_rows(table, 0.0).assign(
        score=-raw, attribution_max=raw, attribution_max_per_token=per_token))
    caches = load_verifier_cache(tmp_path, "ragtruth")
    assert list(caches) == ["contextcite-x__1234", "contextcite-x__1234~per_token"]
    assert caches["contextcite-x__1234~per_token"]["score"].tolist() == [-0.5, 0.0]
    assert caches["contextcite-x__1234~per_token"].attrs["config"]["params"]["variant"] == "per_token"
