"""The detection interface: a cascade from the config through `batch`, `detect`, the stream and
the integrations; any Detection subclass accepted, any other object refused; a bad verifier refused
before anything loads. The cascade's verifier is a real one: the LLM judge on the session's
default scorer (which ``make_detection`` shares with the detector)."""

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundsense.cli import cli
from groundsense.config import DetectorConfig
from groundsense.detection import Detection, DetectionOptions, as_detection
from groundsense.errors import InputError
from groundsense.inputs.files import load_example
from groundsense.pipeline.detector import Detector
from groundsense.rows.batch import run_batch, score_rows
from groundsense.verification import Cascade, check_verifier, make_detection

JUDGE = "judge:smollm2-135m-instruct"  # the default scorer is an instruct model: it can judge
EXAMPLES = ("passages-qa", "clinical-summary")


class Wrapped(Detection):
    """A third party's detection: it implements only what the interface requires and inherits
    the rest (rows, options, the refusal to stream)."""

    def __init__(self, inner: Detector):
        self.inner, self.config, self.calls = inner, inner.config, 0

    def detect_checked(self, row, stop=None):
        self.with_options(**row.options)  # inherited: refuses a k or mode other than its own
        self.calls += 1
        return self.inner.detect_checked(row, stop)

    def describe(self, chunks=None):
        return {**self.inner.describe(chunks), "kind": "wrapped"}


@pytest.fixture
def cli_on(monkeypatch, scorer):
    """The commands' detections built by the real factory on the session's scorer."""
    from groundsense.cli import common

    monkeypatch.setattr(common, "make_detection", lambda config, **given: make_detection(config, scorer, **given))


def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": name, **load_example(name)}) + "\n" for name in EXAMPLES))
    return path


# -- refused before anything loads ------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--verifier", "oracle:x"], "unknown verifier"),
    (["--verifier", JUDGE, "--verifier-url", "http://127.0.0.1:1/v1"], "verifier_url"),
    (["--escalate", "0.5"], "escalate (--escalate) applies to a cascade only"),
    (["--verifier", JUDGE, "--escalate", "1.5"], "escalate"),
])
def test_a_bad_verifier_config_exits_2_before_scoring(tmp_path, args, message):
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["batch", str(rows_file(tmp_path)), "-o", str(out), *args])
    assert result.exit_code == 2 and message in result.output
    assert not out.exists()


def test_a_bad_verifier_is_refused_even_when_nothing_is_left_to_score(tmp_path):
    source, out = rows_file(tmp_path), tmp_path / "out.jsonl"
    out.write_text("".join(json.dumps({"id": name, "line": n}) + "\n" for n, name in enumerate(EXAMPLES, start=1)))
    result = CliRunner().invoke(cli, ["batch", str(source), "-o", str(out), "--verifier", "oracle:x"])
    assert result.exit_code == 2 and "unknown verifier" in result.output


