"""The detector's conditions, scored exactly: the question-and-answer tail run after each
condition's own evidence encoding, for a whole answer (:func:`score_exact`) or for an
answer that arrives in pieces (:func:`open_conditions`, :func:`score_next`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .condition_encoder import ConditionEncoder
from .encoding import EncodedPrompt
from .kv import cropped_copy
from .passes import ModelPasses, StackedCaches
from .token_scores import ConditionRows, TokenScores

if TYPE_CHECKING:
    from transformers import Cache

BATCH_LOGITS = 2**24  # logits (rows x positions x vocabulary) one batched forward call may return


@dataclass
class OpenConditions:
    """An answer's conditions being scored as it arrives: each condition's KV cache (row
    order as in :class:`TokenScores`) up to the last token fed, as a list of their own or
    as one :class:`StackedCaches` that every step runs over in one forward call; and the
    token the next piece's first token is predicted from (not fed yet)."""

    caches: list[Cache] | StackedCaches
    next_input: int
    tokens_processed: int = 0

    @property
    def rows(self) -> int:
        return len(self.caches.lengths) if isinstance(self.caches, StackedCaches) else len(self.caches)


def score_exact(
    encoder: ConditionEncoder, prompt: EncodedPrompt, rows: int, block_size: int, batched: bool
) -> TokenScores:
    """The first ``rows`` conditions' scores of the answer. ``batched`` runs their tails
    together, one forward call for every condition (:func:`score_next` over the conditions'
    caches stacked); otherwise one at a time, so that only the caches in use are in memory."""
    tail = prompt.tail
    if batched:
        with encoder.lease(prompt.prefix, prompt.chunks) as lease:
            caches, encoded = encoder.caches(lease, prompt.prefix, prompt.chunks, rows, prompt.lead)
            conditions = OpenConditions(encoder.passes.stack(caches), tail[0], encoded)
        return replace(score_next(encoder.passes, conditions, prompt.answer.ids, block_size),
                       tokens_processed=conditions.tokens_processed)
    scores = ConditionRows(rows, prompt.answer.ids, block_size, encoder.passes.device)

    def run(row: int, cache: Cache) -> None:
        scores.add(row, encoder.passes.tail_logits(tail, cache, len(tail)))

    _, encoded = encoder.each(prompt.prefix, prompt.chunks, rows, prompt.lead, run)
    return scores.scores(encoded + rows * len(tail))


def open_conditions(
    encoder: ConditionEncoder, prefix: list[int], chunks: list[list[int]], middle: list[int], rows: int,
    batched: bool,
) -> OpenConditions:
    """Each of the first ``rows`` conditions' caches up to the prompt's last token, as copies
    of its own (stacked into one batch when ``batched``), for :func:`score_next`."""
    def copy(row: int, cache: Cache) -> Cache:
        return cropped_copy(cache, cache.get_seq_length())

    caches, encoded = encoder.each(prefix, chunks, rows, tuple(middle[:-1]), copy)
    return OpenConditions(encoder.passes.stack(caches) if batched else caches, middle[-1], encoded)


def score_next(
    passes: ModelPasses, conditions: OpenConditions, ids: list[int], block_size: int
) -> TokenScores:
    """The scores of the answer's next tokens ``ids`` under every condition, each
    condition's cache extended by them. Stacked caches run in pieces of at most :data:`BATCH_LOGITS` logits."""
    rows = conditions.rows
    stacked = isinstance(conditions.caches, StackedCaches)
    step = max(1, BATCH_LOGITS // (rows * passes.model.config.vocab_size)) if stacked else len(ids)
    logp, jsd = [], []
    for start in range(0, len(ids), step):
        piece = ids[start : start + step]
        inputs = [conditions.next_input, *piece[:-1]]
        scores = ConditionRows(rows, piece, block_size, passes.device)
        if isinstance(conditions.caches, StackedCaches):
            logits = passes.stacked_forward(inputs, conditions.caches, len(inputs))
            for row in range(rows):
                scores.add(row, logits[row : row + 1])
        else:
            for row, cache in enumerate(conditions.caches):
                row_logits = passes.forward(inputs, cache, len(inputs)).logits
                assert row_logits is not None  # a causal LM's output always holds them
                scores.add(row, row_logits)
        conditions.next_input = piece[-1]
        conditions.tokens_processed += len(inputs) * rows
        logp.append(scores.logp)
        jsd.append(scores.jsd)
    return TokenScores(np.hstack(logp), np.hstack(jsd), len(ids) * rows)
