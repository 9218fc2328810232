"""The scorer: a causal LM that re-scores a fixed answer under K+2 evidence conditions.

Conditions are rows of :class:`TokenScores`: row 0 is the full context, row 1 no
context, row ``2 + k`` the context without chunk ``k``. The prompt puts the evidence first,
so each condition is "its evidence part" + "question and answer" (the tail):

- the evidence parts share prefixes: the full context is encoded once, and the condition
  without chunk k starts from a copy of that KV cache cut back to chunk k and encodes only
  the chunks after it (the no-context condition is the bare prefix);
- the evidence parts are kept in a small LRU keyed by their token ids, with the question
  after them, so a later answer over the same evidence (RAGTruth has six per source)
  encodes only its own tokens under each condition (and the question, when it changed);
- logits are computed only at answer positions, and divergences in position blocks.

The result equals independent forward passes (see :mod:`groundsense.scorer.reference`). Opt-in,
``score(masked=True)`` approximates the leave-one-out rows by hiding chunk k from the tail
with an attention mask over the full context's encoding instead of re-encoding without it.

Modules: :mod:`.scorer` (the :class:`Scorer`), :mod:`.loading` (model and tokenizer),
:mod:`.encoding` (prompts as token ids), :mod:`.passes` (forward passes, cancellation),
:mod:`.kv` (KV cache operations), :mod:`.evidence_cache` (the LRU),
:mod:`.condition_encoder` (each condition's cache, reused or encoded), :mod:`.conditions`
(exact and streaming scoring), :mod:`.masked` (masked leave-one-out), :mod:`.token_scores`
and :mod:`.divergence` (the scores). The verifiers' passes over the same encodings are theirs
(:mod:`groundsense.verification.judge`, :mod:`groundsense.verification.contextcite`).
"""

from typing import TYPE_CHECKING

from ..lazy import exported

if TYPE_CHECKING:
    from .conditions import OpenConditions
    from .divergence import Distributions, js_divergence
    from .encoding import EncodedAnswer, EncodedPrompt
    from .masked import additive_mask
    from .scorer import Scorer
    from .token_scores import TokenScores

__all__ = [
    "OpenConditions", "Distributions", "EncodedAnswer", "EncodedPrompt", "Scorer", "TokenScores",
    "additive_mask", "js_divergence",
]

if not TYPE_CHECKING:  # at run time each name is imported when first used: the CLI reads ``threads`` without torch
    __getattr__ = exported(__name__, {
        "conditions": ["OpenConditions"], "divergence": ["Distributions", "js_divergence"],
        "encoding": ["EncodedAnswer", "EncodedPrompt"], "masked": ["additive_mask"], "scorer": ["Scorer"],
        "token_scores": ["TokenScores"],
    })
