"""`groundsense eval operating`'s default report: the fused score's flags at each operating
point, as :func:`product_judgements` judges the sentences, beside word overlap flagging as many."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, precision_score, recall_score

from groundsense.calibration import LexicalFusions, shipped_calibration
from groundsense.weights import DEFAULT_SCORER
from groundsense_eval.reports.default_score import product_judgements
from groundsense_eval.reports.fused_operating import TARGETS, point_rows, thresholds_table
from groundsense_eval.reports.operating import OVERLAP_POINT, OperatingPoint

CALIBRATION = shipped_calibration(DEFAULT_SCORER, 5)
SHIPPED = LexicalFusions.shipped(DEFAULT_SCORER, "fp32")
FUSIONS = {"full": SHIPPED.full, "two_pass": SHIPPED.two_pass}


def sentences(seed: int = 0, n_answers: int = 60) -> pd.DataFrame:
    """Scored sentences, three an answer and two answers a source, a third of the answers in a
    chunk count the calibration does not serve (judged by two-pass mode's fusion)."""
    rng = np.random.default_rng(seed)
    n = 3 * n_answers
    label = rng.uniform(size=n) < 0.3
    answer = np.repeat(np.arange(n_answers), 3)
    rows = pd.DataFrame({
        "case_id": [f"c{a}" for a in answer], "source_id": [f"s{a // 2}" for a in answer],
        "label": label.astype(int), "status": "scored", "n_chunks": np.where(answer % 3 == 0, 7, 5),
        "gap": rng.normal(0.8, 0.8, n) - label, "jsd_noctx": rng.uniform(0, 0.3, n),
        "drop_max": rng.uniform(0, 2, n), "jsd_loo_max": rng.uniform(0, 0.2, n),
        "overlap_chunk": rng.uniform(size=n) + 0.3 * label, "stem_novel": rng.uniform(size=n) + 0.2 * label,
        "bigram_novel": rng.uniform(size=n)})
    inputs = {f: rows[f].to_numpy() for f in CALIBRATION.inputs}
    return rows.assign(sensitivity=CALIBRATION.score("sensitivity", inputs))


def value(cell: str) -> float:
    return float(cell.split(" [")[0])


def test_each_point_flags_as_the_product_does_and_word_overlap_flags_as_many():
    judged_sentences, answers = product_judgements(sentences(), CALIBRATION, FUSIONS)
    assert 0 < (~answers["served"]).sum() < len(answers)  # both fusions judge some answers
    table = pd.DataFrame(point_rows(judged_sentences, answers, FUSIONS, n_resamples=50, seed=0))
    rows = table.set_index(["operating point", "level"])
    fitted = OperatingPoint().name
    y, flags = judged_sentences["label"], judged_sentences["f_flag"]
    assert rows.loc[(fitted, "sentence"), "n"] == len(judged_sentences)
    assert value(rows.loc[(fitted, "sentence"), "precision"]) == pytest.approx(precision_score(y, flags), abs=5e-4)
    assert value(rows.loc[(fitted, "sentence"), "recall"]) == pytest.approx(recall_score(y, flags), abs=5e-4)
    assert value(rows.loc[(fitted, "answer"), "f1"]) == pytest.approx(
        f1_score(answers["label"], answers["f_flag"]), abs=5e-4)
    for level in ("sentence", "answer"):  # as many flagged (ties aside)
        assert value(rows.loc[(OVERLAP_POINT, level), "flag rate"]) == pytest.approx(
            value(rows.loc[(fitted, level), "flag rate"]), abs=0.02)
    for point in TARGETS:
        at = {mode: fusion.target_threshold(point.target_recall, point.target_precision)
              for mode, fusion in FUSIONS.items()}
        flagged = judged_sentences["f"] >= np.where(judged_sentences["served"], at["full"], at["two_pass"])
        blocked = judged_sentences.assign(flag=flagged).groupby("case_id", sort=False)["flag"].max()
        assert value(rows.loc[(point.name, "sentence"), "flag rate"]) == pytest.approx(flagged.mean(), abs=5e-4)
        assert value(rows.loc[(point.name, "answer"), "flag rate"]) == pytest.approx(blocked.mean(), abs=5e-4)


def test_the_thresholds_are_each_fusions_and_a_target_flags_an_answer_by_its_sentences():
    table = thresholds_table(FUSIONS)
    fitted = table.loc[OperatingPoint().name]
    assert fitted["full mode, sentence"] == SHIPPED.full.threshold
    assert fitted["two-pass mode, answer"] == SHIPPED.two_pass.answer_threshold
    target = table.loc["--target-recall 0.8"]
    assert target["full mode, sentence"] == SHIPPED.full.target_threshold(0.8, None)
    assert target["full mode, answer"] == "a flagged sentence"
