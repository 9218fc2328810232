"""A fused cascade (``Cascade(..., fuse=...)``) on the tiny scorer, whose scores mean nothing:
what is verified, how the fused score decides flags and the answer, and what is refused."""

import json
import math

import numpy as np
import pytest
from helpers.fusions import STATS, fusion

from groundsense.calibration.calibration import shipped_calibration
from groundsense.calibration.fusion import JUDGE_FUSION_SIGNALS as SIGNALS
from groundsense.calibration.fusion import RankFusion, top_two_mean
from groundsense.config import DetectorConfig
from groundsense.errors import InputError
from groundsense.inputs.validate import check_row
from groundsense.pipeline.detector import Detector
from groundsense.verification import Cascade, make_detection
from groundsense.weights import DEFAULT_SCORER

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

PASSAGES = [
    "The Golden Gate Bridge opened to traffic on May 27, 1937, after four years of construction.",
    "The bridge's main span is 4,200 feet long, the longest in the world until 1964.",
]
ANSWER = ("The bridge's main span is 4,200 feet long. The bridge was designed by Gustave Eiffel. "
          "It opened in 1937.")


class ScriptedJudge:
    """A judge whose P(unsupported) is fixed by the sentence's words (NaN: it could not score one)."""

    name = "judge:scripted"

    def __init__(self, scores):
        self.scores, self.calls = scores, []

    def score_sentences(self, question, chunks, sentences):
        self.calls.append(list(sentences))
        return [next(v for word, v in self.scores.items() if word in text) for text in sentences]


JUDGE = {"Eiffel": 0.9, "span": 0.1, "opened": 0.4}


@pytest.fixture
def tiny_detector(tiny_scorer):
    return Detector(tiny_scorer, k=2, calibration=False)


def test_every_sentence_is_verified_and_the_fused_score_decides_the_flags(tiny_detector, tiny_scorer):
    plain = tiny_detector.detect(answer=ANSWER, passages=PASSAGES)
    judge = ScriptedJudge(JUDGE)
    base = fusion(tiny_scorer)
    values = base.signals({name: np.array([s.features[name] for s in plain.sentences]) for name in
                           (*STATS, *SIGNALS[2:])}, np.array([0.1, 0.9, 0.4]))
    expected = base.score(values)
    middle = float(np.sort(expected)[1])  # flags the two highest: the threshold follows the fusion
    result = Cascade(tiny_detector, judge, fuse=RankFusion(**{**vars(base), "threshold": middle,
                                                         "answer_threshold": 2.0})).detect(answer=ANSWER,
                                                                                           passages=PASSAGES)
    assert judge.calls == [[s.text for s in plain.sentences]]  # every sentence, in one call
    assert [s.verifier_score for s in result.sentences] == [0.1, 0.9, 0.4]
    np.testing.assert_allclose([s.fused for s in result.sentences], expected)
    assert [s.flagged for s in result.sentences] == [bool(f >= middle) for f in expected]
    assert [s.score for s in result.sentences] == [s.score for s in plain.sentences]  # the tiny_detector's, kept
    assert result.answer.score == pytest.approx(top_two_mean(expected)) and result.answer.threshold == 2.0
    assert result.answer.flagged is True  # below its answer threshold, but a sentence is flagged
    assert result.cascade == {"verifier": "judge:scripted", "escalate": 1.0, "threshold": middle, "n_escalated": 3}
    assert result.to_dict()["sentences"][0]["fused"] == pytest.approx(expected[0])


def test_the_answer_threshold_flags_the_mean_of_the_top_two(tiny_detector, tiny_scorer):
    result = Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=fusion(tiny_scorer, threshold=1.1)).detect(
        answer=ANSWER, passages=PASSAGES)
    top = top_two_mean(np.array([s.fused for s in result.sentences]))
    assert not any(s.flagged for s in result.sentences)
    for answer_threshold, flagged in ((top, True), (top + 1e-9, False)):
        fused = fusion(tiny_scorer, threshold=1.1, answer_threshold=answer_threshold)
        assert Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=fused).detect(
            answer=ANSWER, passages=PASSAGES).answer.flagged is flagged


