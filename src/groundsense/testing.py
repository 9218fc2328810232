"""A conformance kit for :class:`~groundsense.detection.Detection`: ``check_detection(obj)``.

Someone who writes a detection of their own (docs/python.md, "A detection of your own") runs
it through every path an entry point takes, on a tiny example:

- the row runner (:func:`~groundsense.rows.runner.run_row`, what `batch`, `serve` and the Ray
  engine run per row): a good row's record is its result, a bad row's an error record, never a
  verdict; a row asking for another ``k`` is refused or honoured (``with_options`` gives it);
- ``detect`` (its result equals ``detect_checked`` on the checked row; given sentence spans are
  kept; the evidence given in the other form, passages as one context string or a context as one
  passage, is taken or refused with :class:`~groundsense.errors.InputError`) and a bad answer
  refused with :class:`~groundsense.errors.InputError`;
- ``iter_detect`` and ``detect_many``: a bad row in the middle of a batch keeps the others;
- a :class:`~groundsense.verification.cascade.Cascade` over it (word overlap as the verifier);
- the HTTP service (:func:`groundsense.service.app.create_app` with the detection, through
  FastAPI's ``TestClient``), when the ``service`` extra and ``httpx`` are installed;
- ``stream``, when the detection streams: an answer fed in pieces, each sentence judged as it
  ended is the close's (its verdict may change only where a verifier decided it); a detection
  that refuses to stream (:class:`InputError`, the default) is reported so.

Every result must keep the contract of :class:`~groundsense.result.DetectionResult`: its
``to_dict()`` round-trips as JSON; one :class:`SentenceResult` per sentence, its span inside the
answer and in order; each sentence ``scored`` with a finite score or ``unscored`` with a reason
(and then never judged supported), as many ``unscored`` as ``answer.n_unscored`` says; the answer
flagged when a sentence is; ``describe()`` has
``kind`` and ``scorer`` as JSON values.
The first violation raises :class:`ConformanceError` (an ``AssertionError``, so a test fails
with its message); otherwise a :class:`ConformanceReport` says what was checked and what was
skipped. Importing this module needs neither pytest nor the service extra.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeGuard

from .detection import AnswerStream, Detection, as_detection
from .errors import InputError
from .inputs.validate import MAX_K, check_row
from .result import DetectionResult, SentenceResult
from .rows.runner import run_row

__all__ = ["check_detection", "ConformanceReport", "ConformanceError"]

# The tiny example every check runs on: two passages, a supported sentence and an invented one.
EXAMPLE: dict[str, Any] = {
    "question": "How long is the main span?",
    "passages": ["The bridge opened in 1937.", "Its main span is 4,200 feet long."],
    "answer": "The main span is 4,200 feet long. It was painted gold in 1990.",
}
BAD_ROW: dict[str, Any] = {**EXAMPLE, "answer": " "}  # empty: every detection must refuse it
TOLERANCE = 1e-4  # how far the same sentence's scores may lie apart on two paths (docs/streaming.md)


class ConformanceError(AssertionError):
    """A detection broke the :class:`~groundsense.detection.Detection` contract."""


@dataclass
class ConformanceReport:
    """What :func:`check_detection` checked on a detection (``kind``: its ``describe()["kind"]``)
    and what it skipped, and why."""

    kind: str
    checked: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.kind}: {len(self.checked)} checks passed"]
        lines += [f"  ok: {what}" for what in self.checked]
        lines += [f"  skipped: {what}" for what in self.skipped]
        return "\n".join(lines)


def check_detection(detection: object, row: Mapping[str, Any] | None = None, service: bool = True
                    ) -> ConformanceReport:
    """Run ``detection`` through every entry point's path on ``row`` (default: :data:`EXAMPLE`,
    a request row with an answer of a few sentences) and check what it returns (see the module).
    ``service=False`` skips the HTTP service. Raises :class:`ConformanceError` on the first
    violation."""
    try:
        checked = as_detection(detection)
    except TypeError as exc:
        raise ConformanceError(str(exc)) from None
    kit = _Kit(checked, dict(EXAMPLE if row is None else row))
    kit.describe()
    kit.detect()
    kit.run_row()
    kit.batches()
    kit.cascade()
    kit.stream()
    if service:
        kit.service()
    else:
        kit.report.skipped.append("the HTTP service: not asked for (service=False)")
    return kit.report


class _Kit:
    """The checks of one detection on one request row."""

    def __init__(self, detection: Detection, row: dict[str, Any]) -> None:
        self.detection, self.row, self.answer = detection, row, row["answer"]
        self.report = ConformanceReport(kind=type(detection).__name__)
        self.reference: DetectionResult | None = None  # detect's result on the row

    def fail(self, message: str) -> NoReturn:
        raise ConformanceError(f"{self.report.kind} breaks the Detection contract: {message}")

    def ok(self, what: str) -> None:
        self.report.checked.append(what)

    # -- what it is ---------------------------------------------------------------------------

    def describe(self) -> None:
        for chunks in (None, 2):
            where = "describe()" if chunks is None else f"describe({chunks})"
            try:
                about = self.detection.describe() if chunks is None else self.detection.describe(chunks)
            except TypeError as exc:
                self.fail(f"{where} raised TypeError ({exc}): an entry point asks describe(chunks) about an answer "
                          "scored in that many chunks; define describe(self, chunks=None)")
            if not isinstance(about, dict):
                self.fail(f"{where} returned a {type(about).__name__}, not a dict")
            self.json_stable(about, where)
            for key in ("kind", "scorer"):
                if key not in about:
                    self.fail(f"{where} has no {key!r} (it has {', '.join(map(str, about)) or 'nothing'})")
            if not isinstance(about["kind"], str) or not about["kind"]:
                self.fail(f"{where}['kind'] must be a non-empty string, not {about['kind']!r}")
        self.report.kind = self.detection.describe()["kind"]
        self.ok("describe() and describe(chunks) are JSON objects with 'kind' and 'scorer'")

    # -- one answer ---------------------------------------------------------------------------

    def detect(self) -> None:
        try:
            result = self.detection.detect(**self.arguments(self.row))
        except TypeError as exc:
            self.fail(f"detect raised TypeError ({exc}): it calls the hook as detect_checked(row, stop); define "
                      "detect_checked(self, row, stop=None)")
        self.check_result(result, "detect")
        self.reference = result
        checked = self.detection.detect_checked(check_row(self.row))
        self.check_result(checked, "detect_checked")
        self.same(checked.to_dict(), result.to_dict(), "detect_checked(check_row(row)) and detect(**row)")
        self.ok("detect keeps the result contract and equals detect_checked(check_row(row))")
        spans = [[s.start, s.end] for s in result.sentences]
        if len(spans) > 1:
            spans = [[spans[0][0], spans[-1][1]]]  # one sentence made of all: not the segmenter's
        given = self.detection.detect(**self.arguments({**self.row, "sentences": spans}))
        self.check_result(given, "detect with sentences", [(start, end) for start, end in spans])
        self.ok("detect with given sentence spans judges exactly those")
        self.other_evidence()
        try:
            refused = self.detection.detect(**self.arguments(BAD_ROW))
        except InputError:
            self.ok("detect refuses an empty answer with InputError")
        else:
            self.fail(f"detect on an empty answer returned a result ({_verdict(refused)}) instead of raising "
                      "InputError")

    def other_evidence(self) -> None:
        """The row's evidence in the other form a request may give it: passages as one context
        string, or a context string as one passage."""
        passages = self.row.get("passages")
        if passages is not None:
            form, row = "one context string", {**self.row, "context": "\n\n".join(passages), "passages": None}
        else:
            form, row = "a list of passages", {**self.row, "context": None, "passages": [self.row["context"]]}
        try:
            result = self.detection.detect(**self.arguments(row))
        except InputError as exc:
            self.ok(f"detect refuses the evidence as {form} with InputError ({exc})")
            return
        except Exception as exc:  # noqa: BLE001 - whatever it raises, the request would fail with no answer
            self.fail(f"detect with the evidence as {form} raised {type(exc).__name__}: {exc} (a request gives its "
                      "evidence as one context string or as a list of passages: take both, or refuse one with "
                      "InputError)")
        self.check_result(result, f"detect with the evidence as {form}")
        self.ok(f"detect with the evidence as {form} keeps the result contract")

    def run_row(self) -> None:
        record = run_row(self.detection, {"id": "good", **self.row})
        if "error" in record:
            self.fail(f"run_row on a good row gave an error record: {record['error']}")
        self.same(record, {"id": "good", **self.result().to_dict()}, "run_row's record and detect's result")
        bad = run_row(self.detection, {"id": "bad", **BAD_ROW})
        if set(bad) != {"id", "error"} or bad["error"].get("type") != "InputError":
            self.fail(f"run_row on a row with an empty answer must give an InputError record, not {_short(bad)}")
        self.ok("run_row: a good row's record is its result, a bad row's an InputError record")
        k = self.detection.options.k % MAX_K + 1  # another valid k
        asked = run_row(self.detection, {"id": "k", **self.row, "options": {"k": k}})
        if "error" in asked:
            if asked["error"].get("type") != "InputError":
                self.fail(f"a row asking for k={k} must be refused with InputError or honoured, not {_short(asked)}")
            self.ok(f"a row asking for k={k} is refused with InputError")
            return
        self.check_record(asked, f"run_row with options k={k}")
        try:
            sibling = self.detection.with_options(k=k)
        except InputError as exc:
            self.fail(f"detect_checked accepted a row asking for k={k} but with_options(k={k}) refuses it ({exc}): "
                      "apply the row's options with self.with_options(**row.options), which refuses those a "
                      "detection does not take")
        if sibling.options.k != k:
            self.fail(f"with_options(k={k}) gave a detection whose options.k is {sibling.options.k}")
        self.ok(f"a row asking for k={k} is honoured (with_options(k={k}).options.k == {k})")

    # -- many answers -------------------------------------------------------------------------

    def batches(self) -> None:
        rows = [{"id": 0, **self.row}, {"id": 1, **BAD_ROW}, {"id": 2, **self.row}]
        outcomes = list(self.detection.iter_detect(rows, progress=False))
        if [o.index for o in outcomes] != [0, 1, 2]:
            self.fail(f"iter_detect over 3 rows yielded the rows {[o.index for o in outcomes]}, not [0, 1, 2]")
        if not isinstance(outcomes[1].error, InputError) or outcomes[1].result is not None:
            self.fail(f"iter_detect's bad middle row must carry an InputError, not {outcomes[1]}")
        for outcome in (outcomes[0], outcomes[2]):
            if outcome.error is not None or outcome.result is None:
                self.fail(f"iter_detect's good row {outcome.index} failed beside a bad one: {outcome.error!r}")
            self.check_result(outcome.result, f"iter_detect row {outcome.index}")
            self.same(outcome.result.to_dict(), self.result().to_dict(), f"iter_detect row {outcome.index} and detect")
        self.ok("iter_detect: a bad row in the middle of three gets its error, the others their results")
        many = self.detection.detect_many([self.row], progress=False)
        if len(many) != 1:
            self.fail(f"detect_many over one row returned {len(many)} results")
        self.check_result(many[0], "detect_many")
        try:
            self.detection.detect_many([self.row, BAD_ROW], progress=False)
        except InputError:
            self.ok("detect_many returns one result a row, and raises InputError on a bad row")
        else:
            self.fail("detect_many over a good and a bad row returned results instead of raising InputError")

    def cascade(self) -> None:
        from .verification.cascade import Cascade
        from .verification.lexical import LexicalOverlapVerifier

        cascade = Cascade(self.detection, LexicalOverlapVerifier(), escalate=1.0)
        result = cascade.detect(**self.arguments(self.row))
        self.check_result(result, "a cascade over it")
        self.ok("a cascade over it (word overlap, every sentence escalated) keeps the result contract")

    # -- the stream ---------------------------------------------------------------------------

    def stream(self) -> None:
        try:
            stream = self.detection.stream(self.row.get("question") or "", self.row.get("context"),
                                           self.row.get("passages"))
        except InputError as exc:
            self.report.skipped.append(f"the stream: the detection refuses to stream (InputError: {exc})")
            return
        if not isinstance(stream, AnswerStream):
            self.fail(f"stream() returned a {type(stream).__name__}, not an AnswerStream "
                      "(text, chunks, evidence, feed, close)")
        fed: list[SentenceResult] = []
        for start in range(0, len(self.answer), 7):  # pieces as an LLM emits them
            fed += stream.feed(self.answer[start : start + 7])
        if stream.text != self.answer:
            self.fail(f"the stream's text after feeding the answer is {stream.text!r}, not the answer")
        result = stream.close()
        self.check_result(result, "the stream's close()")
        indexes = [s.index for s in fed]
        if indexes != sorted(set(indexes)):
            self.fail(f"the stream's feed returned the sentences {indexes}: each once, in order")
        for sentence in fed:
            if sentence.index >= len(result.sentences):
                self.fail(f"the stream judged sentence {sentence.index} as it ended, but close() has "
                          f"{len(result.sentences)} sentences")
            final = result.sentences[sentence.index]
            fields = ("start", "end", "text", "status", "reason")
            if any(getattr(sentence, f) != getattr(final, f) for f in fields):
                self.fail(f"the stream's sentence {sentence.index} as it ended ({_fields(sentence, fields)}) is "
                          f"not close()'s ({_fields(final, fields)})")
            # In fp32 a sentence's verdict as it ends is its verdict in the result; in another precision the
            # close may score the answer again (docs/streaming.md, "Precision"), and the result's
            # ``in_flight`` must keep what feed returned.
            if result.precision == "fp32":
                self.same(sentence.score, final.score, f"the stream's sentence {sentence.index} score and close()'s")
                if sentence.flagged != final.flagged and final.verifier_score is None:
                    self.fail(f"the stream's sentence {sentence.index} was flagged {sentence.flagged} as it ended "
                              f"and {final.flagged} at close() with no verifier deciding it")
        if result.in_flight is not None:
            kept = {v.index: (v.score, v.flagged) for v in result.in_flight}
            returned = {s.index: (s.score, s.flagged) for s in fed}
            if kept.keys() != returned.keys():
                self.fail(f"close()'s in_flight holds sentences {sorted(kept)}, and feed returned {sorted(returned)}")
            self.same(kept, returned, "close()'s in_flight and what feed returned")
        self.ok(f"the stream: {len(fed)} sentences judged as they ended, each as close() keeps it")

    # -- the HTTP service ---------------------------------------------------------------------

    def service(self) -> None:
        try:
            from fastapi.testclient import TestClient

            from .service.app import create_app
            from .service.settings import ServiceSettings
        except (ImportError, RuntimeError) as exc:  # starlette's TestClient needs httpx
            self.report.skipped.append(f"the HTTP service: needs the service extra and httpx ({exc})")
            return
        detection = self.detection
        with TestClient(create_app(ServiceSettings(), detection=lambda: detection)) as client:
            deadline, ready = time.monotonic() + 60, client.get("/readyz")
            while ready.status_code != 200 and ready.json().get("status") == "loading" and time.monotonic() < deadline:
                time.sleep(0.05)
                ready = client.get("/readyz")
            if ready.status_code != 200:
                self.fail(f"the service did not get ready with it: {ready.json()}")
            self.same(ready.json()["detection"], detection.describe(), "/readyz's detection and describe()")
            one = client.post("/v1/detect", json=self.row)
            if one.status_code != 200:
                self.fail(f"POST /v1/detect answered {one.status_code}: {one.text[:300]}")
            self.same(one.json(), {"id": None, **self.result().to_dict()}, "POST /v1/detect and detect")
            bad = client.post("/v1/detect", json=BAD_ROW)
            if bad.status_code != 422 or "error" not in bad.json():
                self.fail(f"POST /v1/detect with an empty answer must answer 422 with an error, not "
                          f"{bad.status_code}: {bad.text[:300]}")
            batch = client.post("/v1/detect/batch", json=[{"id": 0, **self.row}, {"id": 1, **BAD_ROW},
                                                          {"id": 2, **self.row}])
            records = batch.json() if batch.status_code == 200 else None
            if not isinstance(records, list) or len(records) != 3 or "error" not in records[1]:
                self.fail(f"POST /v1/detect/batch with a bad middle item answered {batch.status_code}: "
                          f"{batch.text[:300]}")
            for record, row_id in ((records[0], 0), (records[2], 2)):
                self.same(record, {"id": row_id, **self.result().to_dict()}, f"batch item {row_id} and detect")
        self.ok("the HTTP service: /readyz describes it, /v1/detect and /v1/detect/batch give its results, "
                "an empty answer 422 or its error record")

    # -- the result contract ------------------------------------------------------------------

    def result(self) -> DetectionResult:
        assert self.reference is not None, "detect runs first"
        return self.reference

    def check_record(self, record: dict, where: str) -> None:
        for key in ("sentences", "answer"):
            if key not in record:
                self.fail(f"{where}: the record has no {key!r}: {_short(record)}")

    def check_result(self, result: object, where: str, spans: list[tuple[int, int]] | None = None) -> None:
        """``result`` keeps the :class:`DetectionResult` contract for :attr:`answer` (``spans``: the
        sentence spans it was given)."""
        if not isinstance(result, DetectionResult):
            self.fail(f"{where} returned a {type(result).__name__}, not a DetectionResult")
        self.json_stable(result.to_dict(), f"{where}: to_dict()")
        sentences, answer = result.sentences, self.answer
        if not sentences:
            self.fail(f"{where}: the result has no sentence for an answer of {len(answer)} characters")
        if spans is not None and [(s.start, s.end) for s in sentences] != spans:
            self.fail(f"{where}: the sentences {[(s.start, s.end) for s in sentences]} are not those given, {spans}")
        end = 0
        for i, s in enumerate(sentences):
            name = f"{where}: sentence {i}"
            if s.index != i:
                self.fail(f"{name} has index {s.index}")
            if not (isinstance(s.start, int) and isinstance(s.end, int) and end <= s.start < s.end <= len(answer)):
                self.fail(f"{name}'s span ({s.start}, {s.end}) must lie inside the answer (0, {len(answer)}), "
                          f"after the sentence before it (which ends at {end})")
            if s.text != answer[s.start : s.end]:
                self.fail(f"{name}'s text {s.text!r} is not answer[{s.start}:{s.end}] ({answer[s.start:s.end]!r})")
            end = s.end
            if s.flagged not in (True, False, None):
                self.fail(f"{name}'s flagged must be True, False or None, not {s.flagged!r}")
            if s.status == "scored":
                if not _finite(s.score):
                    self.fail(f"{name} is 'scored' with the score {s.score!r}: give a finite score, or mark it "
                              "status='unscored' with a reason")
            elif s.status == "unscored":
                if not isinstance(s.reason, str) or not s.reason:
                    self.fail(f"{name} is 'unscored' without a reason")
                if s.flagged is False:
                    self.fail(f"{name} is 'unscored' but judged supported (flagged False): it must fail closed")
            else:
                self.fail(f"{name}'s status must be 'scored' or 'unscored', not {s.status!r}")
            if s.verifier_score is not None and not isinstance(s.verifier_score, (int, float)):
                self.fail(f"{name}'s verifier_score must be a number or None, not {s.verifier_score!r}")
        summary = result.answer
        if summary.n_sentences != len(sentences):
            self.fail(f"{where}: answer.n_sentences is {summary.n_sentences} for {len(sentences)} sentences")
        if summary.n_unscored != sum(s.status == "unscored" for s in sentences):
            self.fail(f"{where}: answer.n_unscored is {summary.n_unscored}, but "
                      f"{sum(s.status == 'unscored' for s in sentences)} sentences are unscored")
        if summary.n_flagged != sum(s.flagged is True for s in sentences):
            self.fail(f"{where}: answer.n_flagged is {summary.n_flagged}, but "
                      f"{sum(s.flagged is True for s in sentences)} sentences are flagged")
        if summary.flagged is not True and summary.n_flagged:
            self.fail(f"{where}: the answer is not flagged (flagged {summary.flagged!r}) while {summary.n_flagged} of "
                      "its sentences are: an answer with a flagged sentence is flagged, and the integrations pass "
                      "an answer that is not")
        if summary.flagged is False and any(s.flagged is None for s in sentences):
            self.fail(f"{where}: the answer is judged supported (flagged False) while a sentence is not judged: "
                      "it must fail closed")

    def json_stable(self, value: object, where: str) -> None:
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            self.fail(f"{where} is not plain JSON values ({exc})")
        if json.loads(text) != value:
            self.fail(f"{where} does not round-trip as JSON (a tuple or a non-string key?): {text[:300]}")

    def same(self, got: object, expected: object, what: str, path: str = "") -> None:
        """``got`` equals ``expected`` (floats within :data:`TOLERANCE`); else the first difference."""
        if isinstance(got, dict) and isinstance(expected, dict):
            if set(got) != set(expected):
                self.fail(f"{what} differ{path and ' at ' + path}: keys {sorted(set(got) ^ set(expected))} "
                          "are in one only")
            for key in expected:
                self.same(got[key], expected[key], what, f"{path}.{key}" if path else str(key))
        elif isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
            for i, (a, b) in enumerate(zip(got, expected)):
                self.same(a, b, what, f"{path}[{i}]")
        elif _number(got) and _number(expected):
            if not math.isclose(float(got), float(expected), rel_tol=TOLERANCE, abs_tol=TOLERANCE):
                self.fail(f"{what} differ at {path or 'the value'}: {got!r} and {expected!r}")
        elif got != expected:
            self.fail(f"{what} differ at {path or 'the value'}: {_short(got)} and {_short(expected)}")

    @staticmethod
    def arguments(row: Mapping[str, Any]) -> dict[str, Any]:
        """``detect``'s keyword arguments of a request row (its ``id`` and ``options`` left out)."""
        return {key: row[key] for key in ("answer", "context", "passages", "question", "sentences") if key in row}


def _finite(value: object) -> bool:
    return _number(value) and math.isfinite(value)


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _verdict(result: object) -> str:
    return f"answer flagged {result.answer.flagged}" if isinstance(result, DetectionResult) else repr(result)[:80]


def _fields(sentence: SentenceResult, names: tuple[str, ...]) -> str:
    return ", ".join(f"{name}={getattr(sentence, name)!r}" for name in names)


def _short(value: object, limit: int = 300) -> str:
    text = json.dumps(value, default=repr) if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
