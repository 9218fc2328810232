"""A cascade: the detector scores every sentence, and only the most suspicious fraction is
escalated to a slower verifier (an LLM judge, a fact-checker), which decides those.

``Cascade(Detector(), verifier, escalate=0.2).detect(...)`` returns the detector's
:class:`DetectionResult` with, on each escalated sentence, ``verifier_score`` set and
``flagged`` replaced by ``verifier_score >= threshold``; the other sentences keep the
detector's score and flag. The fraction applies to the sentences handed over at once: one
answer for :meth:`Cascade.detect`, all rows for :meth:`Cascade.detect_many` (so a batch
escalates about ``escalate`` of its sentences, while a single short answer escalates at
least one). The same rule (:func:`escalation_mask`) drives the offline cascade analysis.

A verifier that keeps running cost totals in a ``usage`` mapping (the ``openai:`` judge's
requests and tokens) has what each answer cost reported in the result's ``cascade`` summary
as ``verifier_usage`` (one cascade at a time per verifier, for the difference to be exact).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy as np

from .detector import Detector, answer_summary, row_arguments
from .errors import InputError
from .result import DetectionResult
from .text import join_passages
from .verification import Verifier


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


class Cascade:
    """Detector first, ``verifier`` on the ``escalate`` most suspicious share of sentences.

    The verifier's scores should be probabilities of being unsupported, for the default flag
    ``threshold`` 0.5 to make sense; one with ``scores_are_probabilities = False`` is refused.
    An object without ``name`` or ``scores_are_probabilities`` is reported by its type and
    taken to give probabilities."""

    def __init__(self, detector: Detector, verifier: Verifier, escalate: float = 0.2, threshold: float = 0.5):
        if not isinstance(verifier, Verifier):
            raise InputError("the verifier needs a score_sentences(question, chunks, sentences) method")
        self.detector, self.verifier = detector, verifier
        if getattr(verifier, "scores_are_probabilities", True) is False:
            raise InputError(f"{self.verifier_name} scores are not probabilities of being unsupported, so a "
                             "cascade cannot threshold them: use a judge or a classifier "
                             "(judge:, openai:, nli:, minicheck:, alignscore:)")
        escalation_mask(np.zeros(0), escalate)  # checks the fraction
        self.escalate, self.threshold = escalate, threshold

    @property
    def verifier_name(self) -> str:
        return getattr(self.verifier, "name", type(self.verifier).__name__)

    def detect(
        self,
        answer: str,
        context: str | None = None,
        passages: list[str] | None = None,
        question: str = "",
        sentences: list[tuple[int, int]] | None = None,
    ) -> DetectionResult:
        row = {"answer": answer, "context": context, "passages": passages, "question": question, "sentences": sentences}
        return self.detect_many([row], progress=False)[0]

    def detect_many(self, rows: Iterable[Mapping], progress: bool = True) -> list[DetectionResult]:
        """Detect on every row, then escalate the most suspicious ``escalate`` share of all
        their scored sentences; the first bad row raises."""
        inputs = [row_arguments(row) for row in rows]
        results = self.detector.detect_many(inputs, progress)
        located = [(r, s) for r, result in enumerate(results) for s in range(len(result.sentences))]
        suspicion = np.array([_score(results[r].sentences[s].score) for r, s in located])
        escalated: dict[int, list[int]] = {}
        for (r, s), chosen in zip(located, escalation_mask(suspicion, self.escalate)):
            if chosen:
                escalated.setdefault(r, []).append(s)
        return [self._verified(inputs[r], result, escalated.get(r, [])) for r, result in enumerate(results)]

    def _verified(self, row: Mapping, result: DetectionResult, chosen: list[int]) -> DetectionResult:
        context = row["context"] if row["context"] is not None else join_passages(row["passages"])[0]
        sentences = list(result.sentences)
        spent_before = _usage(self.verifier)
        if chosen:
            chunks = [context[c["start"] : c["end"]] for c in result.chunks]
            scores = self.verifier.score_sentences(row["question"], chunks, [sentences[i].text for i in chosen])
            if len(scores) != len(chosen):
                raise InputError(f"the verifier returned {len(scores)} scores for {len(chosen)} sentences")
            for i, score in zip(chosen, scores):
                score = float(score)  # a NaN score leaves the sentence undecided, never supported
                flagged = bool(score >= self.threshold) if math.isfinite(score) else None
                sentences[i] = replace(sentences[i], verifier_score=score, flagged=flagged)
        cascade = {"verifier": self.verifier_name, "escalate": self.escalate, "threshold": self.threshold,
                   "n_escalated": len(chosen)}
        if spent_before is not None:  # what escalating this answer cost (a remote judge's tokens)
            cascade["verifier_usage"] = {k: v - spent_before.get(k, 0) for k, v in _usage(self.verifier).items()}
        return replace(result, sentences=sentences, answer=answer_summary(sentences), cascade=cascade)


def _usage(verifier: Verifier) -> dict[str, int] | None:
    """A copy of the verifier's running cost totals (``usage``: name -> count), if it keeps them."""
    usage = getattr(verifier, "usage", None)
    return dict(usage) if isinstance(usage, Mapping) else None


def _score(value: float | None) -> float:
    return float("nan") if value is None else float(value)
