"""A fused cascade (``Cascade(..., fuse=...)``) on the tiny scorer, whose scores mean nothing:
what is verified, how the fused score decides flags and the answer, and what is refused."""

import json
import math

import numpy as np
import pytest
from helpers.fusions import STATS, fusion

from groundsense.config import DetectorConfig
from groundsense.errors import InputError
from groundsense.inputs.validate import check_row
from groundsense.pipeline.detector import Detector
from groundsense.verification import Cascade, make_detection
from groundsense.verification.fusion import SIGNALS, RankFusion, top_two_mean

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
    with pytest.raises(InputError, match="only apply to a cascade"):
        DetectorConfig(fuse=True)
    with pytest.raises(InputError, match="only applies to a fused cascade"):
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
