"""`eval verifier-selection` (reports/verifier_selection.py, candidate V-135M): a tiny random verifier's
scores from its bundle to the report, the fused partner, the cascade and the balanced accuracy
against hand computations, the rule, and a report that reads nothing of a model without scores."""

import copy
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from groundsense.calibration import RankFusion, rank_share, reference_sample
from groundsense.cli import cli, required_calibration
from groundsense.scorer import Scorer
from groundsense_eval.caches.extract import load_cache
from groundsense_eval.caches.trained_scores import ARTEFACT, ModelScores, load_model_scores
from groundsense_eval.caches.verify import verify
from groundsense_eval.cli.reports import shipped_fusions
from groundsense_eval.data.cases import Case, LabelledSentence
from groundsense_eval.fits.verifier import TrainedVerifier
from groundsense_eval.fits.verifier_bundle import (
    FORMAT,
    MANIFEST,
    TRAINING,
    evaluation_file,
    evaluation_rows,
    write_ids,
)
from groundsense_eval.reports.default_score import product_judgements
from groundsense_eval.reports.fusion import fusion_table
from groundsense_eval.reports.verifier_measures import balanced_accuracy, escalated, partnered
from groundsense_eval.reports.verifier_selection import (
    ALONE,
    CASCADE,
    DEFAULT,
    FUSED,
    measured,
    verdict_lines,
    verifier_selection_report,
    with_verifier,
)
from groundsense_eval.statistics.benchmark_result import partitioned
from groundsense_eval.statistics.bootstrap import BootstrapResult

pytestmark = pytest.mark.numeric

ROOT = Path(__file__).resolve().parents[3]
SCORER = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def tofueval():
    """TofuEval's committed feature set (882 summaries) and its fusion-table rows."""
    (features,) = [s for s in load_cache(ROOT / "results" / "features", SCORER)
                   if s.benchmark == "tofueval" and s.full_exact_at("fp32")]
    return features, fusion_table(features, required_calibration(SCORER, 5))


