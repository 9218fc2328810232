"""The facade: ``Detector(...).detect(answer=..., context=... | passages=[...], question=...)``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from .calibration import LEVELS, Calibration, gap_score, shipped_calibration
from .config import DEFAULTS, DetectorConfig
from .detection import Detection
from .errors import InputError
from .evidence import Evidence, build_evidence
from .features import FEATURES, SIGNED, SentenceFeatures, assign_tokens, sentence_features, support_chunk
from .result import AnswerSummary, DetectionResult, SentenceResult, Support, TokenRows, Truncation
from .scorer import EncodedAnswer, Scorer
from .stream import DetectionStream
from .text import Span, segment_sentences
from .validate import check_inputs, check_row, check_spans

log = logging.getLogger(__name__)


class Detector(Detection):
    """Sentence-level grounding detector.

    ``scorer``: a :class:`Scorer`, a scorer name (built-in, directory or Hugging Face id)
    or ``None`` for the embedded default. ``mode="full"`` scores K+2 conditions and the
    ``sensitivity`` detector; ``"two_pass"`` scores only full and no context, with the
    ``gap`` detector. ``calibration`` is a file or :class:`Calibration`; by default the
    one shipped for the scorer serves, fitted on as many chunks as an answer's evidence was
    scored in (:meth:`calibration_for`), and without one nothing is flagged (with a
    warning; ``calibration=False`` asks for no calibration and no warning).

    ``leave_one_out`` (full mode): ``"exact"`` re-encodes the context without each chunk;
    ``"masked"`` approximates that by hiding the chunk from the answer over one encoding
    of the full context (cheaper; see docs/performance.md). The shipped calibrations are
    fitted on exact features, so masked mode uses them for the ``gap`` detector only; for
    ``sensitivity`` pass a calibration fitted with masked features. ``precision`` (on a CPU):
    ``fp32``, or the faster, approximate ``bf16`` or ``int8`` scorer (see docs/performance.md).
    The shipped calibrations, fitted on fp32 features, serve bf16 too, but not int8, whose
    features differ more: at int8 pass a calibration fitted at int8.

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
        k = config.k
        self.scorer = scorer if isinstance(scorer, Scorer) else Scorer(scorer, device=device, precision=precision)
        self.k, self.mode = k, mode
        self.leave_one_out = leave_one_out if mode == "full" else None  # two-pass mode has none
        self.max_context_tokens, self.max_answer_tokens = max_context_tokens, max_answer_tokens
        if isinstance(calibration, (str, Path)):
            calibration = Calibration.load(calibration)
        # What this detector was built from (its siblings, :meth:`with_options`, too): the
        # scorer by the name it resolved to and at its precision, a calibration file loaded.
        self.config = replace(config, scorer=self.scorer.name, precision=self.scorer.precision, calibration=calibration)
        if isinstance(calibration, Calibration) and mode == "full" and calibration.leave_one_out != leave_one_out:
            raise InputError(
                f"the calibration was fitted on {calibration.leave_one_out} leave-one-out features, not "
                f"{leave_one_out} ones: fit one with `groundsense calibrate --loo {leave_one_out}`"
            )
        if calibration is None and self._shipped(None) is None:
            log.warning("no calibration for scorer %s at %s: scores are -gap and nothing is flagged; "
                        "run `groundsense calibrate` to make one", self.scorer.name, self.scorer.precision)
        self._calibrations: dict[int, tuple[Calibration | None, str]] = {}
        # Those of an answer scored in K chunks (a context string of K sentences or more).
        self.calibration, self.detector = self.calibration_for(k)
        if any(target is not None for target in config.targets):
            self._check_targets()
        self._siblings: dict[tuple[int, str], Detector] = {(k, mode): self}

    def calibration_for(self, chunks: int) -> tuple[Calibration | None, str]:
        """The calibration and the detector (``sensitivity`` or ``gap``) that judge an answer
        whose evidence was scored in ``chunks`` chunks (passages ignore K).

        A given calibration judges every answer. Otherwise the ``sensitivity`` detector, whose
        statistics depend on the chunks, takes the shipped calibration fitted on answers
        scored in as many; the ``gap`` detector, whose threshold depends neither on the
        chunks nor on the leave-one-out rows, takes any shipped one where there is none, in
        two-pass mode, and in masked mode (the shipped ones are fitted on exact features).
        """
        given = self.config.calibration
        if isinstance(given, Calibration):
            return given, "sensitivity" if self.mode == "full" else "gap"
        if given is False:
            return None, "gap"
        if chunks not in self._calibrations:
            fitted = self._shipped(chunks) if self.leave_one_out == "exact" else None
            found = (fitted, "sensitivity") if fitted else (self._shipped(None), "gap")
            self._calibrations[chunks] = found
        return self._calibrations[chunks]

    def _shipped(self, chunks: int | None) -> Calibration | None:
        """The calibration shipped for the scorer and ``chunks`` (None: any). None at int8: the
        shipped ones are fitted on fp32 features, which int8's are not near (bf16's are;
        docs/performance.md, "Numeric precision")."""
        return None if self.scorer.precision == "int8" else shipped_calibration(self.scorer.name, chunks)

    def flag_thresholds(self, chunks: int) -> tuple[Calibration | None, str, float | None, float | None]:
        """For an answer scored in ``chunks`` chunks: :meth:`calibration_for`'s calibration and
        detector, and where that detector flags a sentence and the answer (the fitted
        thresholds, or those meeting the config's target; None: no calibration, so nothing is flagged)."""
        calibration, detector = self.calibration_for(chunks)
        if calibration is None:
            return None, detector, None, None
        targets = self.config.targets
        return calibration, detector, *(calibration.threshold(detector, level, *targets) for level in LEVELS)

    def _check_targets(self) -> None:
        """A target recall or precision needs the labelled curve of every calibration that may judge,
        and must be reached by each detector that may: the ``gap`` judges answers scored in
        chunk counts the calibration was not fitted on, so a full-mode target must suit it too."""
        given = self.config.calibration
        if isinstance(given, Calibration):
            calibrations = [given]
        else:
            shipped = (self._shipped(n) for n in (None, self.k))
            calibrations = [c for c in shipped if c is not None] if given is None else []
        if not calibrations:
            raise InputError(f"a target recall or precision needs a labelled calibration, and scorer "
                             f"{self.scorer.name} has none: fit one with `groundsense calibrate`")
        for calibration in calibrations:
            for detector in dict.fromkeys((self.detector, "gap")):  # in order: the message names the first
                try:
                    calibration.threshold(detector, "sentence", *self.config.targets)
                except InputError as exc:
                    if detector == self.detector:
                        raise
                    raise InputError(f"{exc}. It must reach it too: it judges the answers scored in a number of "
                                     f"chunks that the {self.detector} calibration was not fitted on") from None

    @classmethod
    def from_config(cls, config: DetectorConfig, scorer: Scorer | None = None) -> Detector:
        """The detector ``config`` describes; ``scorer``, an already loaded one to use instead
        of loading ``config.scorer``. A config that names a verifier describes a cascade, which
        ``groundsense.verifiers.make_detection`` builds."""
        if config.verifier is not None:
            raise InputError(f"this config names a verifier ({config.verifier}), so it describes a cascade: "
                             "build it with groundsense.verifiers.make_detection(config)")
        return cls(**{**config.settings(), "scorer": scorer or config.scorer})

    def describe(self, chunks: int | None = None) -> dict:
        """The scorer, mode and leave-one-out kind, and what judges an answer scored in ``chunks``
        chunks (default: K): the detector (``sensitivity`` or ``gap``), its calibration's source
        (``given``, ``shipped`` or None: nothing is flagged) and the sentence and answer thresholds."""
        calibration, detector, threshold, answer_threshold = self.flag_thresholds(self.k if chunks is None else chunks)
        given = isinstance(self.config.calibration, Calibration)
        return {
            "kind": "detector", "scorer": self.scorer.name, "precision": self.scorer.precision, "mode": self.mode,
            "leave_one_out": self.leave_one_out, "k": self.k, "detector": detector,
            "calibration": None if calibration is None else "given" if given else "shipped",
            "threshold": threshold, "answer_threshold": answer_threshold,
        }

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
        spans = _sentence_spans(answer, sentences)
        evidence = build_evidence(self.scorer, context, passages, self.k, self.max_context_tokens)
        chunk_texts = [evidence.chunk_text(c) for c in evidence.chunks]
        prompt = self.scorer.encode(question or "", chunk_texts, answer, self.max_answer_tokens)
        scores = self.scorer.score(
            prompt, leave_one_out=self.mode == "full", masked=self.leave_one_out == "masked", stop=stop,
        )
        owner = assign_tokens(prompt.answer.offsets, spans)
        features = sentence_features(scores.logp, scores.jsd, owner, len(spans))
        result = self.build_result(answer, spans, evidence, prompt.answer, features, scores.tokens_processed)
        result.warnings = self.scorer.unfamiliar_text(prompt)
        result.prompt_tokens = len(prompt.condition_ids())  # what one full-context pass feeds
        result.tokens = TokenRows(scores.logp, scores.jsd, owner, prompt.answer.offsets)
        return result

    def stream(self, question: str = "", context: str | None = None, passages: list[str] | None = None,
               score_every: int = 16) -> DetectionStream:
        """Check an answer while it is generated: ``stream.feed(delta)`` returns the sentences
        each piece of text finished, judged; ``stream.close()`` the whole answer's result,
        equal to :meth:`detect` with the same sentence spans (see :mod:`groundsense.stream`)."""
        return DetectionStream(self, question, context, passages, score_every)

    def build_result(
        self, answer: str, spans: list[Span], evidence: Evidence, encoded: EncodedAnswer,
        features: SentenceFeatures, tokens_processed: int,
    ) -> DetectionResult:
        """The result of ``answer``'s sentences from their features (as scored so far, for a stream)."""
        values = features.values
        scored_until = len(answer) if not encoded.tokens_cut else int(encoded.offsets[-1, 1])
        unscored = [
            "past the answer token cap" if span.end > scored_until
            else "no answer token" if values["n_tokens"][i] == 0
            else None
            for i, span in enumerate(spans)
        ]
        calibration, detector, threshold, answer_threshold = self.flag_thresholds(len(evidence.chunks))
        score = calibration.score(detector, values) if calibration else gap_score(values)
        sentences = []
        for i, span in enumerate(spans):
            scored = unscored[i] is None
            sentences.append(
                SentenceResult(
                    index=i, start=span.start, end=span.end, text=span.of(answer),
                    score=float(score[i]) if scored else None,
                    flagged=bool(score[i] >= threshold) if scored and threshold is not None else None,
                    features={name: float(values[name][i]) for name in FEATURES + SIGNED},
                    drops=features.drops[i].tolist(), jsds=features.jsds[i].tolist(),
                    support=_support(evidence, features.drops[i]) if scored else None,
                    status="scored" if scored else "unscored", reason=unscored[i],
                )
            )
        return DetectionResult(
            scorer=self.scorer.name, precision=self.scorer.precision, mode=self.mode, leave_one_out=self.leave_one_out,
            detector=detector,
            threshold=threshold, sentences=sentences, answer=answer_summary(sentences, answer_threshold),
            truncated=Truncation(evidence.tokens_removed, encoded.tokens_cut),
            chunks=[
                {"index": c.index, "start": c.content.start, "end": c.content.end, "passage": c.passage}
                for c in evidence.chunks
            ],
            tokens_processed=tokens_processed,
        )


