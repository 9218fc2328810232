"""`groundsense fit` end to end with the real default scorer, on 5 labelled RAGTruth train
answers (one QA answer of each of five sources, the shortest that serve): it cross-validates, refuses
to write a fit that is not better, writes one under --force, and `detect --calibration` then
scores with its weights."""

import json

import numpy as np
import pytest
from helpers.cli import run

from groundsense.calibration.calibration import LOGISTIC_FEATURES, LOGISTIC_SIGNALS
from groundsense_eval.data.ragtruth import load_ragtruth
from groundsense_eval.data.rows import case_row

pytestmark = [pytest.mark.slow, pytest.mark.data]

# One answer of each of five sources, three with an unsupported sentence (12 sentences, 3 unsupported),
# so that every cross-validation fold trains on both labels: the shortest such set of answers of two
# sentences or more (scoring them is most of this file's time).
IDS = ["ragtruth:16262", "ragtruth:16049", "ragtruth:16694", "ragtruth:11859", "ragtruth:16555"]


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """The labelled rows, scored once (the features file next to them serves every run)."""
    cases = {c.id: c for c in load_ragtruth(ids=IDS)[0]}
    source = tmp_path_factory.mktemp("fit") / "labelled.jsonl"
    source.write_text("".join(json.dumps(case_row(cases[i], labels=True)) + "\n" for i in IDS))
    return source


def test_fit_refuses_a_fit_that_is_not_better_and_writes_it_under_force(labelled):
    output = labelled.with_name("detector.json")
    refused = run("fit", str(labelled), "-o", str(output), "--no-progress")
    assert "5-fold cross-validation over 5 sources" in refused.stdout  # the rows' source field groups them
    assert "default: the default score (the shipped fused score at fp32)" in refused.stdout
    assert "| fitted − default |" in refused.stdout
    # 5 answers are far too few for the AUC difference's interval to clear 0
    assert refused.exit_code == 1, refused.output
    assert "does not rank significantly better" in refused.stderr and "--force" in refused.stderr
    assert not output.exists()

    forced = run("fit", str(labelled), "-o", str(output), "--no-progress", "--force")
    assert forced.exit_code == 0, forced.output
    assert "writing it anyway (--force)" in forced.stderr and f"wrote {output}" in forced.stderr
    detector = json.loads(output.read_text())
    made = detector["made_with"]
    assert made["answers"] == 5 and made["labelled"] is True
    cv = made["cross_validation"]
    assert cv["groups"] == 5 and cv["grouped_by"] == "source" and cv["better"] is False and cv["folds"] == 5
    assert cv["default"] == "fused (fp32)"
    assert set(cv["auc"]) == {"fitted", "default", "fitted − default"}
    weights = detector["weights"]
    assert set(weights["coefficients"]) == set(LOGISTIC_SIGNALS) == set(weights["stats"])  # lexical signals too
    assert made["fit"]["features"] == list(LOGISTIC_SIGNALS)

    shipped = json.loads(run("detect", "--example", "passages-qa", "--json").stdout)
    fitted = json.loads(run("detect", "--example", "passages-qa", "--json", "--calibration", str(output)).stdout)
    assert fitted["score_rule"] == "sensitivity"
    assert fitted["threshold"] == pytest.approx(detector["thresholds"]["sensitivity"])
    for before, after in zip(shipped["sentences"], fitted["sentences"]):
        values = after["features"]
        inputs = {**values, "log_n_tokens": np.log(values["n_tokens"])}
        log_odds = weights["intercept"] + sum(c * (inputs[f] - weights["stats"][f][0]) / weights["stats"][f][1]
                                              for f, c in weights["coefficients"].items())
        assert after["score"] == pytest.approx(log_odds, abs=1e-6)  # the weights' combination of its features
        assert after["score"] != pytest.approx(before["score"], abs=1e-3)  # not the shipped four-feature sum
        assert after["flagged"] is (after["score"] >= fitted["threshold"])


def test_fit_against_the_shipped_calibration_judges_the_same_fit_by_sensitivity(labelled):
    """`--score sensitivity`: the check's default is the shipped calibration's score, and the
    written weights are the same fit (the default only decides whether it is written)."""
    against_fused = labelled.with_name("against-fused.json")
    assert run("fit", str(labelled), "-o", str(against_fused), "--no-progress", "--force").exit_code == 0
    fused = json.loads(against_fused.read_text())
    output = labelled.with_name("against-sensitivity.json")
    forced = run("fit", str(labelled), "--score", "sensitivity", "-o", str(output), "--no-progress", "--force")
    assert forced.exit_code == 0, forced.output
    assert "default: the shipped calibration" in forced.stdout
    written = json.loads(output.read_text())
    shipped = "ragtruth/smollm2-135m-instruct__full-k5-tokens-87bbb99b"  # the shipped calibration's source
    assert written["made_with"]["cross_validation"]["default"] == shipped
    assert written["weights"] == fused["weights"] and written["thresholds"] == fused["thresholds"]
    cv = written["made_with"]["cross_validation"]
    assert cv["auc"]["fitted"] == fused["made_with"]["cross_validation"]["auc"]["fitted"]  # the same fitted side
    assert cv["auc"]["default"] != fused["made_with"]["cross_validation"]["auc"]["default"]


