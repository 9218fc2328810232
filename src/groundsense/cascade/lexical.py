"""Word overlap between a sentence and evidence chunks: the lexical control for attribution
and the simplest :class:`~groundsense.cascade.verifier.Verifier` for a :class:`~groundsense.cascade.cascade.Cascade`."""

from __future__ import annotations

import re

import numpy as np

from .verifier import Verifier

_WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    """The distinct lower-cased word tokens (``\\w+``) of ``text``."""
    return set(_WORD.findall(text.lower()))


def overlap(sentence: str, chunks: list[str]) -> np.ndarray:
    """Per chunk, the share of the sentence's distinct words that occur in it (0 for a
    sentence without words)."""
    own = words(sentence)
    if not own:
        return np.zeros(len(chunks))
    return np.array([len(own & words(chunk)) / len(own) for chunk in chunks], dtype=float)


def lexical_chunk(sentence: str, chunks: list[str]) -> int | None:
    """The chunk sharing the most words with the sentence (the first on ties); None when
    there are no chunks."""
    return int(np.argmax(overlap(sentence, chunks))) if chunks else None


class LexicalOverlapVerifier(Verifier):
    """Scores a sentence 1 - (share of its words found in the best-matching chunk): a
    sentence copied from a chunk scores 0, one sharing no word with any chunk 1. It costs
    no model pass."""

    name = "lexical-overlap"

    def score_sentences(self, question: str, chunks: list[str], sentences: list[str]) -> list[float]:
        return [1.0 - float(overlap(s, chunks).max(initial=0.0)) for s in sentences]
