"""The Detection conformance kit (``groundsense.testing.check_detection``) on the real default
detector, a cascade to the word-overlap verifier, and the third-party detection that
docs/python.md shows (its code run exactly as written); and the clear failure of detections that
break the contract."""

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from groundsense.testing import EXAMPLE, ConformanceError, ConformanceReport, check_detection
from groundsense.verification import Cascade
from groundsense.verification.lexical import LexicalOverlapVerifier

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def docs_code(section: str = "A detection of your own") -> str:
    """docs/python.md's example under the heading ``section``."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(rf"^## {section}\n.*?```python\n(.*?)```", text, flags=re.S | re.M)
    assert block, f"docs/python.md lost its {section!r} example"
    return block.group(1)


def docs_example() -> dict:
    """The namespace of docs/python.md's "A detection of your own" example, run as written."""
    namespace = {"__name__": "docs_python_example"}
    exec(compile(docs_code(), "<docs/python.md: A detection of your own>", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(("section", "file"), [("A detection of your own", "docs_detection.py"),
                                              ("A score rule of your own", "docs_score_rule.py")])
def test_ci_type_checks_the_docs_detections_as_written(section, file):
    """CI's mypy run ([tool.mypy] files, every function annotated) checks tests/typing/``file``, which
    is the docs' example: a detection written from it type-checks with the public names' real types."""
    assert (DOC.parents[1] / "tests" / "typing" / file).read_text(encoding="utf-8") == docs_code(section)


def test_the_docs_score_rule_of_ones_own_conforms(detector):
    namespace = {"__name__": "docs_python_score_rule"}
    definition = docs_code("A score rule of your own").split("\nreport = ")[0]
    exec(compile(definition, "<docs/python.md: A score rule of your own>", "exec"), namespace)
    report = check_detection(namespace["NegativeGap"](detector))
    assert report.kind == "negative-gap" and any("HTTP service" in what for what in report.checked)
    result = namespace["NegativeGap"](detector).detect(**{k: EXAMPLE[k] for k in ("question", "passages", "answer")})
    assert result.score_rule == "negative-gap"
    assert [s.score for s in result.sentences] == [-s.features["gap"] for s in detector.detect(
        **{k: EXAMPLE[k] for k in ("question", "passages", "answer")}).sentences]


@pytest.fixture(scope="module")
def word_overlap():
    return docs_example()["WordOverlap"]


def test_the_docs_third_party_detection_conforms(capsys):
    namespace = docs_example()
    report = namespace["report"]
    assert isinstance(report, ConformanceReport) and report.kind == "word-overlap"
    assert any("HTTP service" in what for what in report.checked)
    assert any("refuses to stream" in what for what in report.skipped)
    assert any("k=6 is refused" in what for what in report.checked)  # it takes no per-request k
    assert any(what.startswith("a cascade over it") for what in report.checked)  # a cascade takes any Detection
    assert "word-overlap:" in capsys.readouterr().out  # the example prints the report


def test_the_kit_without_the_service_imports_none_of_it():
    """docs/python.md: service=False leaves the HTTP service out, for a process or an install without it."""
    definition = docs_code().split("\nreport = ")[0]
    code = (f"import sys\n{definition}\n"
            "report = check_detection(WordOverlap(), service=False)\n"
            "assert report.skipped[-1] == 'the HTTP service: not asked for (service=False)', report\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'starlette', 'uvicorn')\n"
            "             or m.startswith('groundsense.service')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_default_detector_conforms(detector):
    report = check_detection(detector)
    assert report.kind == "detector" and not report.skipped
    assert any(what.startswith("the stream:") for what in report.checked)
    assert any("is honoured" in what for what in report.checked)  # a request's k makes a sibling


def test_a_cascade_conforms(detector):
    report = check_detection(Cascade(detector, LexicalOverlapVerifier(), escalate=0.5), service=False)
    assert report.kind == "cascade" and report.skipped == ["the HTTP service: not asked for (service=False)"]
    assert any(what.startswith("the stream:") for what in report.checked)


def test_a_non_detection_fails_with_the_interfaces_message():
    with pytest.raises(ConformanceError, match="not a groundsense Detection: it lacks options, detect_checked"):
        check_detection(object())


def test_a_detection_class_given_for_an_instance_is_named_so(word_overlap):
    """The class itself has every method the interface names, so it read as 'not a groundsense Detection:
    subclass groundsense.Detection', which it does."""
    with pytest.raises(ConformanceError, match=r"^WordOverlap is a Detection class, not a detection: pass an instance "
                                               r"of it \(WordOverlap\(...\)\)$"):
        check_detection(word_overlap)


def breaking(word_overlap, **changes):
    """The docs' detection with each result sentence changed by ``changes`` (callables of the
    sentence and the answer), or its ``describe`` replaced."""
    describe = changes.pop("describe", None)

    class Broken(word_overlap):
        def detect_checked(self, row, stop=None):
            result = super().detect_checked(row, stop)
            answer = row.arguments["answer"]
            sentences = [replace(s, **{name: make(s, answer) for name, make in changes.items()})
                         for s in result.sentences]
            return replace(result, sentences=sentences)

        def describe(self, chunks=None):
            return describe() if describe else super().describe(chunks)

    return Broken()


@pytest.mark.parametrize("changes, message", [
    ({"end": lambda s, answer: len(answer) + 5}, r"sentence 0's span \(0, \d+\) must lie inside the answer"),
    ({"start": lambda s, answer: 0}, "sentence 1's span .* after the sentence before it"),
    ({"score": lambda s, answer: float("nan")}, "is 'scored' with the score nan: give a finite score"),
    ({"status": lambda s, answer: "unscored", "reason": lambda s, answer: "cut"},
     "is 'unscored' but judged supported .*fail closed"),
    ({"describe": lambda: {"kind": "odd", "scorer": object()}}, r"describe\(\) is not plain JSON values"),
    ({"describe": lambda: {"scorer": None}}, r"describe\(\) has no 'kind'"),
])
def test_a_detection_that_breaks_the_contract_fails_clearly(word_overlap, changes, message):
    with pytest.raises(ConformanceError, match="breaks the Detection contract: .*" + message):
        check_detection(breaking(word_overlap, **changes), service=False)


def test_a_detection_whose_describe_takes_no_chunks_fails_clearly(word_overlap):
    """`groundsense stream` asks describe(chunks); without the parameter the kit raised a bare TypeError."""
    class NoChunks(word_overlap):
        def describe(self):
            return {"kind": "word-overlap", "scorer": None}

    with pytest.raises(ConformanceError, match=r"describe\(2\) raised TypeError .*describe\(self, chunks=None\)"):
        check_detection(NoChunks(), service=False)


def test_a_detection_whose_hook_takes_no_stop_fails_clearly(word_overlap):
    class NoStop(word_overlap):
        def detect_checked(self, row):
            return super().detect_checked(row)

    with pytest.raises(ConformanceError, match=r"detect raised TypeError .*detect_checked\(self, row, stop=None\)"):
        check_detection(NoStop(), service=False)


def test_a_detection_that_ignores_a_requests_options_fails(word_overlap):
    class Ignores(word_overlap):
        def detect_checked(self, row, stop=None):
            return super().detect_checked(replace(row, options={}), stop)

    with pytest.raises(ConformanceError, match=r"accepted a row asking for k=6 but with_options\(k=6\) refuses"):
        check_detection(Ignores(), service=False)


def test_a_detection_that_judges_a_bad_answer_fails(word_overlap):
    class Lenient(word_overlap):
        def detect(self, answer, *args, **kwargs):
            return super().detect(answer if answer.strip() else EXAMPLE["answer"], *args, **kwargs)

    with pytest.raises(ConformanceError, match="detect on an empty answer returned a result"):
        check_detection(Lenient(), service=False)


def test_a_detection_that_clears_an_answer_with_a_flagged_sentence_fails(word_overlap):
    class Clears(word_overlap):
        def detect_checked(self, row, stop=None):
            result = super().detect_checked(row, stop)
            sentences = [replace(s, flagged=True) for s in result.sentences]
            return replace(result, sentences=sentences,
                           answer=replace(result.answer, n_flagged=len(sentences), flagged=False))

    with pytest.raises(ConformanceError, match=r"the answer is not flagged \(flagged False\) while 2 of its sentences"):
        check_detection(Clears(), service=False)


def test_a_detection_that_reads_only_passages_fails(word_overlap):
    """A request may give its evidence as one context string: a detection that crashes on it
    would fail every such request with no answer."""
    class PassagesOnly(word_overlap):
        def detect_checked(self, row, stop=None):
            assert all(isinstance(p, str) for p in row.arguments["passages"])  # a TypeError on a context row
            return super().detect_checked(row, stop)

    with pytest.raises(ConformanceError, match=r"detect with the evidence as one context string raised TypeError"):
        check_detection(PassagesOnly(), service=False)


def test_a_detection_that_miscounts_its_unscored_sentences_fails(word_overlap):
    class Unscored(word_overlap):
        def detect_checked(self, row, stop=None):
            result = super().detect_checked(row, stop)
            sentences = [replace(s, status="unscored", reason="cut", score=None, flagged=None)
                         for s in result.sentences]
            return replace(result, sentences=sentences,
                           answer=replace(result.answer, n_flagged=0, flagged=None, score=None))

    with pytest.raises(ConformanceError, match=r"answer.n_unscored is 0, but 2 sentences are unscored"):
        check_detection(Unscored(), service=False)
