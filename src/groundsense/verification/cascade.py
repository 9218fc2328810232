"""A cascade: the detector scores every sentence, and only the most suspicious fraction is
escalated to a slower verifier (an LLM judge, a fact-checker), which decides those.

``Cascade(Detector(), verifier, escalate=0.2).detect(...)`` returns the detector's
:class:`DetectionResult` with, on each escalated sentence, ``verifier_score`` set and
``flagged`` replaced by ``verifier_score >= threshold``; the other sentences keep the
detector's score and flag. The answer is flagged when a sentence is, or when the detector's
answer rule fires on the sentences the verifier did not clear (:meth:`Detection.verified_answer`),
so a cascade that escalates nothing gives the detector's result. The fraction applies to the
sentences handed over at once: one answer for :meth:`Cascade.detect` and for each request row
of :meth:`Cascade.detect_checked`, which ``iter_detect`` and
:func:`~groundsense.rows.runner.run_row` (so `batch`, `serve` and the Ray engine) call, so a
record never depends on the rows beside it; all rows for :meth:`Cascade.detect_many` (which
escalates about ``escalate`` of their sentences, while a single short answer escalates at least
one). The same rule (:func:`escalation_mask`) drives the offline cascade analysis. A cascade is
a :class:`~groundsense.detection.Detection`, so every entry point runs one.

``Cascade(detector, judge, fuse=True)`` is a fused cascade (docs/verifiers.md): the judge scores
every scored sentence, and each sentence's ``fused`` score, the rank average of the detector's
``sensitivity``, the judge's score and three lexical signals (:class:`~.fusion.RankFusion`),
decides its flag; the answer is flagged when the mean of its two highest fused scores reaches
the fusion's answer threshold, or when any sentence is flagged. It does not stream.

A verifier that keeps running cost totals in a ``usage`` mapping (the ``openai:`` judge's
requests and tokens) has what each answer cost reported in the result's ``cascade`` summary
as ``verifier_usage`` (one cascade at a time per verifier, for the difference to be exact).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..calibration.adjudicator import fused_answer
from ..calibration.fusion import RankFusion
from ..calibration.judge_fusion import check_scorer, fusion_for
from ..config import DetectorConfig
from ..detection import AnswerStream, Detection, as_detection
from ..errors import InputError, VerifierError
from ..inputs.evidence import Evidence
from ..inputs.text import join_passages
from ..inputs.validate import CheckedRow, check_rows
from ..result import DetectionResult, InFlightVerdict, SentenceResult
from .verifier import ScoresSentences, Verifier


def escalation_mask(suspicion: np.ndarray, fraction: float) -> np.ndarray:
    """The ``ceil(fraction x n)`` most suspicious of ``n`` finite scores (ties: earlier
    first); NaN scores are never escalated."""
    if not 0 <= fraction <= 1:
        raise InputError(f"the escalated fraction must lie in [0, 1], not {fraction}")
    suspicion = np.asarray(suspicion, dtype=float)
    finite = np.isfinite(suspicion)
    n = math.ceil(fraction * finite.sum() - 1e-9)
    order = np.argsort(-np.where(finite, suspicion, -np.inf), kind="stable")[:n]
    mask = np.zeros(len(suspicion), dtype=bool)
    mask[order] = True
    return mask


class Cascade(Detection):
    """Detector first, ``verifier`` on the ``escalate`` most suspicious share of sentences.

    ``detector``: any :class:`Detection` (its ``k`` and ``mode`` follow a request's options).
    The verifier's scores should be probabilities of being unsupported, for the default flag
    ``threshold`` 0.5 to make sense; one with ``scores_are_probabilities = False`` is refused.
    An object without ``name`` or ``scores_are_probabilities`` is reported by its type and
    taken to give probabilities; a verifier that calls a server names it as ``url``.
    :func:`~groundsense.verification.factory.make_detection` builds one from a :class:`DetectorConfig`.

    ``fuse``: True (the fusion shipped for the verifier), a :class:`RankFusion` or its file: verify
    every sentence and flag by the fused score (``escalate`` and ``threshold`` are then unused);
    refused for a verifier without a fusion, or a detector of another scorer than the fusion's."""

    def __init__(self, detector: Detection, verifier: ScoresSentences, escalate: float = 0.2, threshold: float = 0.5,
                 fuse: bool | RankFusion | str | Path = False):
        fusion = None if fuse is False else fusion_for(_name(verifier), None if fuse is True else fuse)
        if fusion is not None:
            check_scorer(fusion, as_detection(detector).describe().get("scorer"))
        # the config's record of it: its file, True for an object, None for the shipped one
        record = fuse if isinstance(fuse, (str, Path)) else None if isinstance(fuse, bool) else True
        self._build(detector, verifier, escalate, threshold, fusion, record)

    @classmethod
    def made(cls, detector: Detection, verifier: ScoresSentences, config: DetectorConfig,
             fusion: RankFusion | None) -> Cascade:
        """The cascade ``config`` describes over ``detector`` (``make_detection``), with a fused
        cascade's ``fusion`` loaded and checked by the caller
        (:func:`~groundsense.calibration.loaded.load_files`)."""
        cascade = cls.__new__(cls)
        cascade._build(detector, verifier, config.escalate, config.verifier_threshold, fusion,
                       config.fusion if fusion is not None else None)
        return cascade

    def _build(self, detector: Detection, verifier: ScoresSentences, escalate: float, threshold: float,
               fusion: RankFusion | None, fusion_record: str | Path | bool | None) -> None:
        if isinstance(verifier, type):
            raise TypeError(f"{verifier.__name__} is a class, not a verifier: pass an instance of it "
                            f"({verifier.__name__}(...))")
        if not isinstance(verifier, Verifier):
            raise TypeError("a verifier needs a score_sentences(question, chunks, sentences) method, and "
                            f"{type(verifier).__name__} has none")
        self.detector, self.verifier = as_detection(detector), verifier
        if getattr(verifier, "scores_are_probabilities", True) is False:
            raise InputError(f"{self.verifier_name} scores are not probabilities of being unsupported, so a "
                             "cascade cannot threshold them: use a judge or a classifier "
                             "(judge:, openai:, nli:, minicheck:, alignscore:)")
        self.escalate, self.threshold, self.fusion = escalate, threshold, fusion
        # the detector's config: a built-in detection's own, else one of the options it takes (a
        # detection of a user's own has no other of groundsense's settings)
        own = getattr(self.detector, "config", None)
        options = self.detector.options
        base = own if isinstance(own, DetectorConfig) else DetectorConfig(k=options.k, mode=options.mode)
        if fusion is not None and isinstance(own, DetectorConfig):  # a detection of one's own: checked per result
            _check_exact(own.mode, own.leave_one_out)
        # The detector's config with this verifier (by name), share and threshold, which it checks.
        self.config: DetectorConfig = replace(base, verifier=self.verifier_name, escalate=escalate,
                                              verifier_threshold=threshold, verifier_url=getattr(verifier, "url", None),
                                              fuse=fusion is not None, fusion=fusion_record)

    @property
    def verifier_name(self) -> str:
        return _name(self.verifier)

    def describe(self, chunks: int | None = None) -> dict:
        """The detector's description (``chunks``: see :meth:`Detector.describe`) as a cascade's."""
        if self.fusion is not None:
            return {**self.detector.describe(chunks), "kind": "cascade", "verifier": self.verifier_name,
                    "escalate": 1.0, "fused": True, "threshold": self.fusion.threshold,
                    "answer_threshold": self.fusion.answer_threshold}
        return {**self.detector.describe(chunks), "kind": "cascade", "verifier": self.verifier_name,
                "escalate": self.escalate, "verifier_threshold": self.threshold}

    def with_options(self, k: int | None = None, mode: str | None = None) -> Cascade:
        """The cascade over the detector with a request's ``k`` or ``mode``."""
        detector = self.detector.with_options(k=k, mode=mode)
        if detector is self.detector:
            return self
        cascade = type(self).__new__(type(self))
        cascade._build(detector, self.verifier, self.escalate, self.threshold, self.fusion, self.config.fusion)
        return cascade

    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        """The detector's result on a checked request row with its answer's most suspicious
        ``escalate`` share verified: what ``detect`` (inherited) and ``iter_detect`` run on each
        row, so a batch's records do not depend on which rows share a run."""
        result = self.detector.detect_checked(row, stop)
        return self._escalated([(_AnswerRequest.of(row), result)])[0]

    def detect_many(self, rows: Iterable[Mapping], progress: bool = True) -> list[DetectionResult]:
        """Detect on every row, then escalate the most suspicious ``escalate`` share of all
        their scored sentences; a bad row raises before any is scored."""
        from ..progress import track

        checked = check_rows(rows)
        results = [self.detector.detect_checked(row) for row in track(checked, "Scoring answers", enabled=progress)]
        return self._escalated([(_AnswerRequest.of(row), result) for row, result in zip(checked, results)])

    def stream(self, question: str = "", context: str | None = None, passages: list[str] | None = None,
               score_every: int = 16) -> CascadeStream:
        """The detector's stream: a flagged sentence is escalated as it ends, and the close
        escalates the answer's share (:class:`CascadeStream`). A fused cascade does not stream."""
        if self.fusion is not None:
            raise InputError("a fused cascade does not stream: its flags rank every sentence's judge score, which "
                             "a stream has only at the end; stream without --fuse (GROUNDSENSE_FUSE), or detect on "
                             "the whole answer (/v1/detect)")
        inner = self.detector.stream(question, context, passages, score_every)
        if not isinstance(inner, AnswerStream):  # its evidence's chunks are what the verifier is given
            raise InputError(f"a cascade streams over an AnswerStream, which has the evidence it scored, "
                             f"not a {type(inner).__name__}")
        return CascadeStream(self, inner, _AnswerRequest(question, context, passages))

    def _escalated(self, items: list[tuple[_AnswerRequest, DetectionResult]], known: dict[int, float] | None = None,
                   spent_before: dict[str, int] | None = None) -> list[DetectionResult]:
        """The results with the most suspicious ``escalate`` share of all their sentences verified
        (``known``: the verifier's scores a stream already has for one item's sentences, by index);
        a fused cascade's with every sentence verified and fused."""
        if self.fusion is not None:
            return [self._fused(self.fusion, request, result) for request, result in items]
        located = [(r, s) for r, (_, result) in enumerate(items) for s in range(len(result.sentences))]
        suspicion = np.array([_score(items[r][1].sentences[s].score) for r, s in located])
        escalated: dict[int, list[int]] = {}
        for (r, s), chosen in zip(located, escalation_mask(suspicion, self.escalate)):
            if chosen:
                escalated.setdefault(r, []).append(s)
        return [self._verified(request, result, escalated.get(r, []), known, spent_before)
                for r, (request, result) in enumerate(items)]

    def verify(self, question: str, chunks: list[str], texts: list[str]) -> list[float]:
        """The verifier's scores of ``texts`` against the detector's ``chunks``, checked (None, a
        sentence it could not judge, reads as NaN: undecided)."""
        scores = [math.nan if score is None else float(score)
                  for score in self.verifier.score_sentences(question, chunks, texts)]
        if len(scores) != len(texts):
            raise VerifierError(f"the verifier {self.verifier_name} returned {len(scores)} scores for {len(texts)} "
                                "sentences: a verifier returns one score per sentence (NaN where it cannot score one)")
        return scores

    def decided(self, sentence: SentenceResult, score: float) -> SentenceResult:
        """``sentence`` with the verifier's ``score`` and its verdict (a NaN score leaves it
        undecided, never supported)."""
        flagged = bool(score >= self.threshold) if math.isfinite(score) else None
        return replace(sentence, verifier_score=score, flagged=flagged)

    def _verified(self, request: _AnswerRequest, result: DetectionResult, chosen: list[int],
                  known: dict[int, float] | None = None, spent_before: dict[str, int] | None = None
                  ) -> DetectionResult:
        sentences, known = list(result.sentences), dict(known or {})
        spent_before = spent_before if spent_before is not None else _usage(self.verifier)
        missing = [i for i in chosen if i not in known]
        if missing:
            context = request.text()
            chunks = [context[c.start : c.end] for c in result.chunks]
            known.update(zip(missing, self.verify(request.question, chunks, [sentences[i].text for i in missing])))
        for i, score in known.items():
            sentences[i] = self.decided(sentences[i], score)
        cascade = {"verifier": self.verifier_name, "escalate": self.escalate, "threshold": self.threshold,
                   "n_escalated": len(known)}
        return replace(result, sentences=sentences, answer=self.detector.verified_answer(result, sentences),
                       cascade=_with_usage(cascade, self.verifier, spent_before))

    def _fused(self, fusion: RankFusion, request: _AnswerRequest, result: DetectionResult) -> DetectionResult:
        """``result`` with every scored sentence verified and flagged by its fused score (NaN, a
        judge's failure among them: undecided), the answer by its :meth:`~RankFusion.answer_score`."""
        _check_exact(result.mode, result.leave_one_out)  # a request's options may ask for two-pass mode
        spent_before, sentences = _usage(self.verifier), list(result.sentences)
        chosen = [i for i, s in enumerate(sentences) if s.status == "scored"]
        judge = np.full(len(sentences), np.nan)
        if chosen:
            context = request.text()
            chunks = [context[c.start : c.end] for c in result.chunks]
            judge[chosen] = self.verify(request.question, chunks, [sentences[i].text for i in chosen])
        features = {name: np.array([_score(s.features.get(name)) for s in sentences])
                    for name in fusion.inputs}
        signal_ranks = fusion.ranks(fusion.signals(features, judge))  # a row per signal
        fused, ranks = fusion.combined(signal_ranks), fusion.named_ranks(signal_ranks)
        for i in chosen:
            flagged = bool(fused[i] >= fusion.threshold) if math.isfinite(fused[i]) else None
            sentences[i] = replace(sentences[i], verifier_score=float(judge[i]), fused=float(fused[i]), flagged=flagged,
                                   ranks=ranks[i])
        answer = fused_answer(sentences, fused[chosen], fusion, fusion.answer_threshold)
        cascade = {"verifier": self.verifier_name, "escalate": 1.0, "threshold": fusion.threshold,
                   "n_escalated": len(chosen)}
        return replace(result, sentences=sentences, answer=answer, cascade=_with_usage(cascade, self.verifier,
                                                                                      spent_before))


class CascadeStream:
    """A cascade's answer checked while it is generated. ``feed`` returns each finished
    sentence; one the detector flags is escalated at once, so the verifier's verdict replaces
    the flag before the reader sees the sentence. The others carry the detector's verdict,
    provisional, since which sentences are the answer's most suspicious share is known only
    when it ends: ``close()`` escalates that share of the whole answer (reusing the scores it
    has). Its result therefore equals :meth:`Cascade.detect` on the answer with the stream's
    sentence spans, except that a sentence the detector flagged outside the share is verified
    too."""

    def __init__(self, cascade: Cascade, inner: AnswerStream, request: _AnswerRequest) -> None:
        self.cascade, self.inner, self.request = cascade, inner, request
        self.known: dict[int, float] = {}  # sentence index -> the verifier's score, decided while streaming
        self.in_flight: list[InFlightVerdict] = []  # the verdicts feed returned, the verifier's where it decided
        self.spent_before = _usage(cascade.verifier)

    @property
    def text(self) -> str:
        return self.inner.text

    @property
    def chunks(self) -> int:
        return self.inner.chunks

    @property
    def evidence(self) -> Evidence:
        return self.inner.evidence

    def feed(self, delta: str) -> list[SentenceResult]:
        finished = self.inner.feed(delta)
        flagged = [s for s in finished if s.flagged is True]
        if flagged:
            evidence = self.inner.evidence
            chunks = [c.content.of(evidence.context) for c in evidence.chunks]  # as the result's chunks index it
            scores = self.cascade.verify(self.request.question, chunks, [s.text for s in flagged])
            self.known.update((s.index, score) for s, score in zip(flagged, scores))
        returned = [self.cascade.decided(s, self.known[s.index]) if s.index in self.known else s for s in finished]
        self.in_flight += [InFlightVerdict(s.index, s.score, s.flagged) for s in returned]
        return returned

    def close(self) -> DetectionResult:
        result = self.cascade._escalated([(self.request, self.inner.close())], self.known, self.spent_before)[0]
        return replace(result, in_flight=self.in_flight)

    async def afeed(self, delta: str) -> list[SentenceResult]:
        return await asyncio.to_thread(self.feed, delta)

    async def aclose(self) -> DetectionResult:
        return await asyncio.to_thread(self.close)


@dataclass(frozen=True)
class _AnswerRequest:
    """What a verifier needs of an answer's request besides the detector's result: the
    question and the evidence as given (the result's chunks are character spans of its text)."""

    question: str
    context: str | None
    passages: list[str] | None

    @classmethod
    def of(cls, row: CheckedRow) -> _AnswerRequest:
        arguments = row.arguments
        return cls(arguments["question"], arguments["context"], arguments["passages"])

    def text(self) -> str:
        return self.context if self.context is not None else join_passages(self.passages or [])[0]


def _name(verifier: object) -> str:
    """A verifier's name: its ``name``, else its type's."""
    return getattr(verifier, "name", type(verifier).__name__)


def _usage(verifier: ScoresSentences) -> dict[str, int] | None:
    """A copy of the verifier's running cost totals (``usage``: name -> count), if it keeps them."""
    usage = getattr(verifier, "usage", None)
    return dict(usage) if isinstance(usage, Mapping) else None


def _check_exact(mode: str, leave_one_out: str | None) -> None:
    """Refuse what a fused cascade cannot rank: its sensitivity signal needs exact leave-one-out rows."""
    if (mode, leave_one_out) != ("full", "exact"):
        raise InputError(f"a fused cascade ranks the sensitivity score, which needs full mode with exact "
                         f"leave-one-out, not {mode} mode with {leave_one_out} leave-one-out")


def _with_usage(cascade: dict, verifier: ScoresSentences, spent_before: dict[str, int] | None) -> dict:
    """The ``cascade`` summary with what verifying the answer cost (a remote judge's tokens),
    when the verifier keeps totals (``spent_before``: them before)."""
    if spent_before is None:
        return cascade
    spent_after = _usage(verifier) or {}
    return {**cascade, "verifier_usage": {k: v - spent_before.get(k, 0) for k, v in spent_after.items()}}


def _score(value: float | None) -> float:
    return float("nan") if value is None else float(value)
