"""Sentence spans and context chunks as character offsets of the caller's own strings.

Nothing here re-joins or normalises text: every span indexes the string it came from, so
``text[start:end]`` is always the reported sentence or chunk.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pysbd

# Line breaks, and the other separators and controls that must never join two sentences
# (NUL among them): each ends a sentence, like a newline.
_NEWLINES = re.compile("[\n\r\v\f\x00\x1c-\x1e\x85\u2028\u2029]+")


def invisible(ch: str) -> bool:
    """Whitespace, a control character (NUL, ESC) or a format character (U+200B, U+FEFF):
    nothing a reader sees."""
    return ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf")


def is_blank(text: str) -> bool:
    """True when ``text`` holds no visible character: it counts as empty."""
    return all(invisible(ch) for ch in text)


@dataclass(frozen=True)
class Span:
    start: int
    end: int

    def of(self, text: str) -> str:
        return text[self.start : self.end]


@dataclass(frozen=True)
class Chunk:
    """One removable piece of evidence.

    ``removal`` is the exact character range deleted when the chunk is left out (it
    carries the whitespace or separator that joins it to its neighbour); ``content`` is
    the stripped passage shown to a reader as support.
    """

    index: int
    removal: Span
    content: Span
    passage: int | None = None  # position in the caller's passage list, when passages were given


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False)


def strip_span(text: str, start: int, end: int) -> Span | None:
    """``text[start:end]`` without its invisible ends; None when nothing visible is left."""
    while start < end and invisible(text[start]):
        start += 1
    while end > start and invisible(text[end - 1]):
        end -= 1
    return Span(start, end) if end > start else None


def segment_sentences(text: str) -> list[Span]:
    """Split ``text`` into sentence spans: line breaks (and NUL and the other separators of
    ``_NEWLINES``) always end a sentence, and pysbd finds the boundaries inside a line.
    Spans are stripped of surrounding invisible characters (:func:`invisible`)."""
    spans: list[Span] = []
    line_start = 0
    for match in [*_NEWLINES.finditer(text), None]:
        line_end = match.start() if match else len(text)
        line = text[line_start:line_end]
        if not is_blank(line):
            spans.extend(_segment_line(text, line, line_start))
        if match:
            line_start = match.end()
    return spans


def _segment_line(text: str, line: str, offset: int) -> list[Span]:
    spans: list[Span] = []
    cursor = 0
    for piece in _segmenter().segment(line):
        found = line.find(piece, cursor) if piece else -1
        if found < 0:
            # pysbd altered the text (it should not with clean=False): keep the rest whole.
            rest = strip_span(text, offset + cursor, offset + len(line))
            return spans + ([rest] if rest else [])
        span = strip_span(text, offset + found, offset + found + len(piece))
        if span:
            spans.append(span)
        cursor = found + len(piece)
    tail = strip_span(text, offset + cursor, offset + len(line))
    return spans + ([tail] if tail else [])


def chunk_context(context: str, k: int) -> list[Chunk]:
    """Split one context string into at most ``k`` chunks of consecutive sentences.

    Sentences are shared out as evenly as their count allows (``numpy.array_split``).
    Chunk removal ranges tile the whole string: the whitespace between two chunks goes
    with the later one, so removing a chunk deletes exactly its characters.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    sentences = segment_sentences(context)
    if not sentences:
        return []
    groups = [g for g in np.array_split(np.arange(len(sentences)), min(k, len(sentences))) if len(g)]
    chunks = []
    for index, group in enumerate(groups):
        first, last = sentences[group[0]], sentences[group[-1]]
        removal_start = 0 if index == 0 else sentences[group[0] - 1].end
        removal_end = len(context) if index == len(groups) - 1 else last.end
        chunks.append(Chunk(index, Span(removal_start, removal_end), Span(first.start, last.end)))
    return chunks


PASSAGE_SEPARATOR = "\n\n"


def join_passages(passages: list[str]) -> tuple[str, list[Chunk]]:
    """Join passages into one context string, one chunk per non-blank passage (blank
    passages carry no evidence and are skipped; ``Chunk.passage`` keeps the caller's index).

    The separator before a passage belongs to that passage's removal range, so removing
    passage ``k`` leaves the others joined exactly as before.
    """
    context = ""
    chunks: list[Chunk] = []
    for position, passage in enumerate(passages):
        if is_blank(passage):
            continue
        removal_start = len(context)
        if chunks:
            context += PASSAGE_SEPARATOR
        body_start = len(context)
        context += passage
        content = strip_span(context, body_start, len(context))
        assert content is not None
        chunks.append(Chunk(len(chunks), Span(removal_start, len(context)), content, position))
    return context, chunks
