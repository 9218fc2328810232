"""The attention a bf16 scorer runs on a CPU (groundsense.scorer.attention) and the passes'
lone tokens: the same values as the model's own attention, a padded batch's rows as each runs
alone, and a lone token's pass as the first row of a longer one. That these make a position's
bf16 scores the same in every pass is a property of the CPU's kernels, measured by
benchmarks/routes.py and checked on the real scorer by tests/test_routes.py."""

import copy

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from groundsense.scorer import Scorer
from groundsense.scorer.attention import ALIGNED, MIN_KEYS, aligned_attention, use_aligned_attention
from groundsense.scorer.kv import cropped_copy

pytestmark = pytest.mark.numeric


class Heads(torch.nn.Module):
    num_key_value_groups = 2


def test_aligned_attention_equals_the_models_own_eager_attention(tiny_scorer):
    model = copy.deepcopy(tiny_scorer.model).to(torch.float64)  # the tiny Llama, in float64: rounding aside
    ids = torch.tensor([[5, 17, 300, 42, 7, 99, 1000, 3]])
    model.set_attn_implementation("eager")
    eager = model(input_ids=ids).logits
    assert use_aligned_attention(model) and model.config._attn_implementation == ALIGNED
    aligned = model(input_ids=ids).logits
    torch.testing.assert_close(aligned, eager, rtol=0, atol=1e-12)


def test_a_padded_batchs_rows_attend_as_each_row_alone():
    torch.manual_seed(0)
    rows, heads, queries, dim = 3, 8, 64, 64
    pads, keys = [0, 37, 213], 2000  # enough weights that summing them from another start rounds one otherwise
    query = torch.randn(rows, heads, queries, dim, dtype=torch.bfloat16)
    key, value = (torch.randn(rows, heads // 2, keys, dim, dtype=torch.bfloat16) for _ in range(2))
    mask = torch.zeros(rows, 1, queries, keys, dtype=torch.bfloat16)
    for row, pad in enumerate(pads):
        mask[row, :, :, :pad] = torch.finfo(torch.bfloat16).min  # the left padding
        mask[row, :, :, -queries:] = torch.finfo(torch.bfloat16).min  # causal among the queries
        mask[row, :, :, -queries:] = mask[row, :, :, -queries:].triu(1)
    batch, _ = aligned_attention(Heads(), query, key, value, mask, 0.125)
    for row, pad in enumerate(pads):
        alone, _ = aligned_attention(Heads(), query[row : row + 1], key[row : row + 1, :, pad:],
                                     value[row : row + 1, :, pad:], mask[row : row + 1, :, :, pad:], 0.125)
        assert torch.equal(batch[row : row + 1], alone)


def test_the_values_product_runs_over_at_least_min_keys():
    """Over the padding its zero weights add nothing: the result is the unpadded product's."""
    torch.manual_seed(1)
    query, key, value = (torch.randn(1, 2, 3, 4, dtype=torch.float64) for _ in range(3))
    out, _ = aligned_attention(Heads(), query, key[:, :1], value[:, :1], None, 0.5)
    weights = torch.softmax(query @ key[:, :1].repeat_interleave(2, 1).transpose(2, 3) * 0.5, dim=-1)
    torch.testing.assert_close(out, (weights @ value[:, :1].repeat_interleave(2, 1)).transpose(1, 2))
    assert MIN_KEYS > 1024


def test_another_architecture_keeps_its_own_attention():
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=16))
    before = model.config._attn_implementation
    assert not use_aligned_attention(model) and model.config._attn_implementation == before


def test_only_a_bf16_scorer_on_a_cpu_runs_the_aligned_attention(tiny_scorer):
    bf16 = Scorer.from_model(copy.deepcopy(tiny_scorer.model).to(torch.bfloat16), tiny_scorer.tokenizer, "tiny",
                             precision="bf16")
    assert bf16.model.config._attn_implementation == ALIGNED
    assert tiny_scorer.model.config._attn_implementation != ALIGNED  # fp32


def test_a_lone_tokens_pass_is_the_first_row_of_a_pass_with_a_copy_after_it(tiny_scorer):
    passes = tiny_scorer.passes
    with torch.inference_mode():
        cache = passes.encode([5, 17, 300], None)
        twice = passes.forward([42, 42], cropped_copy(cache, 3), 2).logits
        lone = passes.forward([42], cache, 1)
    assert cache.get_seq_length() == 4 and lone.logits.shape[1] == 1
    assert torch.equal(lone.logits[:, 0], twice[:, 0])
