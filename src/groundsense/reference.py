"""The method by its definition: one independent forward pass per condition, batch size 1,
no KV cache, logits at every position (the answer positions sliced afterwards). Slow on
purpose: the tests check the fast path in :mod:`groundsense.scorer` against it, and the
speed benchmark uses it as the naive baseline."""

from __future__ import annotations

import numpy as np
import torch

from .scorer import EncodedPrompt, Scorer, TokenScores, js_divergence


def condition_sequences(prompt: EncodedPrompt, leave_one_out: bool = True) -> list[list[int]]:
    """Token ids of every condition, in row order: full, none, without chunk k."""
    conditions = [prompt.condition_ids(), prompt.condition_ids(no_context=True)]
    if leave_one_out:
        conditions += [prompt.condition_ids(without=k) for k in range(len(prompt.chunks))]
    return conditions


@torch.inference_mode()
def independent_token_scores(scorer: Scorer, prompt: EncodedPrompt, leave_one_out: bool = True) -> TokenScores:
    n_answer = len(prompt.answer.ids)
    target = torch.tensor(prompt.answer.ids, device=scorer.device)
    conditions = condition_sequences(prompt, leave_one_out)
    logp = np.zeros((len(conditions), n_answer))
    jsd = np.zeros_like(logp)
    full = None
    for row, ids in enumerate(conditions):
        logits = scorer.model(input_ids=torch.tensor([ids], device=scorer.device), use_cache=False).logits
        logq = torch.log_softmax(logits[0, -n_answer:].float(), dim=-1)
        full = logq if full is None else full
        logp[row] = logq.gather(1, target[:, None])[:, 0].double().cpu().numpy()
        jsd[row] = js_divergence(full, logq).double().cpu().numpy()
    return TokenScores(logp=logp, jsd=jsd, tokens_processed=sum(map(len, conditions)))