def invoke(args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def auc_cell(report: str, method: str, heading: str) -> str:
    """The AUC (point) of ``method`` in the table under the heading that starts with ``heading``."""
    section = report.split(f"### {heading}")[1].split("###")[0]
    return re.search(rf"\| {re.escape(method)} \| ([-\d.]+) ", section).group(1)


def test_a_tiny_verifiers_scores_go_from_its_bundle_to_the_report(tiny_scorer, tofueval, tmp_path):
    """A random tiny verifier scores 8 dev and 8 test TofuEval summaries and its training rows from a
    bundle (`eval score-bundle`); the report's AUCs on the test ones are those of its scores, alone
    and as a fifth signal of F, and the model with nothing scored is listed as missing."""
    features, table = tofueval
    tiny_scorer.model.save_pretrained(tmp_path / "base")
    tiny_scorer.tokenizer.save_pretrained(tmp_path / "base")
    TrainedVerifier(Scorer(str(tmp_path / "base"), device="cpu", precision="fp32")).save(tmp_path / ARTEFACT)
    rows = evaluation_rows(features)
    answers = [sorted(set(rows.loc[rows["partition"] == p, "case_id"]))[:8] for p in ("dev", "test")]
    chosen = rows[rows["case_id"].isin(answers[0] + answers[1])]
    rng = np.random.default_rng(0)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    write_ids(bundle / evaluation_file("tofueval"), chosen, [rng.integers(0, 49152, 12).tolist() for _ in chosen.index])
    training = pd.DataFrame({"benchmark": ["ragtruth", "ragbench"] * 10, "task": "QA", "label": [0, 1] * 10})
    write_ids(bundle / TRAINING, training, [rng.integers(0, 49152, 9).tolist() for _ in range(20)])
    (bundle / MANIFEST).write_text(json.dumps({"format": FORMAT, "base": str(tmp_path / "base"), "data": {}}))
    folder = tmp_path / "scores" / "tofueval"
    score = ["eval", "score-bundle", bundle, "--verifier", tmp_path / ARTEFACT, "--device", "cpu"]
    invoke([*score, "--benchmark", "tofueval", "--partition", "dev", "--partition", "test", "-o",
            folder / "scores.parquet"])
    invoke([*score, "--training", "tofueval", "-o", folder / "training-scores.parquet"])
    both = CliRunner().invoke(cli, [str(a) for a in [*score, "--benchmark", "tofueval", "--training", "tofueval",
                                                     "-o", tmp_path / "x.parquet"]])
    assert both.exit_code == 2
    invoke(["eval", "verifier-selection", "--cache", ROOT / "results" / "features", "--split-cache",
            ROOT / "results" / "split-features", "--scores", tmp_path / "scores", "--resamples", 200, "-o",
            tmp_path / "report.md"])
    report = (tmp_path / "report.md").read_text()

    scores = pd.read_parquet(folder / "scores.parquet")
    training_scores = pd.read_parquet(folder / "training-scores.parquet")
    assert len(scores) == len(chosen) and len(training_scores) == 20 and scores["score"].between(0, 1).all()
    test = scores[scores["partition"] == "test"]
    assert auc_cell(report, ALONE, "tofueval") == f"{roc_auc_score(test['label'], test['score']):.3f}"
    rows = with_verifier(partitioned(table)[1], test)
    sentences, _ = product_judgements(rows, required_calibration(SCORER, 5), shipped_fusions(SCORER))
    rank = rank_share(np.sort(reference_sample(training_scores["score"].to_numpy())), rows["verifier"].to_numpy())
    by_hand = (4 * sentences["f"].to_numpy() + rank) / 5
    assert auc_cell(report, FUSED, "tofueval") == f"{roc_auc_score(rows['label'], by_hand):.3f}"
    assert auc_cell(report, DEFAULT, "tofueval") == f"{roc_auc_score(rows['label'], sentences['f']):.3f}"
    cascade = escalated(sentences["f"].to_numpy(), rows["verifier"].to_numpy())
    assert auc_cell(report, CASCADE, "tofueval") == f"{roc_auc_score(rows['label'], cascade):.3f}"
    dev = scores[scores["partition"] == "dev"]
    best = max(np.unique(dev["score"]), key=lambda t: (balanced_accuracy_score(dev["label"], dev["score"] >= t), t))
    accuracy = 100 * balanced_accuracy_score(test["label"], test["score"] >= best)
    assert f"| {best:.3f} | {accuracy:.1f} [" in report  # at dev's best threshold (the highest of equals)
    assert "### ragtruth" not in report and "holds no score of ragtruth" in report
    assert "--training ragbench -o" in report  # the other model: missing, with the command that scores it
    assert "Not evaluated: (b) has no figure on ragbench, ragtruth" in report


def test_a_verifier_that_gives_the_labels_ranks_perfectly_alone(tofueval):
    _, table = tofueval
    test = partitioned(table)[1]
    calibration, fusions = required_calibration(SCORER, 5), shipped_fusions(SCORER)
    perfect = measured(test.assign(verifier=test["label"].astype(float)), np.linspace(0, 1, 50), calibration,
                       fusions, 100, 0)
    assert perfect.point[ALONE] == 1.0 and perfect.point[FUSED] > perfect.point[DEFAULT]
    wrong = measured(test.assign(verifier=1.0 - test["label"]), None, calibration, fusions, 100, 0)
    assert wrong.point[ALONE] == 0.0 and FUSED not in wrong.point  # no training scores: no fused partner


def toy_fusion(overlap: list[float]) -> RankFusion:
    return RankFusion(None, "toy", {}, {"overlap_chunk": overlap, "stem_novel": [0.5], "bigram_novel": [0.5]}, 0, 0)


def test_the_fused_partner_adds_the_verifiers_rank_to_fs_rank_average():
    """A toy F of three signals, by hand: overlap 0.3 ranks 0.5 against [0.2, 0.4] (full) and 0 against
    [0.4, 0.6] (two-pass);
    stems 0.5 ties the reference (0.5); bigrams 1.0 lies above it (1); the verifier's 0.9 ranks
    (2 + 3) / 6 against [0.1, 0.5, 0.9], and 0.05 ranks 0."""
    fusions = {"full": toy_fusion([0.2, 0.4]), "two_pass": toy_fusion([0.4, 0.6])}
    sentences = pd.DataFrame({"overlap_chunk": [0.3, 0.3, 0.3], "stem_novel": [0.5] * 3, "bigram_novel": [1.0] * 3,
                              "served": [True, False, True]})
    fused = partnered(sentences, fusions, np.array([0.9, 0.9, 0.05]), [0.1, 0.5, 0.9])
    np.testing.assert_allclose(fused, [(0.5 + 0.5 + 1 + 5 / 6) / 4, (0 + 0.5 + 1 + 5 / 6) / 4, (0.5 + 0.5 + 1) / 4])
    assert fusions["full"].signal_names == ("overlap_chunk", "stem_novel", "bigram_novel")  # the fusions are kept


def test_the_cascade_puts_fs_most_suspicious_fifth_first_in_the_verifiers_order():
    f = np.array([0.9, 0.1, 0.8, 0.2, 0.3, 0.4, 0.5, 0.6, 0.05, 0.15])
    verifier = np.array([0.1, 0.9, 0.7, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    order = np.argsort(-escalated(f, verifier))
    assert order.tolist() == [2, 0, 7, 6, 5, 4, 3, 9, 1, 8]  # the two escalated (0, 2) by the verifier, then by F


def test_balanced_accuracy_is_the_mean_recall_of_either_label():
    y, flagged = np.array([1, 1, 0, 0, 0] * 4), np.array([1, 0, 0, 0, 1] * 4)
    value, lo, hi = balanced_accuracy(y, flagged, np.arange(20), 200, 0)
    assert value == pytest.approx(7 / 12) == balanced_accuracy_score(y, flagged)
    assert lo < value < hi


def boot(difference: float) -> BootstrapResult:
    """(b) ``difference`` above F, its resamples within ±0.01 of it."""
    spread = np.linspace(-0.01, 0.01, 101)
    return BootstrapResult({FUSED: 0.7, DEFAULT: 0.7 - difference},
                           pd.DataFrame({FUSED: 0.7 + spread, DEFAULT: 0.7 - difference}))


@pytest.mark.parametrize(("differences", "verdict"), [
    ({"tofueval": 0.05, "ragbench": 0.05, "ragtruth": -0.005}, ": adopt."),  # below F, not significantly
    ({"tofueval": 0.05, "ragbench": 0.005, "ragtruth": 0.0}, ": do not adopt."),  # above F on one, significantly
    ({"tofueval": 0.05, "ragbench": 0.05, "ragtruth": -0.05}, ": do not adopt."),
])
def test_the_rule_wants_two_benchmarks_better_and_none_worse(differences, verdict):
    lines = verdict_lines({name: boot(d) for name, d in differences.items()})
    assert lines[0].endswith(verdict)


def test_without_scores_the_report_reads_no_benchmark_and_says_what_makes_them(tmp_path):
    class Unread(dict):
        def __getitem__(self, key):
            raise AssertionError(f"read {key}")

    models = {h: load_model_scores(tmp_path, h) for h in ("tofueval", "ragbench")}
    report = verifier_selection_report(models, Unread(), required_calibration(SCORER, 5), shipped_fusions(SCORER),
                                       "cmd")
    assert "Not evaluated" in report and "No test figure" in report
    for hold_out in models:
        assert f"--training {hold_out} -o {tmp_path / hold_out / 'training-scores.parquet'}" in report
    result = invoke(["eval", "verifier-selection", "--cache", tmp_path / "absent", "--split-cache", tmp_path / "absent",
                     "--scores", tmp_path])  # no feature set is loaded
    assert "## What is missing" in result.output


def test_sentence_scores_come_from_evals_verify_cache_by_the_files_digest(tiny_scorer, tmp_path):
    def fresh():
        return Scorer.from_model(copy.deepcopy(tiny_scorer.model), tiny_scorer.tokenizer, tiny_scorer.name)

    for seed in (0, 1):
        TrainedVerifier(fresh(), seed=seed).save(tmp_path / f"v{seed}.safetensors")
    answer = "The Colosseum is in Rome. It was built by Napoleon."
    case = Case("ragbench:1", "ragbench:src", "QA", "Where?", None, ["The Colosseum is in Rome."], answer,
                [LabelledSentence(0, 25, False), LabelledSentence(26, len(answer), True)], "ragbench", "test")
    verifier = TrainedVerifier.load(tmp_path / "v0.safetensors", scorer=fresh())
    verify(verifier, [case], tmp_path / "verifiers", progress=False)
    (tmp_path / "scores" / "ragbench").mkdir(parents=True)
    shutil.copy(tmp_path / "v0.safetensors", tmp_path / "scores" / "ragbench" / ARTEFACT)
    found = load_model_scores(tmp_path / "scores", "ragbench", tmp_path / "verifiers")
    assert found.sentences["sentence_index"].tolist() == [0, 1] and found.benchmarks() == {"ragbench"}
    np.testing.assert_allclose(found.sentences["score"], verifier.verify(case.sentence_input()).score)
    assert verifier.key in found.source
    shutil.copy(tmp_path / "v1.safetensors", tmp_path / "scores" / "ragbench" / ARTEFACT)  # another model's file
    assert load_model_scores(tmp_path / "scores", "ragbench", tmp_path / "verifiers").sentences is None


def test_a_folder_holding_another_hold_outs_run_is_refused(tmp_path):
    (tmp_path / "ragbench").mkdir()
    (tmp_path / "ragbench" / "manifest.json").write_text(json.dumps({"identity": {"hold_out": "tofueval"}}))
    with pytest.raises(ValueError, match="holding out tofueval"):
        load_model_scores(tmp_path, "ragbench")
    assert ModelScores("ragbench", tmp_path, None, None, None, None).missing()[0].startswith(f"`{tmp_path}")