def test_fit_without_lexical_signals_and_on_features_an_older_version_wrote(labelled):
    """`--no-lexical` fits the scorer's features only; a features file without the lexical
    signals (written before they existed) is refused with what to do."""
    output = labelled.with_name("scorer-only.json")
    scorer_only = run("fit", str(labelled), "-o", str(output), "--no-progress", "--force", "--no-lexical")
    assert scorer_only.exit_code == 0, scorer_only.output
    written = json.loads(output.read_text())
    fitted_on = written["made_with"]["fit"]["features"]
    assert set(written["weights"]["coefficients"]) == set(LOGISTIC_FEATURES) == set(fitted_on)

    records = [json.loads(line) for line in labelled.with_suffix(".features.jsonl").read_text().splitlines()]
    for record in records:
        for sentence in record["sentences"]:
            sentence["features"] = {k: v for k, v in sentence["features"].items() if k in LOGISTIC_FEATURES
                                    or k in ("n_tokens", "gap_rest", "gap_rel", "surprisal_rel")}
    old = labelled.with_name("old.features.jsonl")
    old.write_text("".join(json.dumps(r) + "\n" for r in records))
    output.unlink()
    refused = run("fit", str(labelled), "--features", str(old), "-o", str(output), "--no-progress", "--force")
    assert refused.exit_code == 2 and "lack the lexical signals" in refused.output and "--no-lexical" in refused.output
    assert not output.exists()
    # as the refusal advises: the scorer's features only, checked against sensitivity (the fused score needs the words)
    advised = run("fit", str(labelled), "--features", str(old), "--no-lexical", "-o", str(output), "--no-progress",
                  "--force")
    assert advised.exit_code == 0, advised.output
    assert "checked against the shipped calibration's sensitivity instead" in advised.stderr
    assert json.loads(output.read_text())["made_with"]["cross_validation"]["default"] != "fused (fp32)"


def test_fit_makes_the_default_scores_adjudicator_once(labelled, monkeypatch):
    """It was made before the scoring (to refuse a score the shipped files cannot give) and
    again to give the default's scores; the detector that scores has its own (no calibration)."""
    from groundsense.calibration.adjudicator import Adjudicator

    made, init = [], Adjudicator.__init__
    monkeypatch.setattr(Adjudicator, "__init__", lambda self, config, *args: (made.append(config), init(
        self, config, *args))[1])
    output = labelled.with_name("once.json")
    assert run("fit", str(labelled), "-o", str(output), "--no-progress", "--force").exit_code == 0
    assert [(config.calibration, config.score) for config in made if config.calibration is not False] == [
        (None, "auto")]  # `--score auto`, resolved by the adjudicator


def test_fit_needs_labels_and_says_so_before_scoring(labelled):
    unlabelled = labelled.with_name("unlabelled.jsonl")
    rows = [json.loads(line) for line in labelled.read_text().splitlines()]
    unlabelled.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "labels"}) + "\n" for r in rows[:3]))
    out = run("fit", str(unlabelled), "-o", str(labelled.with_name("x.json")), "--no-progress")
    assert out.exit_code == 2 and "has no 'labels'" in out.output


def test_fit_fuse_learns_weights_on_the_real_scorer_and_detect_flags_by_them(labelled):
    """`fit --fuse` on one answer of each of the five sources, the default scorer also the judge (the shipped fusion's
    statistics, a cheap judge): the file carries a weight per signal and its cross-validation,
    and a fused cascade over it scores each sentence as those weights' log-odds of its ranks."""
    from groundsense.calibration.fusion import JUDGE_FUSION_SIGNALS as SIGNALS
    from groundsense.calibration.fusion import RankFusion

    judge = "judge:smollm2-135m-instruct"
    output = labelled.with_name("fusion.json")
    fitted = run("fit", str(labelled), "--fuse", "--verifier", judge, "-o", str(output), "--no-progress", "--force")
    assert fitted.exit_code == 0, fitted.output
    assert "5-fold cross-validation over 5 sources" in fitted.stdout and f"wrote {output}" in fitted.stderr
    fusion = RankFusion.load(output)
    assert fusion.verifier == judge and set(fusion.weights["coefficients"]) == set(SIGNALS)
    made = fusion.made_with
    assert made["cross_validation"]["groups"] == 5 and made["answers"] == 5 and made["labelled"] is True

    result = json.loads(run("detect", "--example", "passages-qa", "--json", "--verifier", judge, "--fuse",
                            "--fusion", str(output)).stdout)
    scored = [s for s in result["sentences"] if s["status"] == "scored"]
    assert scored
    for sentence in scored:
        features = {name: np.array([value]) for name, value in sentence["features"].items()}
        expected = fusion.score(fusion.signals(features, np.array([sentence["verifier_score"]])))[0]
        assert sentence["fused"] == pytest.approx(expected, abs=1e-9)
        assert sentence["flagged"] is (sentence["fused"] >= fusion.threshold)
