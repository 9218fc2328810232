"""The last section of the candidate-J report: the shipped fusion's flags and AUCs on judged
test rows, beside the shipped detector's flags."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import precision_score, recall_score, roc_auc_score

from groundsense.calibration import RankFusion, shipped_calibration, shipped_fusion
from groundsense_eval.reports.fusion import Domain, label_free_score
from groundsense_eval.reports.fusion_judge import (
    JUDGE,
    REFERENCES,
    cascade_scores,
    flag_rows,
    fused_levels,
    judge_spec,
    reference_aucs,
    shipped_fusion_section,
)
from groundsense_eval.reports.operating import OperatingPoint, judged

SHIPPED = shipped_fusion(judge_spec())
CALIBRATION = shipped_calibration(SHIPPED.scorer, 5)


def judged_rows(seed: int = 0, n_answers: int = 40) -> pd.DataFrame:
    """Judged sentences as the report's test partitions hold them: three per answer, two answers a source."""
    rng = np.random.default_rng(seed)
    n = 3 * n_answers
    label = rng.uniform(size=n) < 0.3
    features = {"gap": rng.normal(0.8, 0.8, n) - label, "jsd_noctx": rng.uniform(0, 0.3, n),
                "drop_max": rng.uniform(0, 2, n), "jsd_loo_max": rng.uniform(0, 0.2, n),
                "overlap_chunk": rng.uniform(size=n) + 0.3 * label, "stem_novel": rng.uniform(size=n),
                "bigram_novel": rng.uniform(size=n), JUDGE: np.clip(rng.uniform(size=n) + 0.3 * label, 0, 1)}
    answer = np.repeat(np.arange(n_answers), 3)
    rows = pd.DataFrame({"case_id": [f"c{a}" for a in answer], "source_id": [f"s{a // 2}" for a in answer],
                         "label": label.astype(int), "status": "scored", "n_chunks": 5, **features})
    inputs = {f: rows[f].to_numpy() for f in CALIBRATION.inputs}
    return rows.assign(sensitivity=CALIBRATION.score("sensitivity", inputs))


def value(cell: str) -> float:
    return float(cell.split(" [")[0])


def test_an_answer_is_flagged_by_its_top_two_mean_or_any_flagged_sentence():
    fusion = RankFusion("judge:test", "tiny", {}, {}, threshold=0.6, answer_threshold=0.45)
    rows = pd.DataFrame({"case_id": ["a", "a", "a", "b", "b", "b", "c", "c"], "source_id": "s",
                         "label": [0, 1, 0, 1, 0, 0, 0, 0]})
    fused = np.array([0.5, 0.5, 0.1, 0.7, 0.0, 0.0, 0.4, 0.3])
    levels = fused_levels(fusion, rows, fused)
    assert levels["sentence"][1].tolist() == [False, False, False, True, False, False, False, False]
    labels, blocked, sources = levels["answer"]
    assert blocked.tolist() == [True, True, False]  # a: top two 0.5 >= 0.45; b: 0.7 flagged; c: neither
    assert labels.tolist() == [1, 1, 0] and sources.tolist() == ["s", "s", "s"]


def test_the_flags_point_values_are_sklearns_on_the_same_sentences():
    rows = judged_rows()
    table = flag_rows(SHIPPED, CALIBRATION, rows, n_resamples=50, seed=0)
    assert list(table.index) == ["fused cascade, sentence", "fused cascade, answer", "shipped detector, sentence",
                                 "shipped detector, answer", "F1, fused − detector, sentence",
                                 "F1, fused − detector, answer"]
    fused_flags = cascade_scores(SHIPPED, rows) >= SHIPPED.threshold
    frame = judged(CALIBRATION, rows, OperatingPoint())
    detector_flags = frame["score"] >= frame["threshold"]
    for name, flags in (("fused cascade, sentence", fused_flags), ("shipped detector, sentence", detector_flags)):
        assert table.loc[name, "n"] == len(rows)
        assert value(table.loc[name, "precision"]) == pytest.approx(precision_score(rows["label"], flags), abs=5e-4)
        assert value(table.loc[name, "recall"]) == pytest.approx(recall_score(rows["label"], flags), abs=5e-4)
        assert value(table.loc[name, "flag rate"]) == pytest.approx(np.mean(flags), abs=5e-4)
    assert table.loc["fused cascade, answer", "n"] == rows["case_id"].nunique()
    for level in ("sentence", "answer"):
        f1 = [value(table.loc[f"{method}, {level}", "f1"]) for method in ("fused cascade", "shipped detector")]
        assert value(table.loc[f"F1, fused − detector, {level}", "f1"]) == pytest.approx(f1[0] - f1[1], abs=1e-3)


