"""Attention whose result for a position does not depend on the pass that computes it, for a
bf16 scorer on a CPU.

At bf16, torch's CPU kernels round a position's result by the shape of the forward pass it is
in: the fused attention kernel (``sdpa``) by how many queries the pass holds, a product over
more than 1,024 keys by summing them in blocks, a one-token pass by a path of its own, and a
batch of left-padded rows by where each row's keys start. So a stream's steps, a few tokens
each and every condition in one batch, scored an answer's tokens differently from ``detect``'s
one pass over the whole answer under each condition (docs/performance.md, "One answer, one
score").

:func:`aligned_attention` is the model's eager attention (the scaled products of queries and
keys, the mask added, an fp32 softmax, the weights times the values) with three things held
fixed: the product with the values always runs over at least :data:`MIN_KEYS` keys (the
padding's weights are zero), so it always takes the blocked path; a batch's rows run one at a
time, each over its own keys from its first unpadded one, as it runs alone; and
:meth:`~groundsense.scorer.passes.ModelPasses.forward` never runs a pass of one token. With
these, on an AMD EPYC with AVX-512 BF16, a position's logits are the same bits whichever pass
computed them, at one thread or two (``benchmarks/routes.py``), and ``detect`` takes about as
long as with ``sdpa`` (``benchmarks/attention.py``). Models whose attention does more than that
(a softcap, attention sinks) keep their own: :data:`ALIGNED_MODEL_TYPES`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from transformers import PreTrainedModel

ALIGNED = "groundsense_aligned"  # its name among transformers' attention implementations
MIN_KEYS = 1032  # keys the product with the values runs over at least: past 1,024, where it sums in blocks
ALIGNED_MODEL_TYPES = ("llama", "qwen2")  # plain attention: the built-in scorers' architectures


def aligned_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, scaling: float, dropout: float = 0.0,
                      **kwargs: Any) -> tuple[torch.Tensor, None]:
    """Attention of ``query`` ``[batch, heads, queries, dim]`` over ``key`` and ``value``
    ``[batch, kv_heads, keys, dim]`` with the eager ``attention_mask`` (additive, ``[batch, 1,
    queries, keys]``), in transformers' attention-function form; the output is ``[batch,
    queries, heads, dim]``."""
    from transformers.integrations.sdpa_attention import repeat_kv

    groups = query.shape[1] // key.shape[1]
    keys, values = repeat_kv(key, groups), repeat_kv(value, groups)
    if query.shape[0] == 1:
        return _attend(query, keys, values, attention_mask, scaling), None
    first = _first_keys(attention_mask, keys.shape[2], query.shape[0])
    rows = [_attend(query[r : r + 1], keys[r : r + 1, :, f:], values[r : r + 1, :, f:],
                    None if attention_mask is None else attention_mask[r : r + 1, :, :, f:], scaling)
            for r, f in enumerate(first)]
    return torch.cat(rows), None


def _attend(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None,
            scaling: float) -> torch.Tensor:
    weights = torch.matmul(query, keys.transpose(2, 3)) * scaling
    if mask is not None:
        weights = weights + mask
    weights = F.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    if (pad := MIN_KEYS - weights.shape[-1]) > 0:
        weights, values = F.pad(weights, (0, pad)), F.pad(values, (0, 0, 0, pad))
    return torch.matmul(weights, values).transpose(1, 2).contiguous()


def _first_keys(mask: torch.Tensor | None, keys: int, rows: int) -> list[int]:
    """Each row's first key that the mask does not hide from its last query: the row's
    padding ends there."""
    if mask is None:
        return [0] * rows
    visible = mask[:, 0, -1, :keys]
    visible = visible if visible.dtype == torch.bool else visible == 0
    return visible.int().argmax(dim=-1).tolist()


def use_aligned_attention(model: PreTrainedModel) -> bool:
    """Run ``model``'s attention as :func:`aligned_attention` where its architecture is one of
    :data:`ALIGNED_MODEL_TYPES`; whether it does."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask

    if getattr(model.config, "model_type", None) not in ALIGNED_MODEL_TYPES:
        return False
    AttentionInterface.register(ALIGNED, aligned_attention)
    AttentionMaskInterface.register(ALIGNED, eager_mask)
    model.set_attn_implementation(ALIGNED)
    return True
