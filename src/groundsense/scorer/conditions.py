"""The detector's conditions, scored exactly: the question-and-answer tail run after each
condition's own evidence encoding, for a whole answer (:func:`score_exact`) or for an
answer that arrives in pieces (:func:`open_conditions`, :func:`score_next`)."""

from __future__ import annotations

from dataclasses import dataclass

from .condition_caches import ConditionEncoder
from .encoding import EncodedPrompt
from .kv import cropped_copy
from .passes import ModelPasses
from .token_scores import ConditionRows, TokenScores


@dataclass
class ConditionCaches:
    """An answer's conditions being scored as it arrives: each condition's KV cache (row
    order as in :class:`TokenScores`) up to the last token fed, and the token the next
    piece's first token is predicted from (not fed yet)."""

    caches: list
    next_input: int
    tokens_processed: int = 0


def score_exact(
    encoder: ConditionEncoder, prompt: EncodedPrompt, rows: int, block_size: int, batched: bool
) -> TokenScores:
    """The first ``rows`` conditions' scores of the answer. ``batched`` runs their tails as
    one batch; otherwise one at a time, so that only the caches in use are in memory."""
    scores = ConditionRows(rows, prompt.answer.ids, block_size, encoder.passes.device)
    tail = prompt.tail
    if batched:
        with encoder.lease(prompt.prefix, prompt.chunks) as lease:
            caches, encoded = encoder.caches(lease, prompt.prefix, prompt.chunks, rows, prompt.lead)
            for row, logits in enumerate(encoder.passes.batched_tails(tail, caches, len(tail))):
                scores.add(row, logits)
    else:
        def run(row: int, cache) -> None:
            scores.add(row, encoder.passes.tail_logits(tail, cache, len(tail)))

        _, encoded = encoder.each(prompt.prefix, prompt.chunks, rows, prompt.lead, run)
    return scores.scores(encoded + rows * len(tail))


def open_conditions(
    encoder: ConditionEncoder, prefix: list[int], chunks: list[list[int]], middle: list[int], rows: int
) -> ConditionCaches:
    """Each of the first ``rows`` conditions' caches up to the prompt's last token, as copies
    of its own, for :func:`score_next`."""
    def copy(row: int, cache):
        return cropped_copy(cache, cache.get_seq_length())

    caches, encoded = encoder.each(prefix, chunks, rows, tuple(middle[:-1]), copy)
    return ConditionCaches(caches, middle[-1], encoded)


def score_next(passes: ModelPasses, conditions: ConditionCaches, ids: list[int], block_size: int) -> TokenScores:
    """The scores of the answer's next tokens ``ids`` under every condition, each
    condition's cache extended by them."""
    inputs = [conditions.next_input, *ids[:-1]]
    scores = ConditionRows(len(conditions.caches), ids, block_size, passes.device)
    for row, cache in enumerate(conditions.caches):
        scores.add(row, passes.forward(inputs, cache, len(inputs)).logits)
    conditions.next_input = ids[-1]
    processed = len(inputs) * len(conditions.caches)
    conditions.tokens_processed += processed
    return scores.scores(processed)