def test_a_sentence_the_judge_could_not_score_is_never_supported(tiny_detector, tiny_scorer):
    judge = ScriptedJudge({**JUDGE, "Eiffel": math.nan})
    result = Cascade(tiny_detector, judge, fuse=fusion(tiny_scorer, threshold=1.1, answer_threshold=1.1)).detect(
        answer=ANSWER, passages=PASSAGES)
    unscored = result.sentences[1]
    assert unscored.flagged is None and math.isnan(unscored.fused)
    assert [s.flagged for s in result.sentences] == [False, None, False]
    assert result.answer.flagged is None  # undecided: a failure never reads as supported
    assert result.to_dict()["sentences"][1]["fused"] is None


def test_a_fusion_is_needed_and_must_be_the_verifiers_and_the_scorers(tiny_detector, tiny_scorer, tmp_path):
    with pytest.raises(InputError, match="judge:scripted has none: the shipped one is for judge:qwen2.5-coder-1.5b"):
        Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=True)
    with pytest.raises(InputError, match="made for verifier judge:other, not judge:scripted"):
        Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=fusion(tiny_scorer, verifier="judge:other"))

    class Shipped(ScriptedJudge):
        name = "judge:qwen2.5-coder-1.5b-instruct"

    with pytest.raises(InputError, match="ranks the smollm2-135m-instruct scorer's sensitivity, not tiny-random"):
        Cascade(tiny_detector, Shipped(JUDGE), fuse=True)
    fusion(tiny_scorer).save(tmp_path / "f.json")  # a file serves as the fusion
    assert Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=tmp_path / "f.json").fusion == fusion(tiny_scorer)


def test_a_fused_cascade_neither_streams_nor_scores_without_exact_leave_one_out(tiny_detector, tiny_scorer):
    cascade = Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=fusion(tiny_scorer))
    with pytest.raises(InputError, match="a fused cascade does not stream"):
        cascade.stream(passages=PASSAGES)
    with pytest.raises(InputError, match="needs full mode with exact leave-one-out, not two_pass mode"):
        cascade.detect_checked(check_row({"answer": ANSWER, "passages": PASSAGES, "options": {"mode": "two_pass"}}))
    with pytest.raises(InputError, match="not full mode with masked leave-one-out"):
        Cascade(Detector(tiny_scorer, leave_one_out="masked", calibration=False), ScriptedJudge(JUDGE),
                fuse=fusion(tiny_scorer))
    assert cascade.describe()["fused"] is True and cascade.describe()["answer_threshold"] == 0.5
    assert cascade.with_options(k=3).fusion is cascade.fusion


def test_the_config_refuses_what_does_not_apply_to_a_fused_cascade():
    with pytest.raises(InputError, match="to a cascade only"):
        DetectorConfig(fuse=True)
    with pytest.raises(InputError, match="with a verifier, a fusion file applies to a fused cascade"):
        DetectorConfig(verifier="judge:x", fusion="f.json")
    with pytest.raises(InputError, match="escalate do not apply to a fused cascade"):
        DetectorConfig(verifier="judge:x", fuse=True, escalate=0.5)
    with pytest.raises(InputError, match="has none"):  # before any model loads
        make_detection(DetectorConfig(scorer="no/such-model", verifier="judge:tiny", fuse=True))


