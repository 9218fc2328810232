"""The verifiers' passes over the scorer's evidence encodings: answer log-probabilities with
only some chunks left in the context (ContextCite's ablations), and next-token
log-probabilities after several tails over one evidence (the judge, the rater)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from .condition_caches import ConditionEncoder
from .encoding import EncodedPrompt
from .evidence_cache import Ablation
from .kv import cache_bytes, compact, crop

if TYPE_CHECKING:
    from transformers import Cache


def next_token_logprobs(
    encoder: ConditionEncoder, prefix: list[int], chunks: list[list[int]], lead: list[int],
    tails: list[list[int]], token_ids: list[int],
) -> tuple[np.ndarray, int]:
    """Log-probabilities of ``token_ids`` as the next token after ``prefix + chunks + lead +
    tail``, for each tail (shape [len(tails), len(token_ids)]), and the tokens encoded."""
    ids = torch.tensor(token_ids, device=encoder.passes.device)

    def run(row: int, cache: Cache) -> np.ndarray:
        out = np.zeros((len(tails), len(token_ids)))
        for i, tail in enumerate(tails):
            logits = encoder.passes.tail_logits(tail, cache, 1)
            out[i] = torch.log_softmax(logits[0, -1].float(), dim=-1)[ids].double().cpu().numpy()
        return out

    (out,), encoded = encoder.each(prefix, chunks, 1, tuple(lead), run)
    return out, encoded + sum(map(len, tails))


def subset_logprobs(encoder: ConditionEncoder, prompt: EncodedPrompt, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """Answer-token log-probs (shape [len(keep), answer tokens]) with only the chunks
    marked in each row of ``keep`` (bool, [n, K]) left in the context, and the tokens
    encoded. Rows that keep every chunk are the full-context condition. A new ablation
    starts from the encoding (the full evidence's, a kept ablation's or the previous
    row's) that keeps the same leading chunks longest, cut back to where they part, so rows
    in sorted order (as ``numpy.unique`` gives them) encode each run of leading chunks
    once. The ablated encodings are kept with the evidence's (within its budget), so a
    later answer over the same evidence encodes only its own tokens (and the question under
    each ablation, when it changed)."""
    lead, tail, n_answer = prompt.lead, prompt.tail, len(prompt.answer.ids)
    target = torch.tensor(prompt.answer.ids, device=encoder.passes.device)
    logp = np.zeros((len(keep), n_answer))
    fresh: dict[tuple[bool, ...], Ablation] = {}
    previous: dict[tuple[bool, ...], Ablation] = {}
    with encoder.lease(prompt.prefix, prompt.chunks) as lease:
        (full,), processed = encoder.caches(lease, prompt.prefix, prompt.chunks, 1, lead)
        known = lease.entry.subsets if lease.entry is not None else {}
        budget = encoder.kept.budget_bytes - cache_bytes(full) - sum(cache_bytes(a.cache) for a in known.values())
        for row, mask in enumerate(np.asarray(keep, dtype=bool)):
            chunk_mask = tuple(mask.tolist())
            cache, encoded = full, 0
            if not mask.all():
                ablation = known.get(chunk_mask, fresh.get(chunk_mask))
                if ablation is None:
                    sources = {m: a.cache for m, a in (previous | known | fresh).items()}
                    sources[(True,) * len(mask)] = full
                    cache, encoded = encoder.ablated(sources, prompt.chunks, len(prompt.prefix), list(chunk_mask))
                    ablation = Ablation(cache, cache.get_seq_length(), ())
                previous = {chunk_mask: ablation}
                cache = ablation.cache
                if ablation.lead != lead:  # a new question after the same evidence
                    crop(cache, ablation.length)
                    encoder.passes.encode(list(lead), cache)
                    ablation.lead, encoded = lead, encoded + len(lead)
            logq = torch.log_softmax(encoder.passes.tail_logits(tail, cache, n_answer)[0].float(), dim=-1)
            logp[row] = logq.gather(1, target[:, None])[:, 0].double().cpu().numpy()
            processed += encoded + len(tail)
            if mask.all():
                continue
            assert ablation is not None  # set above for every row that leaves a chunk out
            if chunk_mask not in known and chunk_mask not in fresh and cache_bytes(cache) <= budget:
                fresh[chunk_mask], budget = ablation, budget - cache_bytes(cache)
            if chunk_mask in known or chunk_mask in fresh:
                compact(cache)  # kept: without the tail's storage
        if lease.entry is not None:
            lease.entry.subsets.update(fresh)
    return logp, processed
