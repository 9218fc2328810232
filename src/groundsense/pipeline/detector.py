"""The facade: ``Detector(...).detect(answer=..., context=... | passages=[...], question=...)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..config import DEFAULTS, DetectorConfig
from ..detection import Detection
from ..errors import InputError
from ..inputs.evidence import build_evidence
from ..inputs.text import Span, segment_sentences
from ..inputs.validate import CheckedRow, check_inputs, check_spans
from ..judging.calibration import Calibration
from ..judging.verdicts import Adjudicator
from ..result import DetectionResult
from ..scorer import Scorer
from .stream import DetectionStream


class Detector(Detection):
    """Sentence-level grounding detector.

    ``scorer``: a :class:`Scorer`, a scorer name (built-in, directory or Hugging Face id)
    or ``None`` for the embedded default. ``mode="full"`` scores K+2 conditions and the
    ``sensitivity`` detector; ``"two_pass"`` scores only full and no context, with the
    ``gap`` detector. ``calibration`` is a file or :class:`Calibration`; by default the
    one shipped for the scorer serves, fitted on as many chunks as an answer's evidence was
    scored in, and without one nothing is flagged (with a warning; ``calibration=False`` asks
    for no calibration and no warning): ``detector.adjudicator``, a
    :class:`~groundsense.judging.verdicts.Adjudicator`, chooses, and builds the results.

    ``leave_one_out`` (full mode): ``"exact"`` re-encodes the context without each chunk;
    ``"masked"`` approximates that by hiding the chunk from the answer over one encoding
    of the full context (cheaper; see docs/performance.md). The shipped calibrations are
    fitted on exact features, so masked mode uses them for the ``gap`` detector only; for
    ``sensitivity`` pass a calibration fitted with masked features. ``precision``: ``fp32``, or the
    faster, approximate ``bf16`` or ``int8`` (docs/performance.md); int8 needs its own calibration.

    The settings are checked as a :class:`DetectorConfig` before the scorer loads, and kept
    as ``detector.config``; :meth:`from_config` builds a detector from one. It is a
    :class:`~groundsense.detection.Detection`, whose ``iter_detect`` and ``detect_many`` it inherits.
    """

    def __init__(
        self,
        scorer: Scorer | str | None = None,
        k: int = DEFAULTS.k,
        mode: str = DEFAULTS.mode,
        calibration: Calibration | str | Path | None | bool = None,
        max_context_tokens: int = DEFAULTS.max_context_tokens,
        max_answer_tokens: int = DEFAULTS.max_answer_tokens,
        device: str | None = None,
        leave_one_out: str = DEFAULTS.leave_one_out,
        target_recall: float | None = None,
        target_precision: float | None = None,
        precision: str = DEFAULTS.precision,
    ):
        config = DetectorConfig(  # checked before the scorer loads
            scorer=scorer.name if isinstance(scorer, Scorer) else scorer, k=k, mode=mode, leave_one_out=leave_one_out,
            calibration=calibration, max_context_tokens=max_context_tokens, max_answer_tokens=max_answer_tokens,
            device=device, target_recall=target_recall, target_precision=target_precision, precision=precision,
        )
        self.scorer = scorer if isinstance(scorer, Scorer) else Scorer(scorer, device=device, precision=precision)
        self.k, self.mode = config.k, mode
        self.max_context_tokens, self.max_answer_tokens = max_context_tokens, max_answer_tokens
        if isinstance(calibration, (str, Path)):
            calibration = Calibration.load(calibration)
        # What this detector was built from (its siblings, :meth:`with_options`, too): the
        # scorer by the name it resolved to and at its precision, a calibration file loaded.
        self.config = replace(config, scorer=self.scorer.name, precision=self.scorer.precision, calibration=calibration)
        self.adjudicator = Adjudicator(self.config)  # which calibration judges, the thresholds, the result
        self.leave_one_out = self.adjudicator.leave_one_out  # None in two-pass mode
        self._siblings: dict[tuple[int, str], Detector] = {(self.k, mode): self}

    @classmethod
    def from_config(cls, config: DetectorConfig, scorer: Scorer | None = None) -> Detector:
        """The detector ``config`` describes; ``scorer``, an already loaded one to use instead
        of loading ``config.scorer``. A config that names a verifier describes a cascade, which
        ``groundsense.make_detection`` builds."""
        if config.verifier is not None:
            raise InputError(f"this config names a verifier ({config.verifier}), so it describes a cascade: "
                             "build it with groundsense.make_detection(config)")
        return cls(**{**config.settings(), "scorer": scorer or config.scorer})

    def describe(self, chunks: int | None = None) -> dict:
        """The scorer, mode and leave-one-out kind, and what judges an answer scored in ``chunks``
        chunks (default: K): the detector (``sensitivity`` or ``gap``), its calibration's source
        (``given``, ``shipped`` or None: nothing is flagged) and the sentence and answer thresholds."""
        judged_by = self.adjudicator.describe(self.k if chunks is None else chunks)
        return {"kind": "detector", "scorer": self.scorer.name, "precision": self.scorer.precision, "mode": self.mode,
                "leave_one_out": self.leave_one_out, "k": self.k, **judged_by}

    def with_options(self, k: int | None = None, mode: str | None = None) -> Detector:
        """This detector with another ``k`` or ``mode`` (a request's ``options``): a detector
        that shares the scorer and the rest of its configuration (token budgets, leave-one-out
        kind, an explicitly given calibration), made once and kept."""
        key = (self.k if k is None else k, self.mode if mode is None else mode)
        if key not in self._siblings:
            self._siblings[key] = Detector.from_config(replace(self.config, k=key[0], mode=key[1]), self.scorer)
            self._siblings[key]._siblings = self._siblings
        return self._siblings[key]

    def detect(
        self,
        answer: str,
        context: str | None = None,
        passages: list[str] | None = None,
        question: str = "",
        sentences: list[tuple[int, int]] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> DetectionResult:
        """Score every sentence of ``answer`` against the evidence.

        ``sentences`` optionally gives the sentence spans (character offsets into
        ``answer``) instead of the built-in segmenter. ``stop``, asked between the
        scorer's conditions, cancels the work when it returns True (``errors.Cancelled``).
        """
        check_inputs(answer, context, passages)
        spans = None if sentences is None else check_spans(sentences, answer)
        return self._detect(answer, context, passages, question, spans, stop)

    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        """:meth:`detect` on a request row :func:`validate.check_row` accepted, not checked again."""
        arguments = row.arguments
        return self.with_options(**row.options)._detect(
            arguments["answer"], arguments["context"], arguments["passages"], arguments["question"], row.spans, stop)

    def _detect(self, answer: str, context: str | None, passages: list[str] | None, question: str,
                spans: Sequence[Span] | None, stop: Callable[[], bool] | None) -> DetectionResult:
        """:meth:`detect` on checked inputs (``spans`` None: the answer is segmented)."""
        spans = list(segment_sentences(answer) if spans is None else spans)
        if not spans:
            raise InputError("the answer has no sentence to score")
        evidence = build_evidence(self.scorer, context, passages, self.k, self.max_context_tokens)
        chunk_texts = [evidence.chunk_text(c) for c in evidence.chunks]
        prompt = self.scorer.encode(question or "", chunk_texts, answer, self.max_answer_tokens)
        scores = self.scorer.score(
            prompt, leave_one_out=self.mode == "full", masked=self.leave_one_out == "masked", stop=stop,
        )
        return self.adjudicator.result(answer, spans, evidence, prompt, scores, self.scorer.unfamiliar_text(prompt))

    def stream(self, question: str = "", context: str | None = None, passages: list[str] | None = None,
               score_every: int = 16) -> DetectionStream:
        """Check an answer while it is generated: ``stream.feed(delta)`` returns the sentences
        each piece of text finished, judged; ``stream.close()`` the whole answer's result,
        equal to :meth:`detect` with the same sentence spans (see :mod:`groundsense.pipeline.stream`)."""
        return DetectionStream(self.scorer, self.adjudicator, question, context, passages, score_every)
