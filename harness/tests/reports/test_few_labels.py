"""The few-label fit's learning curve on held-out sources (groundsense_eval.reports.few_labels), on
synthetic features where the truth is known."""

import numpy as np
import pandas as pd
import pytest
from helpers.labelled_sentences import DEFAULT, labelled_sentences

from groundsense_eval.reports.few_labels import DRAWS, SIZES, curve, curve_table, draw_answers, goal_text

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

def test_a_draw_takes_whole_sources_but_the_last():
    by_source = {s: [f"{s}-{i}" for i in range(3)] for s in "abcdefg"}
    drawn, touched = draw_answers(by_source, 7, np.random.default_rng(0))
    assert len(drawn) == 7 and len(touched) == 3
    assert sum(set(answers) <= drawn for s, answers in by_source.items() if s in touched) == 2


def test_the_learning_curve_judges_on_sources_not_drawn():
    features, labels, answers, sources = labelled_sentences(n_sources=200, per_source=2, sentences=3)
    dev = pd.DataFrame({**features, "label": labels, "case_id": answers, "source_id": sources})
    draws = curve(dev, DEFAULT)
    assert list(draws["n"].unique()) == [n for n in SIZES if n < 400] and (draws.groupby("n").size() == DRAWS).all()
    assert (draws["answers evaluated"] == 400 - draws["n"] - draws["n"] % 2).all()  # sources, not answers, held out
    assert (draws["fitted AUC"] > draws["default AUC"]).mean() > 0.9
    assert (draws["fitted AUC"] > draws["word overlap AUC"]).all() and (draws["word overlap AUC"] > 0.5).mean() > 0.9
    table = curve_table(draws)
    assert list(table.index) == ["50 answers", "100 answers", "200 answers"]
    assert "word overlap AUC" in table.columns
    assert "The goal holds" in goal_text({"a": draws, "b": draws}) and "is missed" in goal_text({"a": draws})


def test_against_the_fused_default_the_curve_judges_the_shipped_fused_score_on_the_same_rows():
    from groundsense.calibration import LexicalFusions, shipped_calibration

    calibration = shipped_calibration("smollm2-135m-instruct", None)
    fusions = LexicalFusions.shipped("smollm2-135m-instruct", "fp32")
    features, labels, answers, sources = labelled_sentences(n_sources=200, per_source=2, sentences=3)
    dev = pd.DataFrame({**features, "label": labels, "case_id": answers, "source_id": sources,
                        "n_chunks": np.where(sources % 2 == 0, 5, 7)})  # half in a chunk count none serves
    against_fused, against_sensitivity = curve(dev, calibration, fusions=fusions), curve(dev, calibration)
    assert (against_fused["fitted AUC"] == against_sensitivity["fitted AUC"]).all()  # the same fits and draws
    assert (against_fused["default AUC"] != against_sensitivity["default AUC"]).all()
    assert (against_fused["word overlap AUC"] == against_sensitivity["word overlap AUC"]).all()


def test_a_dev_partition_too_small_for_any_draw_gives_no_curve_and_says_so():
    """A `--limit` cache's dev partition of 40 answers: no size is drawn, and the report says so
    instead of failing with a traceback."""
    features, labels, answers, sources = labelled_sentences(n_sources=20, per_source=2, sentences=3)
    dev = pd.DataFrame({**features, "label": labels, "case_id": answers, "source_id": sources})
    draws = curve(dev, DEFAULT)
    assert draws.empty and "n" in draws.columns
    assert curve_table(draws).empty
    assert "Mean AUC differences at 200: none, no benchmark has draws of that size. The goal is missed" in (
        goal_text({"small": draws}))


def test_the_report_says_when_a_benchmark_gives_no_curve(tmp_path):
    """The committed TofuEval cache cut to its first 40 answers, as a `--limit 40` run holds them."""
    from pathlib import Path

    from helpers.cut_cache import first_answers

    from groundsense_eval.caches.extract import load_cache
    from groundsense_eval.reports.few_labels import learning_curve_report

    (whole,) = [s for s in load_cache(Path(__file__).parents[3] / "results" / "features", "smollm2-135m-instruct")
                if s.benchmark == "tofueval" and s.full_exact]
    first_answers(whole, tmp_path, 40)
    (small,) = load_cache(tmp_path)
    report = learning_curve_report({"tofueval": small}, DEFAULT, "groundsense eval learning-curve")
    assert "No curve: no size could be drawn (it takes more than 50 dev answers" in report
