"""The detection interface: what every entry point composes through.

A :class:`Detection` checks answers against their evidence. It is an abstract base class with
one hook, ``detect_checked`` (detect on one request row that :func:`groundsense.inputs.check_row`
accepted), plus ``describe()`` (what it is, for logs, probes and headers) and ``options``
(:class:`DetectionOptions`: the ``k`` and ``mode`` it takes as its own; the built-in
detections derive them from the :class:`DetectorConfig` they were built from, their
``config``). Everything else is inherited: ``detect`` (one
answer: the row built and checked, then ``detect_checked``), ``iter_detect`` and
``detect_many`` (many request rows), ``with_options`` (a request's ``k`` and ``mode``; by
default only the detection's own) and ``stream`` (by default refused). The plain
:class:`~groundsense.pipeline.detector.Detector` and the
:class:`~groundsense.verification.cascade.Cascade` implement it;
``groundsense.verification.make_detection(config)`` builds the one a config describes. `detect`,
`batch`, `serve`, the stream, the Ray engine, the integrations and MCP take any
:class:`Detection` (checked by :func:`as_detection`), so a later detector plugs in everywhere
at once; :func:`groundsense.testing.check_detection` checks that one keeps the contract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .config import DetectorConfig
from .errors import InputError
from .inputs.validate import CheckedRow, check_row, check_rows
from .result import AnswerSummary, DetectionResult, SentenceResult

if TYPE_CHECKING:
    from .inputs.evidence import Evidence

__all__ = ["Detection", "DetectionOptions", "Outcome", "AnswerStream", "as_detection"]


@dataclass(frozen=True)
class DetectionOptions:
    """The per-request options a detection takes as its own: the chunk count ``k`` a single
    context string is split into, and the ``mode`` (``full`` or ``two_pass``). A request may ask
    for these only, unless the detection overrides :meth:`Detection.with_options`."""

    k: int = 5
    mode: str = "full"


@dataclass(frozen=True)
class Outcome:
    """One row of :meth:`Detection.iter_detect`: a result, or the error that row raised."""

    index: int
    row: Mapping
    result: DetectionResult | None = None
    error: Exception | None = None


@runtime_checkable
class AnswerStream(Protocol):
    """An answer checked while it is generated (:class:`~groundsense.pipeline.stream.DetectionStream`).

    ``evidence`` is what a :class:`~groundsense.verification.cascade.Cascade`'s stream reads: the
    chunks it hands its verifier, as the results' ``chunks`` index them."""

    @property
    def text(self) -> str:
        """The answer so far."""

    @property
    def chunks(self) -> int:
        """How many chunks the evidence is scored in."""

    @property
    def evidence(self) -> Evidence:
        """The evidence as scored: its ``context`` string and ``chunks`` (each chunk's
        ``content`` is its character span of that string, as a result's ``chunks`` give it)."""

    def feed(self, delta: str) -> list[SentenceResult]:
        """Add generated text; the sentences it finished, judged."""

    def close(self) -> DetectionResult:
        """The whole answer's result."""


