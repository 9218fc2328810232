"""What a verifier is: it scores the sentences of an answer against the evidence, one score
per sentence, higher = more likely unsupported.

:meth:`Verifier.score_sentences` is the primitive every verifier provides and what a
:class:`~groundsense.verification.cascade.Cascade` calls; any object with that method counts as a
:class:`Verifier`. A verifier that needs the answer as written (its sentence spans, the
evidence before chunking) reads a :class:`SentenceInput`, which
:meth:`SentenceInput.from_texts` makes from the primitive's arguments.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Protocol

from ..inputs.text import Span


@dataclass(frozen=True)
class SentenceInput:
    """The sentences of one answer (``spans`` index ``answer``), its question and its
    evidence: exactly one of ``context`` (one document) and ``passages`` (retrieved passages)."""

    question: str
    answer: str
    spans: list[Span]
    context: str | None = None
    passages: list[str] | None = None

    def __post_init__(self) -> None:
        if (self.context is None) == (self.passages is None):
            raise ValueError("exactly one of context and passages must be set")
        for span in self.spans:
            if not 0 <= span.start < span.end <= len(self.answer):
                raise ValueError(f"sentence span {span.start}:{span.end} outside the answer")

    @classmethod
    def from_texts(cls, question: str, chunks: list[str], sentences: list[str]) -> SentenceInput:
        """The primitive's arguments: the sentences joined by single spaces into the answer,
        the chunks as the passages (so the evidence is chunked as given)."""
        answer, spans = "", []
        for text in sentences:
            answer += " " if answer else ""
            spans.append(Span(len(answer), len(answer) + len(text)))
            answer += text
        return cls(question, answer, spans, passages=list(chunks))

    def texts(self) -> list[str]:
        return [span.of(self.answer) for span in self.spans]


class ScoresSentences(Protocol):
    """What a cascade takes as its verifier, as a type checker sees it: any object with
    :meth:`Verifier.score_sentences` (``isinstance(x, Verifier)`` says the same at run time)."""

    def score_sentences(self, question: str, chunks: list[str], sentences: list[str]) -> list[float]: ...


class Verifier(ABC):
    """Scores sentences against evidence chunks, higher = more likely unsupported.

    ``name`` is what a cascade reports. ``scores_are_probabilities`` is False for a verifier
    whose score is not a probability of being unsupported (an attribution, say): a cascade
    cannot threshold it. ``isinstance(x, Verifier)`` holds for any object whose class has a
    ``score_sentences`` method, so a verifier need not subclass this.
    """

    scores_are_probabilities: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return type(self).__name__

    @abstractmethod
    def score_sentences(self, question: str, chunks: list[str], sentences: list[str]) -> list[float]:
        """One score per sentence text of ``sentences``, against ``chunks``: the evidence
        chunks exactly as the detector scored them."""

    @classmethod
    def __subclasshook__(cls, other: type) -> bool:
        if cls is Verifier and any("score_sentences" in vars(base) for base in other.__mro__):
            return True
        return NotImplemented