def test_detect_fuse_on_the_command_line(tmp_path, invoke_cli, cli_scorer):
    spec, text = f"judge:{cli_scorer.name}", ["--answer", ANSWER, "--context", " ".join(PASSAGES), "-k", "2"]
    refused = invoke_cli(["detect", *text, "--verifier", spec, "--fuse"])
    assert refused.exit_code == 2 and f"{spec} has none" in refused.output
    fusion(cli_scorer, verifier=spec).save(tmp_path / "f.json")
    done = invoke_cli(["detect", *text, "--json", "--verifier", spec, "--fuse", "--fusion", tmp_path / "f.json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["cascade"]["n_escalated"] == 3
    assert all(s["fused"] is not None and s["verifier_score"] is not None for s in result["sentences"])


def test_the_fused_score_is_in_the_frame_the_batch_record_and_its_arrow_row(tiny_detector, tiny_scorer):
    from groundsense.rows.runner import run_row
    from groundsense.scale.schema import records_table, table_records

    cascade = Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=fusion(tiny_scorer))
    result = cascade.detect(answer=ANSWER, passages=PASSAGES)
    fused = [s.fused for s in result.sentences]
    assert all(math.isfinite(f) for f in fused)
    assert result.to_df()["fused"].tolist() == fused
    record = run_row(cascade, {"id": 7, "answer": ANSWER, "passages": PASSAGES})
    assert [s["fused"] for s in record["sentences"]] == fused
    assert [s["fused"] for s in table_records(records_table([record]))[0]["sentences"]] == fused


@pytest.mark.parametrize("cli_scorer", ["tiny"], indirect=True)  # refused before any scoring
def test_stream_fuse_on_the_command_line_is_refused(tmp_path, invoke_cli, cli_scorer):
    spec = f"judge:{cli_scorer.name}"
    fusion(cli_scorer, verifier=spec).save(tmp_path / "f.json")
    refused = invoke_cli(["stream", "--example", "passages-qa", "-k", "2", "--verifier", spec, "--fuse",
                          "--fusion", tmp_path / "f.json"])
    assert refused.exit_code == 2 and "a fused cascade does not stream" in refused.output


def test_a_fused_cascade_keeps_the_detection_contract(tiny_detector, tiny_scorer):
    from groundsense.testing import check_detection

    report = check_detection(Cascade(tiny_detector, ScriptedJudge({"": 0.3}), fuse=fusion(tiny_scorer)))
    assert report.kind == "cascade"


@pytest.mark.parametrize("cli_scorer", ["tiny"], indirect=True)  # the plumbing; the real scorer's run is above
def test_calibrate_adapts_a_fusion_that_detect_then_uses(tmp_path, invoke_cli, cli_scorer):
    spec = f"judge:{cli_scorer.name}"
    rows = [{"answer": ANSWER, "context": " ".join(PASSAGES)},
            {"answer": "The span is 4,200 feet. It was the longest until 1964.", "passages": PASSAGES}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    base = fusion(cli_scorer, threshold=0.55, answer_threshold=0.6, verifier="judge:other")
    base.save(tmp_path / "base.json")
    for args, message in (([], "add --adapt shipped"), (["--adapt", "shipped"], "smollm2-135m-instruct scorer's")):
        if "shipped" in args and cli_scorer.name == "smollm2-135m-instruct":
            continue  # the shipped fusion's own scorer: not refused
        refused = invoke_cli(["calibrate", tmp_path / "rows.jsonl", *args, "--fuse", "-k", "2", "-o", tmp_path / "x"])
        assert refused.exit_code == 2 and message in refused.output, refused.output
    adapted = invoke_cli(["calibrate", tmp_path / "rows.jsonl", "--adapt", tmp_path / "base.json", "--fuse",
                          "--verifier", spec, "-k", "2", "--no-progress", "-o", tmp_path / "fusion.json"])
    assert adapted.exit_code == 0, adapted.output
    fused = RankFusion.load(tmp_path / "fusion.json")
    scored = [json.loads(line) for line in (tmp_path / "rows.fused.jsonl").read_text().splitlines()]
    judge = [s["verifier_score"] for record in scored for s in record["sentences"]]
    assert fused.verifier == spec and (fused.threshold, fused.answer_threshold) == (0.55, 0.6)
    assert fused.references["judge"] == sorted(judge) and fused.made_with["adaptation"]["answers"] == 2
    done = invoke_cli(["detect", "--json", "--answer", rows[1]["answer"], "--context", " ".join(PASSAGES), "-k", "2",
                       "--verifier", spec, "--fuse", "--fusion", tmp_path / "fusion.json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["cascade"]["threshold"] == 0.55


def test_a_weighted_fusion_flags_sentences_and_answers_by_its_log_odds(tiny_detector, tiny_scorer, tmp_path):
    plain = tiny_detector.detect(answer=ANSWER, passages=PASSAGES)
    base = fusion(tiny_scorer)
    weights = {"intercept": -2.0, "coefficients": {"sensitivity": 0.5, "judge": 3.0, "overlap_chunk": -1.0,
                                                   "stem_novel": 1.0, "bigram_novel": 2.0}}
    values = base.signals({name: np.array([s.features[name] for s in plain.sentences]) for name in
                           (*STATS, *SIGNALS[2:])}, np.array([0.1, 0.9, 0.4]))
    log_odds = weights["intercept"] + sum(c * base.ranks(values)[SIGNALS.index(name)]
                                          for name, c in weights["coefficients"].items())
    middle, top = float(np.sort(log_odds)[1]), top_two_mean(log_odds)
    RankFusion(**{**vars(base), "weights": weights, "threshold": middle, "answer_threshold": top}).save(tmp_path / "w")
    result = Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=tmp_path / "w").detect(answer=ANSWER,
                                                                                      passages=PASSAGES)
    np.testing.assert_allclose([s.fused for s in result.sentences], log_odds)  # the file's weights, not the average
    assert [s.flagged for s in result.sentences] == [bool(f >= middle) for f in log_odds]
    assert result.answer.score == pytest.approx(top) and result.answer.flagged is True
    # No sentence flagged: the answer's top-two mean decides, on the same log-odds scale.
    for answer_threshold, flagged in ((top, True), (top + 1e-9, False)):
        weighted = RankFusion(**{**vars(base), "weights": weights, "threshold": np.inf,
                                 "answer_threshold": answer_threshold})
        answer = Cascade(tiny_detector, ScriptedJudge(JUDGE), fuse=weighted).detect(answer=ANSWER,
                                                                                   passages=PASSAGES).answer
        assert answer.flagged is flagged and answer.threshold == answer_threshold


def labelled_rows(path, n_sources=5):
    """Two labelled answers for each of ``n_sources`` sources: one with an unsupported sentence,
    one without."""
    claims = ["The bridge was designed by Gustave Eiffel.", "It is painted bright blue.",
              "Its towers are made of marble.", "It carries a railway line.", "It was opened by Queen Victoria."]
    rows = []
    for source, claim in enumerate(claims[:n_sources]):
        for middle in (claim, "It opened in 1937."):
            answer = f"The bridge's main span is 4,200 feet long. {middle} It was the longest span until 1964."
            start = answer.index(middle)
            rows.append({"answer": answer, "context": " ".join(PASSAGES), "source": f"doc{source}",
                         "labels": [{"start": start, "end": start + len(middle)}] if middle == claim else []})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


@pytest.mark.parametrize("cli_scorer", ["tiny"], indirect=True)  # the plumbing: what the tiny scores mean is nothing
def test_fit_fuse_checks_writes_a_weighted_fusion_that_detect_then_uses(tmp_path, invoke_cli, cli_scorer):
    spec, source = f"judge:{cli_scorer.name}", tmp_path / "rows.jsonl"
    rows = labelled_rows(source)
    fusion(cli_scorer, verifier="judge:other").save(tmp_path / "base.json")
    (tmp_path / "bad.json").write_text("{}")
    shipped_calibration(DEFAULT_SCORER, 5).save(tmp_path / "calibration.json")
    (tmp_path / "unlabelled.jsonl").write_text(json.dumps({"answer": ANSWER, "passages": PASSAGES}) + "\n")
    out = tmp_path / "fitted.json"
    for args, message in (
            ([source, "--verifier", spec], "add --fuse"), ([source, "--fusion", tmp_path / "base.json"], "add --fuse"),
            ([tmp_path / "unlabelled.jsonl", "--fuse"], "--adapt shipped --fuse"),
            ([source, "--fuse", "--fusion", tmp_path / "bad.json"], "cannot read fusion file"),
            ([source, "--fuse", "--fusion", tmp_path / "calibration.json"],  # the advice is fit's, not detect's
             "calibration.json is a calibration, and --fuse takes a fused cascade's fusion: `shipped`, or a file")):
        refused = invoke_cli(["fit", *args, "-k", "2", "--no-progress", "-o", out])
        assert refused.exit_code == 2 and message in refused.output, refused.output
    assert not source.with_suffix(".fused.jsonl").exists()  # refused before any scoring

    fit = ["fit", source, "--fuse", "--fusion", tmp_path / "base.json", "--verifier", spec, "-k", "2", "--no-progress",
           "-o", out]
    refused = invoke_cli(fit)  # ten answers: far too few for the interval to clear 0
    assert "5-fold cross-validation over 5 sources (30 sentences, 5 unsupported)" in refused.stdout
    assert "default: the fused score (the ranks' average" in refused.stdout and "| fitted − default |" in refused.stdout
    assert refused.exit_code == 1 and "does not rank significantly better" in refused.output, refused.output
    assert not out.exists()
    scored = [json.loads(line) for line in source.with_suffix(".fused.jsonl").read_text().splitlines()]
    assert len(scored) == 10 and all(s["verifier_score"] is not None for r in scored for s in r["sentences"])

    forced = invoke_cli([*fit, "--force"])  # the scored rows are reused
    assert forced.exit_code == 0, forced.output
    assert "writing it anyway (--force)" in forced.output and f"--fuse --fusion {out}" in forced.output
    fitted = RankFusion.load(out)
    made = fitted.made_with
    assert fitted.verifier == spec and set(fitted.weights["coefficients"]) == set(SIGNALS)
    assert made["source"] == "rows.jsonl" and made["answers"] == 10 and made["n_sentences"] == 30
    assert made["cross_validation"]["groups"] == 5 and made["cross_validation"]["better"] is False
    assert made["threshold_rule"]["sentence"] == "best F1" and made["fit"]["n_sentences"] == 30
    assert "not fitted" not in made["threshold_rule"]["answer"] and fitted.answer_threshold <= fitted.threshold
    judge = np.array([s["verifier_score"] for r in scored for s in r["sentences"]])
    features = {name: np.array([s["features"][name] for r in scored for s in r["sentences"]])
                for name in (*STATS, *SIGNALS[2:])}
    values = fitted.signals(features, judge)
    assert fitted.references["judge"] == sorted(judge)  # the references are the labelled rows'
    spans = [(r["line"], label["start"]) for r in scored for label in rows[r["line"] - 1]["labels"]]
    labels = np.array([(r["line"], s["start"]) in spans for r in scored for s in r["sentences"]])
    assert labels.sum() == 5  # each labelled span is a whole sentence
    scores = fitted.score(values)
    flagged = scores >= fitted.threshold
    assert made["on_labelled_set"]["sentence"]["recall"] == pytest.approx((flagged & labels).sum() / 5, abs=1e-4)

    answer = rows[2]
    done = invoke_cli(["detect", "--json", "--answer", answer["answer"], "--context", " ".join(PASSAGES), "-k", "2",
                       "--verifier", spec, "--fuse", "--fusion", out])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    row_scores = scores[6:9]  # the third row's three sentences, as fitted
    assert [s["fused"] for s in result["sentences"]] == pytest.approx(row_scores.tolist())
    assert [s["flagged"] for s in result["sentences"]] == [bool(f >= fitted.threshold) for f in row_scores]
    blocked = flagged[6:9].any() or top_two_mean(row_scores) >= fitted.answer_threshold
    assert result["answer"]["flagged"] is bool(blocked)
    assert result["answer"]["threshold"] == fitted.answer_threshold
    assert result["cascade"]["threshold"] == fitted.threshold