@pytest.mark.parametrize("args, message", [
    (["--verifier", JUDGE, "--verifier-url", "http://127.0.0.1:1/v1"], "verifier_url"),
    (["--calibration", "empty.json"], "cannot read calibration file empty.json: it has no 'scorer', 'k'"),
    (["--fusion", "empty.json"], "cannot read fusion file empty.json"),
    (["--precision", "int8", "--score", "fused"], "has none: use --score sensitivity"),
    (["--scorer", "no-such-org/no-such-model"], "unknown scorer 'no-such-org/no-such-model'"),
    (["--scorer", "no-model-here"], "scorer 'no-model-here': the directory has no config.json"),
    (["--verifier", "judge:no-such-org/no-such-model"], "verifier judge:no-such-org/no-such-model: unknown scorer"),
])
def test_serve_refuses_what_the_detection_would_refuse_before_it_listens(tmp_path, monkeypatch, hub_offline, args,
                                                                          message):
    """Everything that can be refused without a model is refused before the server listens: it
    does not serve 503s for ever from a scorer that could never load."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "no-model-here").mkdir()
    result = CliRunner().invoke(cli, ["serve", "--port", "0", *args])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "serving on" not in result.output


def test_a_setting_the_detection_refuses_is_refused_before_the_scorer_loads(monkeypatch):
    from groundsense.pipeline import detector

    class Loading(detector.Scorer):
        def __init__(self, *args, **kwargs):
            raise AssertionError("the scorer loaded before the settings were checked")

    monkeypatch.setattr(detector, "Scorer", Loading)
    with pytest.raises(InputError, match="has none: use --score sensitivity"):
        make_detection(DetectorConfig(precision="int8", score="fused"))
    with pytest.raises(InputError, match="has none: use --score sensitivity"):
        detector.Detector(precision="int8", score="fused")


def test_a_detector_judges_only_by_an_adjudicator_made_for_a_resolved_scorer_and_precision():
    from groundsense.calibration.adjudicator import Adjudicator
    from groundsense.calibration.loaded import load_files
    from groundsense.pipeline.detector import Detector

    config, loaded = load_files(DetectorConfig())  # the scorer None, the precision auto: neither resolved
    with pytest.raises(InputError, match="made for scorer None at auto, not for a scorer's resolved name"):
        Detector.judging_by(Adjudicator(config, loaded), loaded)


def test_check_verifier_reads_the_spec_without_loading():
    assert check_verifier(DetectorConfig()) is None
    cls, model, options = check_verifier(DetectorConfig(verifier=JUDGE))
    assert (cls.kind, model, options) == ("judge", "smollm2-135m-instruct", {})
    with pytest.raises(InputError, match="unknown verifier"):
        check_verifier(DetectorConfig(verifier="judge:"))


def test_an_object_without_the_interface_is_refused_with_what_it_lacks():
    class Half:
        def detect(self, answer, **kwargs):
            return None

    with pytest.raises(TypeError, match="lacks options, detect_checked, describe; subclass"):
        as_detection(Half())
    with pytest.raises(TypeError, match="not a groundsense Detection"):
        score_rows(Half(), [(1, {"answer": "a", "context": "b"})]).__next__()


def test_a_duck_typed_detection_must_subclass_or_register(detector):
    class Duck:  # every name, but not a Detection: the interface is a base class, not a set of names
        options = detector.options

        def detect_checked(self, row, stop=None):
            return detector.detect_checked(row, stop)

        def describe(self, chunks=None):
            return {"kind": "duck", "scorer": None}

    with pytest.raises(TypeError, match="not a groundsense Detection: subclass .* Detection.register"):
        as_detection(Duck())
    Detection.register(Duck)
    assert as_detection(Duck()) is not None


def test_a_detection_must_implement_the_hook_and_needs_no_config():
    class NoHook(Detection):
        config = DetectorConfig()

        def describe(self, chunks=None):
            return {"kind": "no-hook", "scorer": None}

    with pytest.raises(TypeError, match="abstract method.*detect_checked"):
        NoHook()

    class NoConfig(Detection):
        def detect_checked(self, row, stop=None):
            raise AssertionError("not called")

        def describe(self, chunks=None):
            return {"kind": "no-config", "scorer": None}

    plain = as_detection(NoConfig())
    assert plain.options == DetectionOptions(k=5, mode="full")  # Detection's default
    with pytest.raises(InputError, match="ask for k=5, mode=full"):
        plain.with_options(k=3)

    class OwnOptions(NoConfig):
        options = DetectionOptions(k=3, mode="two_pass")

    assert as_detection(OwnOptions()).with_options(k=3, mode="two_pass").options.k == 3

    class BadOptions(NoConfig):
        options = {"k": 3}

    with pytest.raises(TypeError, match="a BadOptions's options are not a groundsense.DetectionOptions"):
        as_detection(BadOptions())


# -- a cascade through every entry point: the real scorer -------------------------------------

def test_the_factory_builds_a_cascade_on_the_shared_scorer(scorer):
    cascade = make_detection(DetectorConfig(verifier=JUDGE, escalate=0.5), scorer)
    assert isinstance(cascade, Cascade) and isinstance(cascade, Detection)
    assert cascade.verifier.scorer is scorer and cascade.detector.scorer is scorer
    expected = DetectorConfig(scorer=scorer.name, precision=scorer.precision, verifier=JUDGE, escalate=0.5,
                              score="fused")  # the detector's, its default resolved
    assert cascade.config == expected
    about = cascade.describe()
    assert about["kind"] == "cascade" and about["verifier"] == JUDGE and about["calibration"] == "shipped"
    assert isinstance(make_detection(DetectorConfig(), scorer), Detector)
    with pytest.raises(InputError, match="make_detection"):
        Detector.from_config(DetectorConfig(verifier=JUDGE), scorer)


def test_batch_runs_a_cascade_from_its_options(tmp_path, cli_on):
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["batch", str(rows_file(tmp_path)), "-o", str(out), "--no-progress",
                                      "--verifier", JUDGE, "--escalate", "0.5", "--verifier-threshold", "0.4"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == list(EXAMPLES)
    for record in records:
        scored = [s for s in record["sentences"] if s["score"] is not None]
        assert record["cascade"] == {"verifier": JUDGE, "escalate": 0.5, "threshold": 0.4,
                                     "n_escalated": math.ceil(0.5 * len(scored))}  # each answer's own share
        escalated = [s for s in scored if s["verifier_score"] is not None]
        assert len(escalated) == record["cascade"]["n_escalated"]
        bar = min(s["score"] for s in escalated)  # the escalated share is the answer's most suspicious
        for sentence in scored:
            if sentence["verifier_score"] is None:  # the detector's verdict
                assert sentence["score"] <= bar and sentence["flagged"] is (sentence["score"] >= record["threshold"])
            else:  # the judge's (whose scores verification/test_cascade.py checks against the judge alone)
                assert 0.0 <= sentence["verifier_score"] <= 1.0
                assert sentence["flagged"] is (sentence["verifier_score"] >= 0.4)
        assert record["answer"]["n_flagged"] == sum(bool(s["flagged"]) for s in record["sentences"])


def test_batch_accepts_any_object_that_implements_the_interface(tmp_path, detector):
    wrapped, row = Wrapped(detector), load_example(EXAMPLES[0])
    source = tmp_path / "rows.jsonl"
    source.write_text(json.dumps(row) + "\n" + json.dumps({**row, "options": {"k": 3}}) + "\n")
    summary = run_batch(wrapped, source, tmp_path / "out.jsonl", progress=False)
    assert (summary.written, summary.errors, wrapped.calls) == (2, 1, 1)
    record, refused = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {k: v for k, v in record.items() if k not in ("id", "line")} == detector.detect(**row).to_dict()
    assert "takes no per-request k or mode" in refused["error"]["message"]  # inherited: its own k only
    with pytest.raises(InputError, match="cannot stream"):
        wrapped.stream(passages=["a"])


def test_a_cascade_over_a_third_party_detection_detects(detector):
    from groundsense.verification.lexical import LexicalOverlapVerifier

    row = load_example(EXAMPLES[0])
    cascade = Cascade(Wrapped(detector), LexicalOverlapVerifier(), escalate=1.0)
    result = cascade.detect(answer=row["answer"], passages=row["passages"], question=row["question"])
    assert result.cascade["n_escalated"] == len(result.sentences) and cascade.describe()["kind"] == "cascade"


def test_a_cascade_stream_ends_with_the_cascade_result(detector):
    from groundsense.verification.lexical import LexicalOverlapVerifier

    row = load_example(EXAMPLES[0])
    cascade = Cascade(detector, LexicalOverlapVerifier(), escalate=0.5)
    stream = cascade.stream(question=row["question"], passages=row["passages"])
    answer = row["answer"] + " It spans the Golden Gate."  # so that the invented sentence ends mid-stream
    fed = [s for word in answer.split(" ") for s in stream.feed(word + " ")]
    plain = detector.detect(answer=stream.text, passages=row["passages"], question=row["question"],
                            sentences=[(s.start, s.end) for s in fed])
    assert any(s.flagged for s in plain.sentences)  # the example's invented sentence
    for streamed, judged in zip(fed, plain.sentences):  # flagged: decided by the verifier as it ends
        assert (streamed.verifier_score is not None) == (judged.flagged is True)
    result = stream.close()
    spans = [(s.start, s.end) for s in result.sentences]
    whole = cascade.detect(answer=stream.text, passages=row["passages"], question=row["question"], sentences=spans)
    assert result.cascade == whole.cascade and result.cascade["n_escalated"] >= 1
    for streamed, direct in zip(result.sentences, whole.sentences):
        assert streamed.flagged == direct.flagged
        assert (streamed.verifier_score is None) == (direct.verifier_score is None)
        if direct.verifier_score is not None:
            assert streamed.verifier_score == pytest.approx(direct.verifier_score, abs=1e-4)


def test_the_stream_command_runs_a_cascade(cli_on):
    result = CliRunner().invoke(cli, ["stream", "--example", EXAMPLES[0], "--delay", "0", "--json",
                                      "--verifier", JUDGE, "--escalate", "1"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.output.splitlines()]
    final = events[-1]["result"]
    assert final["cascade"]["verifier"] == JUDGE and final["cascade"]["n_escalated"] == len(final["sentences"])
    assert all(s["verifier_score"] is not None for s in final["sentences"])


def test_an_integration_checks_through_a_cascade(detector, scorer):
    from groundsense.integrations.common import check
    from groundsense.verification.judge import JudgeVerifier

    row = load_example(EXAMPLES[0])
    report = check(row["answer"], row["passages"], row["question"], detection=Cascade(detector, JudgeVerifier(scorer)))
    assert report.result.cascade["verifier"] == JUDGE
    assert report.passing is all(s.flagged is False for s in report.result.sentences)
    with pytest.raises(Exception, match="no flag threshold"):
        check(row["answer"], row["passages"], detection=Wrapped(Detector(scorer, calibration=False)))


def test_the_type_guards_old_name_still_works_with_a_warning():
    import groundsense.detection

    with pytest.warns(DeprecationWarning, match="now as_detection"):
        assert groundsense.detection.check_detection is as_detection
