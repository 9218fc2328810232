"""Masked leave-one-out, an approximation of the leave-one-out conditions.

The full context and the question are encoded once (their caches come from the kept
evidence like the exact conditions' do). The tail of row ``2 + k`` then runs over that
encoding with chunk k's positions masked out, its position ids unchanged; the question's
and the later chunks' cached states still carry what they read in chunk k, which is what
this approximates. Row 0 (nothing hidden) and the masked rows run packed into one
sequence, as many per forward call as keep its attention scores within ``PACK_ATTENTION``
query-key pairs (:func:`masked_tails`): on RAGTruth-length contexts that is all of them or
a few per call, and one per call near 4k tokens, where packing more raised the peak memory
more than it saved time. The full- and no-context rows stay exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from .condition_encoder import ConditionEncoder
from .encoding import EncodedPrompt
from .kv import crop
from .passes import ModelPasses
from .token_scores import ConditionRows, TokenScores

if TYPE_CHECKING:
    from transformers import Cache

PACK_ATTENTION = 2**19  # query-key pairs one packed forward call may hold


def additive_mask(visible: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A float attention mask from a boolean one (True = may attend): 0 where visible, the
    dtype's lowest value elsewhere. Float masks work with sdpa, eager and the aligned attention alike."""
    return torch.zeros(visible.shape, dtype=dtype, device=visible.device).masked_fill_(~visible, torch.finfo(dtype).min)


def score_masked(encoder: ConditionEncoder, prompt: EncodedPrompt, block_size: int) -> TokenScores:
    """The rows of :func:`~.conditions.score_exact`, the leave-one-out ones approximated."""
    rows = 2 + len(prompt.chunks)
    scores = ConditionRows(rows, prompt.answer.ids, block_size, encoder.passes.device)
    tail = prompt.tail

    def run(row: int, cache: Cache) -> None:
        if row == 0:
            _add_masked_rows(encoder.passes, prompt, tail, cache, scores)
        else:
            scores.add(1, encoder.passes.tail_logits(tail, cache, len(tail)))

    _, encoded = encoder.each(prompt.prefix, prompt.chunks, 2, prompt.lead, run)
    return scores.scores(encoded + rows * len(tail))


def _add_masked_rows(
    passes: ModelPasses, prompt: EncodedPrompt, tail: list[int], full: Cache, scores: ConditionRows
) -> None:
    """Row 0 and the masked rows ``2 + k`` over ``full``, the full context's cache."""
    ends = np.cumsum([len(prompt.prefix)] + [len(c) for c in prompt.chunks]).tolist()
    hidden = [(0, 0)] + list(zip(ends[:-1], ends[1:]))  # row 0 hides nothing; row 2 + k chunk k
    rows = [0] + [2 + k for k in range(len(prompt.chunks))]
    per_pass, n, length = 1, len(tail), full.get_seq_length()
    while per_pass < len(rows) and (per_pass + 1) * n * (length + (per_pass + 1) * n) <= PACK_ATTENTION:
        per_pass += 1
    for start in range(0, len(rows), per_pass):
        logits = masked_tails(passes, tail, full, hidden[start : start + per_pass])
        for i, row in enumerate(rows[start : start + per_pass]):
            scores.add(row, logits[i : i + 1])


def masked_tails(passes: ModelPasses, tail: list[int], cache: Cache, hidden: list[tuple[int, int]]) -> torch.Tensor:
    """Logits ``[len(hidden), len(tail), vocab]`` of ``tail`` run after ``cache`` once
    per ``(start, stop)`` in ``hidden``, with those cache positions masked out.

    The copies are packed into one sequence (batch 1, so the cache is not copied): each
    copy attends to the cache minus its hidden span and causally to its own tokens,
    never to another copy, and takes the positions it would have had alone.
    """
    device = passes.device
    length, n, copies = cache.get_seq_length(), len(tail), len(hidden)
    visible = torch.zeros(copies, n, length + copies * n, dtype=torch.bool, device=device)
    own = torch.ones(n, n, dtype=torch.bool, device=device).tril()
    for i, (start, stop) in enumerate(hidden):
        visible[i, :, :length] = True
        visible[i, :, start:stop] = False
        visible[i, :, length + i * n : length + (i + 1) * n] = own
    mask = additive_mask(visible, passes.model.dtype)
    positions = torch.arange(length, length + n, device=device).repeat(copies)
    logits = passes.model(
        input_ids=torch.tensor([tail * copies], device=device),
        attention_mask=mask.reshape(1, 1, copies * n, -1), position_ids=positions[None],
        cache=cache, use_cache=True, logits_to_keep=copies * n,
    ).logits
    crop(cache, length)
    return logits.reshape(copies, n, -1)
