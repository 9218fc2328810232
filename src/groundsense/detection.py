"""The detection interface: what every entry point composes through.

A :class:`Detection` checks answers against their evidence: ``detect`` one answer,
``detect_checked`` one request row already checked, ``iter_detect`` and ``detect_many`` many
(request rows), ``with_options`` for a request's ``k`` and ``mode``, ``stream`` an answer as it
is generated, ``config`` (the :class:`DetectorConfig` it was built from) and ``describe()``
(what it is, for logs, probes and headers). The plain :class:`~groundsense.pipeline.detector.Detector`
and the :class:`~groundsense.verification.cascade.Cascade` implement it;
``groundsense.verification.make_detection(config)`` builds the one a config describes. `detect`,
`batch`, `serve`, the stream, the Ray engine, the integrations and MCP take any object that
implements it, so a later detector plugs in everywhere at once.

A class that subclasses :class:`Detection` needs only ``config``, ``detect`` and ``describe``;
it inherits the rest: rows checked by :func:`validate.check_row` and detected one by one, no
per-request options beyond its own ``k`` and ``mode``, no streaming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .config import DetectorConfig
from .errors import InputError
from .inputs.validate import CheckedRow, check_row
from .result import DetectionResult, SentenceResult


@dataclass(frozen=True)
class Outcome:
    """One row of :meth:`Detection.iter_detect`: a result, or the error that row raised."""

    index: int
    row: Mapping
    result: DetectionResult | None = None
    error: Exception | None = None


@runtime_checkable
class AnswerStream(Protocol):
    """An answer checked while it is generated (:class:`~groundsense.pipeline.stream.DetectionStream`)."""

    @property
    def text(self) -> str:
        """The answer so far."""

    @property
    def chunks(self) -> int:
        """How many chunks the evidence is scored in."""

    def feed(self, delta: str) -> list[SentenceResult]:
        """Add generated text; the sentences it finished, judged."""

    def close(self) -> DetectionResult:
        """The whole answer's result."""


@runtime_checkable
class Detection(Protocol):
    """Checks answers against their evidence (see the module's docstring)."""

    config: DetectorConfig

    def detect(self, answer: str, context: str | None = None, passages: list[str] | None = None, question: str = "",
               sentences: list[tuple[int, int]] | None = None, stop: Callable[[], bool] | None = None,
               ) -> DetectionResult:
        """Score every sentence of ``answer`` against the evidence; ``stop()`` returning True
        cancels the work (``errors.Cancelled``) where the detection checks it."""
        ...

    def describe(self, chunks: int | None = None) -> dict:
        """What this is, as plain JSON values: at least ``kind`` and ``scorer``; a detector adds
        its mode, calibration and thresholds (those that judge an answer whose evidence is scored
        in ``chunks`` chunks; default: K), a cascade its verifier, share and threshold."""
        ...

    def with_options(self, k: int | None = None, mode: str | None = None) -> Detection:
        """This detection with a request's ``k`` or ``mode``; by default only its own are taken."""
        if (k is None or k == self.config.k) and (mode is None or mode == self.config.mode):
            return self
        raise InputError(f"this detection ({self.describe()['kind']}) takes no per-request k or mode: "
                         f"leave options out, or ask for k={self.config.k}, mode={self.config.mode}")

    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        """Detect on a request row that :func:`validate.check_row` accepted, whose ``options``
        choose ``k`` and ``mode``. By default through ``detect``; a detection whose ``detect``
        checks its inputs overrides this to skip that, so that a request is checked once."""
        return self.with_options(**row.options).detect(**row.arguments, stop=stop)

    def iter_detect(self, rows: Iterable[Mapping], progress: bool = True) -> Iterator[Outcome]:
        """Detect on each row (checked by :func:`validate.check_row`, then :meth:`detect_checked`),
        keeping going past bad rows: each yields an :class:`Outcome` with its result or its error."""
        from .progress import track

        for index, row in enumerate(track(rows, "Scoring answers", enabled=progress)):
            try:
                yield Outcome(index, row, result=self.detect_checked(check_row(row)))
            except Exception as exc:  # noqa: BLE001 - one bad row must not stop the others
                yield Outcome(index, row, error=exc)

    def detect_many(self, rows: Iterable[Mapping], progress: bool = True) -> list[DetectionResult]:
        """Detect on every row with a progress bar; the first bad row raises."""
        results = []
        for outcome in self.iter_detect(rows, progress):
            if outcome.error is not None:
                raise outcome.error
            assert outcome.result is not None  # an Outcome holds a result or an error
            results.append(outcome.result)
        return results

    def stream(self, question: str = "", context: str | None = None, passages: list[str] | None = None,
               score_every: int = 16) -> AnswerStream:
        """Check an answer while it is generated: ``feed(delta)`` returns the sentences each
        piece finished, ``close()`` the whole answer's result."""
        raise InputError(f"this detection ({self.describe()['kind']}) cannot stream: use detect on the whole answer")


def check_detection(detection: object) -> Detection:
    """``detection`` itself, when it implements :class:`Detection`; else a clear error."""
    if not isinstance(detection, Detection):
        missing = [name for name in ("config", "detect", "describe", "with_options", "detect_checked", "iter_detect",
                                     "detect_many", "stream") if not hasattr(detection, name)]
        raise TypeError(f"a {type(detection).__name__} is not a groundsense Detection: it lacks {', '.join(missing)} "
                        "(subclass groundsense.detection.Detection to inherit all but config, detect and describe)")
    return detection
