"""The evidence as scored: one context string, its removable chunks, and what was cut to
fit the scorer's context budget."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ..errors import InputError
from .text import Chunk, Span, chunk_context, join_passages, strip_span


class Tokenizer(Protocol):
    """What cutting the evidence needs of the scorer (a :class:`~groundsense.scorer.Scorer` is one):
    its token ids of a text, and each token's character span ([n_tokens, 2])."""

    def tokenize(self, text: str) -> list[int]: ...

    def token_offsets(self, text: str) -> np.ndarray: ...


@dataclass(frozen=True)
class Evidence:
    """The evidence as scored: its text, its removable chunks and how many tokens were cut."""

    context: str  # the string every chunk span indexes (passages joined by a blank line)
    chunks: list[Chunk]
    tokens_removed: int  # context tokens cut from the end to fit the budget

    def chunk_text(self, chunk: Chunk) -> str:
        """The exact characters that leaving ``chunk`` out removes."""
        return chunk.removal.of(self.context)

    @property
    def cut_text(self) -> str:
        """The evidence past the budget, which no chunk holds ("" when nothing was cut)."""
        if not self.tokens_removed:
            return ""
        return self.context[self.chunks[-1].removal.end:] if self.chunks else self.context


def build_evidence(
    scorer: Tokenizer, context: str | None, passages: list[str] | None, k: int, max_tokens: int
) -> Evidence:
    """Chunk the evidence and cut it at ``max_tokens`` scorer tokens, keeping the start.

    A context string is cut first and then split into ``k`` chunks; passages keep their
    own chunks, and the ones past the cut are dropped (the one straddling it is clipped).
    """
    if passages is not None:
        text, chunks = join_passages(passages)
    else:
        assert context is not None, "check_evidence refuses a request without evidence"
        text, chunks = context, []
    budget = max_tokens
    while True:
        cut, removed = _cut(scorer, text, budget)
        kept = _clip(text, chunks, cut) if passages is not None else chunk_context(text[:cut], k)
        evidence = Evidence(text, kept, removed)
        excess = sum(len(scorer.tokenize(evidence.chunk_text(c))) for c in kept) - max_tokens
        if excess <= 0 or budget <= 0:
            if not kept:  # an answer scored without evidence would be judged on nothing
                raise InputError(f"the context token budget ({max_tokens}) keeps none of the evidence (its first "
                                 "tokens are blank, or too few fit): raise max_context_tokens, or trim the "
                                 "evidence's start")
            return evidence
        budget -= excess  # pieces tokenised apart can take a few more tokens than the whole


def _cut(scorer: Tokenizer, text: str, budget: int) -> tuple[int, int]:
    """Character position where ``budget`` tokens end, and how many tokens lie past it."""
    offsets = scorer.token_offsets(text)
    if len(offsets) <= budget:
        return len(text), 0
    return int(offsets[max(budget, 0)][0]), len(offsets) - max(budget, 0)


def _clip(text: str, chunks: list[Chunk], cut: int) -> list[Chunk]:
    """The chunks that start before ``cut``, ended there; a clipped content is stripped again (the
    cut often falls after a space or a line break)."""
    kept = []
    for chunk in chunks:
        if chunk.content.start >= cut:
            break
        content = strip_span(text, chunk.content.start, min(chunk.content.end, cut))
        assert content is not None  # a chunk's content starts with a visible character, before the cut
        kept.append(replace(chunk, removal=Span(chunk.removal.start, min(chunk.removal.end, cut)), content=content))
    return kept
