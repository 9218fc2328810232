"""`groundsense eval scorer-cost`: the scorer-and-mode table, on the committed RAGTruth caches."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from groundsense_eval.caches.extract import TWO_PASS_FEATURES, load_cache
from groundsense_eval.reports.scorer_cost import ANSWER, SPAN, scorer_table
from groundsense_eval.statistics.benchmark_result import partitioned

CACHE = Path(__file__).resolve().parents[3] / "results" / "features"


def default_full_set():
    (found,) = [s for s in load_cache(CACHE, "smollm2-135m-instruct") if s.benchmark == "ragtruth" and s.full_exact]
    return found


def as_two_pass(features):
    """The same answers as a two-pass extraction stores them: no leave-one-out columns."""
    loo = [c for c in features.rows.columns if c.startswith(("drop", "jsd_loo", "neg_drop", "gap_rest"))]
    config = {**features.config, "mode": "two_pass", "leave_one_out": None}
    return replace(features, config=config, key="two-pass-view", rows=features.rows.drop(columns=loo))


def point(cell: str) -> float:
    return float(cell.split(" ")[0])


def test_rows_hold_each_sets_aucs_and_recorded_seconds():
    full = default_full_set()
    table = scorer_table([full, as_two_pass(full)], n_resamples=200).set_index("key")
    assert list(table.index) == ["two-pass-view", full.key]  # two-pass first within a scorer
    dev, test = partitioned(full.table)
    y = test["label"].to_numpy()
    for key in table.index:  # the gap needs only two passes: the same AUC in both modes
        assert point(table.loc[key, SPAN["gap"]]) == round(roc_auc_score(y, -test["gap"]), 3)
    lowest = test.groupby("case_id").agg(label=("label", "max"), gap=("gap", "min"))
    assert point(table.loc[full.key, ANSWER["gap"]]) == round(roc_auc_score(lowest["label"], -lowest["gap"]), 3)
    assert pd.isna(table.loc["two-pass-view", SPAN["sum"]]) and pd.isna(table.loc["two-pass-view", ANSWER["sum"]])
    assert point(table.loc[full.key, SPAN["sum"]]) > 0.6
    seconds = full.sentences.drop_duplicates("case_id")["seconds"]
    assert np.isclose(table.loc[full.key, "recorded seconds per answer"], seconds.mean())
    assert table.loc[full.key, "answers"] == 600 and table.loc[full.key, "passes"] == "K+2, K=5"
    assert set(TWO_PASS_FEATURES) <= set(as_two_pass(full).rows.columns)


def test_timings_fill_the_cost_and_add_the_configurations_not_scored_yet():
    full = default_full_set()
    timings = {"timings": [
        {"scorer": full.config["scorer"], "mode": "full", "n_parameters": full.config["n_parameters"],
         "seconds_per_answer": 1.5, "relative_to_default_full": 1.0},
        {"scorer": "qwen2.5-coder-1.5b-instruct", "mode": "two_pass", "n_parameters": 1_543_714_304,
         "seconds_per_answer": 4.0, "relative_to_default_full": 2.7},
    ]}
    table = scorer_table([full], timings, n_resamples=200)
    assert list(table["scorer"]) == [full.config["scorer"], "qwen2.5-coder-1.5b-instruct"]
    scored, pending = table.iloc[0], table.iloc[1]
    assert (scored["benchmark seconds per answer"], scored["relative cost"]) == (1.5, 1.0)
    assert point(scored[SPAN["gap"]]) > 0.6 and scored["answers"] == 600
    assert (pending["parameters (M)"], pending["passes"], pending["benchmark seconds per answer"]) == (1544, "2", 4.0)
    assert pd.isna(pending[SPAN["gap"]]) and pd.isna(pending[ANSWER["gap"]]) and pending["answers"] == 0


def test_a_timed_two_pass_configuration_takes_the_gap_of_its_scorers_full_set():
    full = default_full_set()
    two_pass = {"scorer": full.config["scorer"], "mode": "two_pass", "n_parameters": full.config["n_parameters"],
                "seconds_per_answer": 0.5, "relative_to_default_full": 0.3}
    derived = scorer_table([full], {"timings": [two_pass]}, n_resamples=200).set_index("key")
    (key,) = [k for k in derived.index if k != full.key]
    assert key.startswith(f"— (gap of {full.key}")
    for column in (SPAN["gap"], ANSWER["gap"], "test answers"):
        assert derived.loc[key, column] == derived.loc[full.key, column]
    assert pd.isna(derived.loc[key, SPAN["sum"]]) and pd.isna(derived.loc[key, "recorded seconds per answer"])
    unscored = {"scorer": "qwen2.5-coder-1.5b-instruct", "n_parameters": 1_543_714_304, "seconds_per_answer": 9.0,
                "relative_to_default_full": 6.0}  # full timed before two-pass: neither has a set, neither copies
    pending = scorer_table([full], {"timings": [{**unscored, "mode": m} for m in ("full", "two_pass")]},
                           n_resamples=200)
    assert pending.iloc[1:]["key"].eq("— (not scored yet)").all() and pending.iloc[1:][SPAN["gap"]].isna().all()
    scored = scorer_table([full, as_two_pass(full)], {"timings": [two_pass]}, n_resamples=200)
    assert "two-pass-view" in set(scored["key"]) and not scored["key"].str.startswith("— (gap").any()


def test_the_committed_two_pass_run_gives_the_full_runs_gap():
    """What lets a two-pass row take its gap from a full set (docs/scorers.md: "agree to 1.5e-5 nats")."""
    sets = {s.config["mode"]: s for s in load_cache(CACHE, "smollm2-135m-instruct")
            if s.benchmark == "ragtruth" and s.config.get("leave_one_out") != "masked"}
    index = ["case_id", "sentence_index"]
    two_pass, full = (sets[m].sentences.set_index(index)["gap"] for m in ("two_pass", "full"))
    assert two_pass.index.equals(full.index) and two_pass.isna().equals(full.isna())
    assert (two_pass - full).abs().max() < 1.5e-5