def test_the_fused_score_by_the_files_and_by_own_references():
    rows = judged_rows(1)
    domain = Domain("test", judged_rows(2), rows)
    table = reference_aucs(SHIPPED, domain, rows, n_resamples=50, seed=0)
    signals = ["sensitivity", JUDGE, "overlap_chunk", "stem_novel", "bigram_novel"]
    shipped = roc_auc_score(rows["label"], cascade_scores(SHIPPED, rows))
    own = roc_auc_score(rows["label"], label_free_score("rank average", domain.dev, rows, signals))
    assert value(table.loc[REFERENCES[0], "sentence AUC"]) == pytest.approx(shipped, abs=5e-4)
    assert value(table.loc[REFERENCES[1], "sentence AUC"]) == pytest.approx(own, abs=5e-4)
    assert value(table.loc["shipped − own", "sentence AUC"]) == pytest.approx(shipped - own, abs=1e-3)
    assert list(table.columns) == ["sentence AUC", "answer AUC"]


def test_the_shipped_section_says_what_the_files_references_are_and_its_thresholds():
    domain = Domain("test", judged_rows(2), judged_rows(1))
    lines = shipped_fusion_section([domain], CALIBRATION, n_resamples=50, seed=0)
    intro = lines[2]
    assert f"the file's references ({SHIPPED.made_with['fitted_on']}," in intro
    assert f"fused score ≥ {SHIPPED.threshold:.3f}" in intro and f"reaches {SHIPPED.answer_threshold:.3f}" in intro
    assert "### test: 120 sentences" in lines[4]


def test_a_fusion_fitted_on_training_answers_ranks_against_them_and_flags_at_their_best_f1():
    """`eval fusion --fit-fusion --train-cache … --train-judges …`: what ships once the judge has
    scored the shipped calibration's training answers."""
    from groundsense.calibration import JUDGE_FUSION_SIGNALS, best_f1_threshold, reference_sample
    from groundsense_eval.fits.judge_fusion import fit_training_fusion

    rows = judged_rows(seed=3, n_answers=60)
    fitted = fit_training_fusion(rows, CALIBRATION, "groundsense eval fusion …")
    for name in JUDGE_FUSION_SIGNALS:  # every reference is the training sentences' own values
        assert fitted.references[name] == reference_sample(rows[JUDGE if name == "judge" else name].to_numpy(float))
    fused = cascade_scores(fitted, rows)
    assert fitted.threshold == best_f1_threshold(fused, rows["label"].to_numpy())
    made = fitted.made_with
    assert made["fitted_on"] == "the shipped calibration's RAGTruth training answers"
    assert made["n_answers"] == 60 and made["n_sentences"] == len(rows) == made["data"]["ragtruth"]["sentences"]
    assert made["on_labelled_set"]["sentence"]["auc"] == pytest.approx(roc_auc_score(rows["label"], fused), abs=1e-4)


