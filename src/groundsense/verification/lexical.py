"""Word overlap between a sentence and evidence chunks: the simplest
:class:`~groundsense.verification.verifier.Verifier` for a :class:`~groundsense.verification.cascade.Cascade`."""

from __future__ import annotations

from ..lexical import overlap
from .verifier import Verifier


class LexicalOverlapVerifier(Verifier):
    """Scores a sentence 1 - (share of its words found in the best-matching chunk): a
    sentence copied from a chunk scores 0, one sharing no word with any chunk 1. It costs
    no model pass."""

    name = "lexical-overlap"

    def score_sentences(self, question: str, chunks: list[str], sentences: list[str]) -> list[float]:
        return [1.0 - float(overlap(s, chunks).max(initial=0.0)) for s in sentences]