def _sentence_spans(answer: str, sentences: list[tuple[int, int]] | None) -> list[Span]:
    spans = segment_sentences(answer) if sentences is None else check_spans(sentences, answer)
    if not spans:
        raise InputError("the answer has no sentence to score")
    return spans


def _support(evidence: Evidence, drops: np.ndarray) -> Support | None:
    k = support_chunk(drops)
    if k is None:
        return None
    chunk = evidence.chunks[k]
    return Support(k, chunk.content.start, chunk.content.end, chunk.content.of(evidence.context), float(drops[k]),
                   chunk.passage)


def answer_summary(sentences: list[SentenceResult], threshold: float | None = None) -> AnswerSummary:
    """The answer-level summary of its sentence results. The answer is flagged when its most
    suspicious sentence reaches ``threshold`` (None: when any sentence is flagged); it is
    cleared only when every sentence was judged, so a failure never reads as supported."""
    scored = [s for s in sentences if s.status == "scored"]
    n = np.array([s.features["n_tokens"] for s in scored])
    gaps = np.array([s.features["gap"] for s in scored])
    n_flagged = sum(bool(s.flagged) for s in sentences)
    top = max((s.score for s in scored), default=None)
    blocked = n_flagged > 0 if threshold is None else top is not None and top >= threshold
    undecided = any(s.flagged is None for s in sentences)
    return AnswerSummary(
        gap=float((gaps * n).sum() / n.sum()) if scored else None,
        min_sentence_gap=float(gaps.min()) if scored else None,
        n_sentences=len(sentences),
        n_flagged=n_flagged,
        n_unscored=len(sentences) - len(scored),
        flagged=True if blocked else (None if undecided else False),
        score=top,
        threshold=threshold,
    )


def row_arguments(row: Mapping) -> dict:
    """``detect`` keyword arguments from an input row (``question``, ``context`` or
    ``passages``, ``answer``, optional ``sentences``), checked by :func:`validate.check_row`."""
    return check_row(row).arguments
