"""What a trained verifier reads (docs/detector-selection.md, "A trained verifier"): ``Evidence:
{chunks}\\nClaim: {sentence}\\nSupported?``, the chunks being the evidence as the detector cuts it
(:data:`K` chunks, :data:`CONTEXT_TOKENS` tokens), taken best first by word overlap with the
sentence until :data:`MAX_TOKENS` tokens in all.

The input is built as token ids, piece by piece, so that its length is exact: the chunks go in
the order they are taken, joined by a blank line; the chunk that would pass the budget keeps the
tokens that fit, and no chunk follows it. A claim longer than the budget less the prompt is cut
to it too (none is, in td-2: its longest sentence takes about 110 tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from groundsense.config import DEFAULTS
from groundsense.inputs import Tokenizer, build_evidence
from groundsense.lexical import overlap
from groundsense.verification import SentenceInput

K = DEFAULTS.k
CONTEXT_TOKENS = DEFAULTS.max_context_tokens
MAX_TOKENS = 512
EVIDENCE, CLAIM, QUESTION, SEPARATOR = "Evidence: ", "\nClaim: ", "\nSupported?", "\n\n"


def chunk_texts(tokenizer: Tokenizer, context: str | None, passages: Sequence[str] | None) -> list[str]:
    """The evidence's chunks as the detector cuts them: ``context`` in :data:`K` chunks, or each
    passage one chunk, within :data:`CONTEXT_TOKENS` tokens."""
    evidence = build_evidence(tokenizer, context, None if passages is None else list(passages), K, CONTEXT_TOKENS)
    return [chunk.content.of(evidence.context) for chunk in evidence.chunks]


def best_first(sentence: str, chunks: Sequence[str]) -> list[str]:
    """``chunks`` by their share of the sentence's words, highest first (evidence order on ties)."""
    shares = overlap(sentence, chunks)
    return [chunks[i] for i in np.argsort(-shares, kind="stable")]


def input_ids(tokenizer: Tokenizer, chunks: Sequence[str], sentence: str, max_tokens: int = MAX_TOKENS) -> list[int]:
    """The token ids of one claim's input, at most ``max_tokens`` of them."""
    evidence, claim, question = (tokenizer.tokenize(text) for text in (EVIDENCE, CLAIM, QUESTION))
    said = tokenizer.tokenize(sentence)[: max(0, max_tokens - len(evidence) - len(claim) - len(question))]
    room = max_tokens - len(evidence) - len(claim) - len(said) - len(question)
    separator = tokenizer.tokenize(SEPARATOR)
    taken: list[int] = []
    for chunk in best_first(sentence, chunks):
        lead = separator if taken else []
        ids = tokenizer.tokenize(chunk)
        fits = room - len(taken) - len(lead)
        if fits <= 0:
            break
        taken += lead + ids[:fits]
        if len(ids) > fits:
            break
    return evidence + taken + claim + said + question


def sentence_inputs(tokenizer: Tokenizer, sentences: SentenceInput) -> list[list[int]]:
    """The input ids of each sentence of one answer, over its evidence's chunks."""
    chunks = chunk_texts(tokenizer, sentences.context, sentences.passages)
    return [input_ids(tokenizer, chunks, text) for text in sentences.texts()]
