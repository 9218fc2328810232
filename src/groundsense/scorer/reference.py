"""The method by its definition: one independent forward pass per condition, batch size 1,
no KV cache, logits at every position (the answer positions sliced afterwards). Slow on
purpose: the tests check the fast path in :mod:`groundsense.scorer` against it, and the
speed benchmark uses it as the naive baseline.

:func:`masked_token_scores` is the same for the masked leave-one-out approximation: each
leave-one-out row is one pass over the full-context sequence in which the tail (the last
prompt token and the answer) cannot attend to chunk k's positions.

:func:`subset_logprobs` is the same for ContextCite's ablations, as the ``context-cite``
package runs them: one pass per chunk mask over the prompt without the left-out chunks.
"""

from __future__ import annotations

import numpy as np
import torch

from . import EncodedPrompt, Scorer, TokenScores, additive_mask, js_divergence


def condition_sequences(prompt: EncodedPrompt, leave_one_out: bool = True) -> list[list[int]]:
    """Token ids of every condition, in row order: full, none, without chunk k."""
    conditions = [prompt.condition_ids(), prompt.condition_ids(no_context=True)]
    if leave_one_out:
        conditions += [prompt.condition_ids(without=k) for k in range(len(prompt.chunks))]
    return conditions


def independent_token_scores(scorer: Scorer, prompt: EncodedPrompt, leave_one_out: bool = True) -> TokenScores:
    return _scores(scorer, prompt, [(ids, None) for ids in condition_sequences(prompt, leave_one_out)])


def masked_token_scores(scorer: Scorer, prompt: EncodedPrompt) -> TokenScores:
    """Rows full and none as in :func:`independent_token_scores`; row ``2 + k`` from the
    full-context sequence with a causal mask in which the tail's rows do not see chunk k."""
    ids = prompt.condition_ids()
    tail_start = len(ids) - len(prompt.answer.ids)  # the last prompt token, then the answer
    ends = np.cumsum([len(prompt.prefix)] + [len(c) for c in prompt.chunks]).tolist()
    conditions: list[tuple[list[int], torch.Tensor | None]] = [
        (ids, None), (prompt.condition_ids(no_context=True), None)
    ]
    for start, stop in zip(ends[:-1], ends[1:]):
        visible = torch.ones(len(ids), len(ids), dtype=torch.bool).tril()
        visible[tail_start:, start:stop] = False
        conditions.append((ids, visible))
    return _scores(scorer, prompt, conditions)


@torch.inference_mode()
def subset_logprobs(scorer: Scorer, prompt: EncodedPrompt, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """What :func:`groundsense.verification.contextcite.subset_logprobs` computes: the answer
    tokens' log-probabilities ([masks, T]) with only the chunks marked in each row of
    ``keep``, and the tokens run."""
    n_answer = len(prompt.answer.ids)
    target = torch.tensor(prompt.answer.ids, device=scorer.device)[:, None]
    rows, tokens = [], 0
    for mask in keep:
        context = [t for chunk, kept in zip(prompt.chunks, mask) if kept for t in chunk]
        ids = prompt.prefix + context + prompt.middle + prompt.answer.ids[:-1]
        logits = scorer.model(input_ids=torch.tensor([ids], device=scorer.device), use_cache=False,
                              logits_to_keep=n_answer).logits
        rows.append(torch.log_softmax(logits[0].float(), dim=-1).gather(1, target)[:, 0].double().cpu().numpy())
        tokens += len(ids)
    return np.array(rows), tokens


@torch.inference_mode()
def _scores(scorer: Scorer, prompt: EncodedPrompt,
            conditions: list[tuple[list[int], torch.Tensor | None]]) -> TokenScores:
    """One forward pass per ``(ids, visible)`` condition; ``visible`` ([L, L], True = may
    attend) replaces the causal mask when given."""
    n_answer = len(prompt.answer.ids)
    target = torch.tensor(prompt.answer.ids, device=scorer.device)
    logp = np.zeros((len(conditions), n_answer))
    jsd = np.zeros_like(logp)
    full = None
    for row, (ids, visible) in enumerate(conditions):
        mask = None if visible is None else additive_mask(visible, scorer.model.dtype)[None, None].to(scorer.device)
        logits = scorer.model(input_ids=torch.tensor([ids], device=scorer.device), attention_mask=mask,
                              use_cache=False).logits
        logq = torch.log_softmax(logits[0, -n_answer:].float(), dim=-1)
        full = logq if full is None else full
        logp[row] = logq.gather(1, target[:, None])[:, 0].double().cpu().numpy()
        jsd[row] = js_divergence(full, logq).double().cpu().numpy()
    return TokenScores(logp=logp, jsd=jsd, tokens_processed=sum(len(ids) for ids, _ in conditions))
