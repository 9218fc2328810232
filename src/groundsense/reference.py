"""The method by its definition: one independent forward pass per condition, no cache
reuse, logits at every position. Slow on purpose; tests and benchmarks check the fast
path in :mod:`groundsense.scorer` against it."""

from __future__ import annotations

import numpy as np
import torch

from .scorer import EncodedPrompt, Scorer, TokenScores


@torch.inference_mode()
def independent_token_scores(scorer: Scorer, prompt: EncodedPrompt, leave_one_out: bool = True) -> TokenScores:
    n_answer = len(prompt.answer.ids)
    target = torch.tensor(prompt.answer.ids, device=scorer.device)
    conditions = [prompt.condition_ids(), prompt.condition_ids(no_context=True)]
    if leave_one_out:
        conditions += [prompt.condition_ids(without=k) for k in range(len(prompt.chunks))]
    logp = np.zeros((len(conditions), n_answer))
    jsd = np.zeros_like(logp)
    full = None
    for row, ids in enumerate(conditions):
        logits = scorer.model(input_ids=torch.tensor([ids], device=scorer.device)).logits[:, -n_answer:]
        if full is None:
            full = torch.log_softmax(logits[0].float(), dim=-1)
        logp[row], jsd[row] = scorer._compare(full, logits, target)
    return TokenScores(logp=logp, jsd=jsd, tokens_processed=sum(map(len, conditions)))