@pytest.mark.parametrize("mode", ["full", "two_pass"])
def test_the_lexical_fusion_fitted_on_training_answers(mode):
    """`eval fusion --fit-fusion --train-cache …` without judges: the lexical fusion's references
    are the training sentences' values, its answer rule the logistic map of their fused scores,
    and its thresholds the sentences' best F1 and the best Youden's J of the answers' verdict (a
    sentence flagged, or their length-aware noisy-OR at the threshold)."""
    from groundsense.calibration import (
        answer_scores,
        best_f1_threshold,
        forced_scores,
        reference_sample,
        youden_threshold,
    )
    from groundsense_eval.fits.lexical_fusion import fit_lexical_fusion
    from groundsense_eval.reports.aggregation import probability_map

    rows = judged_rows(seed=4, n_answers=60)
    fitted = fit_lexical_fusion(rows, CALIBRATION, mode, "fp32", "groundsense eval fusion …")
    values = fitted.signals({name: rows[name].to_numpy(float) for name in fitted.inputs})
    assert fitted.verifier is None and list(values) == list(fitted.references)
    for name, value in values.items():
        assert fitted.references[name] == reference_sample(value)
    assert values[fitted.signal_names[0]].tolist() == (
        CALIBRATION.score("sensitivity", {f: rows[f].to_numpy() for f in CALIBRATION.inputs}) if mode == "full"
        else -rows["gap"].to_numpy()).tolist()
    fused, labels = fitted.score(values), rows["label"].to_numpy()
    intercept, coefficient = probability_map(fused, labels)
    assert fitted.answer_rule == {"aggregation": "length-aware noisy-OR", "intercept": intercept,
                                  "coefficient": coefficient}
    assert fitted.threshold == best_f1_threshold(fused, labels)
    answers = rows["case_id"].to_numpy()
    top, unsupported = answer_scores(answers, fused, labels, fitted.answer_score)
    with_flag = answer_scores(answers, fused >= fitted.threshold, labels, np.max)[0] > 0
    assert fitted.answer_threshold == youden_threshold(forced_scores(top, with_flag), unsupported)
    assert fitted.made_with["n_answers"] == 60 and fitted.made_with["precision"] == "fp32"


@pytest.mark.parametrize("args", [["--train-cache", "results/calibration-tokens"],
                                  ["--train-judges", "results/calibration-verifiers"],
                                  ["--train-cache", "results/calibration-tokens", "--train-judges", "results/x"],
                                  ["--fit-fusion", "f.json", "--train-judges", "results/x"]])
def test_a_training_fit_needs_its_cache_and_fit_fusion(args):
    from helpers.cli import run

    refused = run("eval", "fusion", "--split-cache", "results/split-features", *args)
    assert refused.exit_code == 2
    assert "--train-cache goes with --fit-fusion, and --train-judges with --train-cache" in refused.output


@pytest.mark.parametrize("args", [["--precision", "bf16"], ["--two-pass"],
                                  ["--fit-fusion", "f.json", "--two-pass", "--train-cache",
                                   "results/calibration-tokens", "--train-judges", "results/calibration-verifiers"]])
def test_precision_and_two_pass_are_the_lexical_fusions(args):
    from helpers.cli import run

    refused = run("eval", "fusion", "--split-cache", "results/split-features", *args)
    assert refused.exit_code == 2 and "--precision and --two-pass are the lexical fusion's" in refused.output


def test_the_training_fit_is_refused_until_every_training_sentence_is_judged(tmp_path, monkeypatch):
    """On the committed training features, with the judge's scores of 100 of their answers: the
    count, and what to run."""
    import shutil
    from pathlib import Path

    from helpers.cli import run

    from groundsense_eval.caches.store import read_parts, write_part

    root = Path(__file__).parents[3]
    (judged,) = (root / "results" / "calibration-verifiers" / "ragtruth").iterdir()
    part = tmp_path / "ragtruth" / judged.name
    part.mkdir(parents=True)
    shutil.copy(judged / "config.json", part)
    scores = read_parts(judged)
    write_part(part, scores[scores["case_id"].isin(scores["case_id"].drop_duplicates().head(100))])
    monkeypatch.chdir(root)
    refused = run("eval", "fusion", "--fit-fusion", str(tmp_path / "f.json"), "--train-cache",
                  "results/calibration-tokens", "--train-judges", str(tmp_path))
    assert refused.exit_code == 2, refused.output
    assert "of the 10,702 sentences of the 1,500 training answers" in refused.output
    assert "(in 100 answers)" in refused.output
    assert "scripts/calibration_judge.sh" in refused.output and not (tmp_path / "f.json").exists()
