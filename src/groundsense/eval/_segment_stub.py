"""Temporary sentence segmenter used only until ``groundsense.text`` is on this branch."""

import re
from typing import NamedTuple


class Span(NamedTuple):
    """Same ``start``/``end`` attributes as ``groundsense.text.Span``."""

    start: int
    end: int


_SENTENCE = re.compile(r"[^\n]*?(?:[.!?](?=\s|$)|(?=\n)|$)")


def segment_sentences(text: str) -> list[Span]:
    """Split on ``.``/``!``/``?`` followed by whitespace and on newlines; spans exclude outer whitespace."""
    spans = []
    for match in _SENTENCE.finditer(text):
        start, end = match.span()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end and (not spans or start >= spans[-1].end):
            spans.append(Span(start, end))
    return spans
