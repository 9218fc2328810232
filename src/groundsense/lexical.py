"""Lexical signals: what a sentence states that the evidence's words do not contain.

Deterministic and model-free: they read only the sentence's text and the chunks' texts. Each
is "higher = more suspicious", like every score here.

- ``overlap_chunk``: 1 - the share of the sentence's distinct words found in its
  best-matching chunk (the word-overlap baseline, :class:`~groundsense.verification.lexical.LexicalOverlapVerifier`).
- ``overlap_evidence``: the same over the whole evidence.
- ``content_novel``: the share of the sentence's distinct content words (stop words left
  out) that the evidence lacks.
- ``stem_novel``: the same on Snowball stems, so that "opened" meets "opens".
- ``bigram_novel``: the share of the sentence's word pairs that the evidence lacks.
- ``novel_numbers``: how many distinct numbers it states that the evidence does not
  (normalised: ``4,200`` = ``4200``, ``1.50`` = ``1.5``, ``12%`` = ``12``; the evidence's
  number words count too, so ``6 weeks`` meets ``six weeks``).
- ``novel_names``: how many distinct capitalised words past its first word the evidence
  lacks.

:func:`absent_terms` lists the words, numbers and names behind them: the reason shown with a
flag ("absent from the evidence: Eiffel, 1990").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

import numpy as np

__all__ = ["LEXICAL", "EvidenceWords", "lexical_signals", "absent_terms", "overlap"]

LEXICAL = (
    "overlap_chunk", "overlap_evidence", "content_novel", "stem_novel", "bigram_novel", "novel_numbers", "novel_names",
)

_WORD = re.compile(r"\w+")
# A number as written: digits with thousands commas or spaces-free groups, an optional decimal part.
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)|(?<![\w,.])\d+(?:\.\d+)?(?![\w])")
_NAME = re.compile(r"\b[A-Z][\w'’-]*")
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
     "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000"}


def words(text: str) -> set[str]:
    """The distinct lower-cased word tokens (``\\w+``) of ``text``."""
    return set(_WORD.findall(text.lower()))


@cache
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@cache
def _stemmer() -> Any:  # a snowballstemmer stemmer (the package ships no types)
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def stem(word: str) -> str:
    """The Snowball (English) stem of a lower-cased word."""
    return _stemmer().stemWord(word)


def content_words(text: str) -> list[str]:
    """The lower-cased words of ``text`` in order, stop words and pure digits left out."""
    stop = _stop_words()
    return [w for w in _WORD.findall(text.lower()) if w not in stop and not w.isdigit()]


def normalise_number(written: str) -> str:
    """A number's canonical form: thousands commas dropped, trailing decimal zeros dropped."""
    try:
        value = Decimal(written.replace(",", ""))
    except InvalidOperation:
        return written
    return format(value.normalize(), "f")


def numbers(text: str) -> dict[str, str]:
    """The numbers written in digits in ``text``: canonical form -> the first way it was written."""
    found: dict[str, str] = {}
    for match in _NUMBER.finditer(text):
        found.setdefault(normalise_number(match.group()), match.group())
    return found


def overlap(sentence: str, chunks: Sequence[str]) -> np.ndarray:
    """Per chunk, the share of the sentence's distinct words that occur in it (0 for a
    sentence without words)."""
    own = words(sentence)
    if not own:
        return np.zeros(len(chunks))
    return np.array([len(own & words(chunk)) / len(own) for chunk in chunks], dtype=float)


def _bigrams(tokens: Sequence[str]) -> set[tuple[str, str]]:
    return set(zip(tokens, tokens[1:]))


@dataclass(frozen=True)
class EvidenceWords:
    """The evidence's vocabulary in every form the signals compare with, built once per answer."""

    chunks: list[set[str]]  # each chunk's distinct words
    words: set[str]
    stems: set[str]
    bigrams: set[tuple[str, str]]
    numbers: set[str]  # canonical forms, number words included

    @classmethod
    def of(cls, chunks: Sequence[str]) -> EvidenceWords:
        per_chunk = [_WORD.findall(chunk.lower()) for chunk in chunks]
        everything = set().union(*map(set, per_chunk)) if per_chunk else set()
        found = {n for chunk in chunks for n in numbers(chunk)}
        found |= {_NUMBER_WORDS[w] for w in everything if w in _NUMBER_WORDS}
        return cls(
            chunks=[set(tokens) for tokens in per_chunk],
            words=everything,
            stems={stem(w) for w in everything},
            bigrams=set().union(*map(_bigrams, per_chunk)) if per_chunk else set(),
            numbers=found,
        )


def _share_missing(own: set, present: set) -> float:
    return len(own - present) / len(own) if own else 0.0


def _names(sentence: str) -> list[str]:
    """Capitalised words past the sentence's first word, stop words left out, in order."""
    stop = _stop_words()
    first = _WORD.search(sentence)
    return [m.group() for m in _NAME.finditer(sentence)
            if m.group().lower() not in stop and (first is None or m.start() > first.start())]


def _name_absent(name: str, evidence: EvidenceWords) -> bool:
    parts = _WORD.findall(name.lower())
    return bool(parts) and any(p not in evidence.words for p in parts)


def lexical_signals(sentence: str, evidence: EvidenceWords) -> dict[str, float]:
    """The :data:`LEXICAL` signals of one sentence."""
    tokens = _WORD.findall(sentence.lower())
    own = set(tokens)
    content = set(content_words(sentence))
    best = max((len(own & chunk) for chunk in evidence.chunks), default=0)
    return {
        "overlap_chunk": 1.0 - (best / len(own) if own else 0.0),
        "overlap_evidence": _share_missing(own, evidence.words) if own else 1.0,
        "content_novel": _share_missing(content, evidence.words),
        "stem_novel": _share_missing({stem(w) for w in content}, evidence.stems),
        "bigram_novel": _share_missing(_bigrams(tokens), evidence.bigrams),
        "novel_numbers": float(len(set(numbers(sentence)) - evidence.numbers)),
        "novel_names": float(len({n.lower() for n in _names(sentence) if _name_absent(n, evidence)})),
    }


def absent_terms(sentence: str, evidence: EvidenceWords) -> list[str]:
    """What the sentence states that no chunk contains, as written: numbers the evidence does
    not state and capitalised words it lacks first, then other words whose stem it lacks, each
    group in sentence order. Stop words and words the evidence has in another form are left out."""
    absent: dict[str, tuple[int, int, str]] = {}  # key -> (group, position, as written)
    for canonical, written in numbers(sentence).items():
        if canonical not in evidence.numbers:
            absent.setdefault("#" + canonical, (0, sentence.find(written), written))
    stop = _stop_words()
    for match in _WORD.finditer(sentence):
        word = match.group()
        lower = word.lower()
        if lower in stop or lower in evidence.words or any(c.isdigit() for c in lower):
            continue
        if stem(lower) not in evidence.stems:
            absent.setdefault(lower, (0 if word[0].isupper() else 1, match.start(), word))
    return [written for *_, written in sorted(absent.values())]