class Detection(ABC):
    """Checks answers against their evidence (see the module's docstring).

    A subclass implements :meth:`detect_checked` and :meth:`describe`, and may set ``options``
    (default: ``k`` 5, ``full`` mode); it inherits the rest: :meth:`detect` checks its arguments
    as a request row and calls :meth:`detect_checked`, rows are detected one by one, no
    per-request options beyond its own ``k`` and ``mode``, no streaming."""

    config: DetectorConfig  # the built-in detections': what they were built from

    @property
    def options(self) -> DetectionOptions:
        """The ``k`` and ``mode`` it takes as its own: its ``config``'s where it has one."""
        config = getattr(self, "config", None)
        return DetectionOptions(config.k, config.mode) if isinstance(config, DetectorConfig) else DetectionOptions()

    @abstractmethod
    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        """Detect on a request row that :func:`groundsense.inputs.check_row` accepted (not checked again):
        ``row.arguments`` holds ``answer``, ``context``, ``passages`` and ``question``,
        ``row.spans`` the sentence spans (None: segment the answer), and ``row.options`` the
        ``k`` and ``mode`` it asks for, to honour or refuse (``self.with_options(**row.options)``
        refuses any but the detection's own). ``stop()`` returning True cancels the work
        (``errors.Cancelled``) where the detection checks it."""

    @abstractmethod
    def describe(self, chunks: int | None = None) -> dict:
        """What this is, as plain JSON values: at least ``kind`` and ``scorer``; a detector adds
        its mode, calibration and thresholds (those that judge an answer whose evidence is scored
        in ``chunks`` chunks; default: K), a cascade its verifier, share and threshold."""

    def detect(self, answer: str, context: str | None = None, passages: list[str] | None = None, question: str = "",
               sentences: list[tuple[int, int]] | None = None, stop: Callable[[], bool] | None = None,
               ) -> DetectionResult:
        """Score every sentence of ``answer`` against the evidence (a ``context`` string or a list
        of ``passages``). ``sentences`` optionally gives the sentence spans (character offsets
        into ``answer``) instead of the built-in segmenter. The arguments are checked as a
        request row (:func:`groundsense.inputs.check_row`, once), then :meth:`detect_checked` detects;
        ``stop()`` returning True cancels the work (``errors.Cancelled``) where it checks it."""
        row = {"answer": answer, "context": context, "passages": passages, "question": question,
               "sentences": sentences}
        return self.detect_checked(check_row(row), stop)

    def verified_answer(self, result: DetectionResult, sentences: list[SentenceResult]) -> AnswerSummary:
        """The answer's summary once a cascade's verifier has judged some of ``result``'s sentences
        again (``sentences``: ``result``'s, those it judged with ``verifier_score`` set). The answer
        is flagged when a sentence is; this detection's own answer verdict stands where it flagged
        the answer and the verifier cleared none of its sentences. :class:`~groundsense.Detector`
        applies its answer rule again instead, leaving out the sentences the verifier cleared."""
        n_flagged = sum(s.flagged is True for s in sentences)
        cleared = any(s.verifier_score is not None and s.flagged is False for s in sentences)
        blocked = n_flagged > 0 or (result.answer.flagged is True and not cleared)
        undecided = any(s.flagged is None for s in sentences)
        return replace(result.answer, n_flagged=n_flagged, flagged=True if blocked else None if undecided else False)

    def with_options(self, k: int | None = None, mode: str | None = None) -> Detection:
        """This detection with a request's ``k`` or ``mode``; by default only its own are taken."""
        own = self.options
        if (k is None or k == own.k) and (mode is None or mode == own.mode):
            return self
        raise InputError(f"this detection ({self.describe()['kind']}) takes no per-request k or mode: "
                         f"leave options out, or ask for k={own.k}, mode={own.mode}")

    def iter_detect(self, rows: Iterable[Mapping], progress: bool = True) -> Iterator[Outcome]:
        """Detect on each row (checked by :func:`groundsense.inputs.check_row`, then :meth:`detect_checked`),
        keeping going past bad rows: each yields an :class:`Outcome` with its result or its error."""
        from .progress import track

        for index, row in enumerate(track(rows, "Scoring answers", enabled=progress)):
            try:
                yield Outcome(index, row, result=self.detect_checked(check_row(row)))
            except Exception as exc:  # noqa: BLE001 - one bad row must not stop the others
                yield Outcome(index, row, error=exc)

    def detect_many(self, rows: Iterable[Mapping], progress: bool = True) -> list[DetectionResult]:
        """Detect on every row with a progress bar; a bad row raises, named by its index, before
        any is scored (:func:`groundsense.inputs.validate.check_rows`)."""
        from .progress import track

        checked = check_rows(rows)
        return [self.detect_checked(row) for row in track(checked, "Scoring answers", enabled=progress)]

    def stream(self, question: str = "", context: str | None = None, passages: list[str] | None = None,
               score_every: int = 16) -> AnswerStream:
        """Check an answer while it is generated: ``feed(delta)`` returns the sentences each
        piece finished, ``close()`` the whole answer's result."""
        raise InputError(f"this detection ({self.describe()['kind']}) cannot stream: use detect on the whole answer")


def as_detection(detection: object) -> Detection:
    """``detection`` itself, when it is a :class:`Detection` (a subclass, or a class given to
    ``Detection.register``) whose ``options`` are :class:`DetectionOptions`; else a clear
    :class:`TypeError`."""
    if isinstance(detection, type) and issubclass(detection, Detection):
        raise TypeError(f"{detection.__name__} is a Detection class, not a detection: pass an instance of it "
                        f"({detection.__name__}(...))")
    if not isinstance(detection, Detection):
        missing = [name for name in ("options", "detect_checked", "describe") if not hasattr(detection, name)]
        lacks = f"it lacks {', '.join(missing)}; " if missing else ""
        raise TypeError(f"a {type(detection).__name__} is not a groundsense Detection: {lacks}subclass "
                        "groundsense.Detection (implement detect_checked and describe; the rest is inherited), "
                        "or register a class that implements all of it with Detection.register")
    if not isinstance(getattr(detection, "options", None), DetectionOptions):
        raise TypeError(f"a {type(detection).__name__}'s options are not a groundsense.DetectionOptions: set them "
                        "to one (its k and mode), or leave them to Detection's default")
    return detection


if TYPE_CHECKING:  # the deprecated name as a type checker sees it; at run time, __getattr__ below
    from typing_extensions import deprecated

    @deprecated("groundsense.detection.check_detection is now as_detection")
    def check_detection(detection: object) -> Detection: ...


def __getattr__(name: str) -> object:
    # The type guard's name until 2026-12 (one release): it is now as_detection, so that
    # check_detection names only the conformance kit (groundsense.testing.check_detection).
    if name == "check_detection":
        import warnings

        warnings.warn("groundsense.detection.check_detection is now as_detection; "
                      "groundsense.testing.check_detection is the conformance kit", DeprecationWarning, stacklevel=2)
        return as_detection
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
