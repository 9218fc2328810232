"""The scorer's bookkeeping on a tiny random model (see the ``tiny_scorer`` fixture): which
encodings are kept, reused, counted and dropped. Its outputs mean nothing; the scores
themselves are tested on the real scorer (test_detector.py, test_masked.py)."""

import numpy as np
import pytest
import torch

from groundsense.errors import Cancelled, InputError
from groundsense.scorer import Scorer
from groundsense.scorer.evidence_cache import evidence_key
from groundsense.verification.contextcite import ablation_masks, subset_logprobs
from groundsense.verification.judge import next_token_logprobs

PASSAGES = [
    "The Golden Gate Bridge opened to traffic on May 27, 1937, after four years of construction.",
    "The bridge's main span is 4,200 feet long, the longest in the world until 1964.",
    "Its colour, International Orange, was chosen by architect Irving Morrow to stand out in fog.",
]
ANSWER = "The bridge's main span is 4,200 feet long. It was painted red by Gustave Eiffel."


def encode(scorer, passages=PASSAGES, question="q", answer=ANSWER):
    return scorer.encode(question, [p + " " for p in passages], answer, 256)


def like(scorer, **options) -> Scorer:
    """Another scorer around the same model."""
    return Scorer.from_model(scorer.model, scorer.tokenizer, scorer.name, **options)


def storage(scorer) -> int:
    """The bytes the kept caches' tensors hold, views' whole storage included."""
    return sum(t.untyped_storage().nbytes() for key in scorer.evidence for c in scorer.evidence.get(key).all_caches()
               for layer in c.layers for t in (layer.keys, layer.values))


def test_kept_evidence_stays_within_its_byte_budget(tiny_scorer):
    """Room is made before a new evidence is encoded, and a kept cache holds no storage
    beyond what it counts (the answer's tail, cut off after scoring, is not kept)."""
    first, second = encode(tiny_scorer), encode(tiny_scorer, passages=PASSAGES[::-1])
    probe = like(tiny_scorer)
    probe.score(first)
    one = probe.evidence.nbytes()
    assert storage(probe) == one
    tight = like(tiny_scorer, evidence_cache_bytes=int(1.5 * one))
    tight.score(first)
    tight.score(second)
    assert list(tight.evidence) == [evidence_key(second.prefix, second.chunks)]
    assert storage(tight) == tight.evidence.nbytes() <= tight.evidence.budget_bytes


def test_evidence_stored_again_with_more_conditions_becomes_the_most_recent(tiny_scorer):
    a, b = encode(tiny_scorer), encode(tiny_scorer, passages=PASSAGES[::-1])
    scorer = like(tiny_scorer)
    # keeps a's full context only
    next_token_logprobs(scorer, a.prefix, a.chunks, a.middle[:-1], [a.answer.ids[:3]], [0])
    scorer.score(b)
    scorer.score(a)  # needs all of a's conditions: encoded again and stored as the newest
    assert list(scorer.evidence) == [evidence_key(b.prefix, b.chunks), evidence_key(a.prefix, a.chunks)]
    assert len(scorer.evidence.get(evidence_key(a.prefix, a.chunks)).caches) == 2 + len(a.chunks)


def test_kept_evidence_holds_only_what_it_counts_after_masked_and_judge_passes(tiny_scorer):
    """The kept caches are compacted after the tails that ran over them, whatever the pass."""
    prompt = encode(tiny_scorer)
    scorer = like(tiny_scorer)
    scorer.score(prompt, masked=True)
    assert storage(scorer) == scorer.evidence.nbytes()
    scorer.forget_evidence()
    next_token_logprobs(scorer, prompt.prefix, prompt.chunks, prompt.middle[:-1], [prompt.answer.ids[:5]], [0, 1])
    assert storage(scorer) == scorer.evidence.nbytes()
    n = len(prompt.chunks)
    subset_logprobs(scorer, prompt, np.array([[True] * n, [False] + [True] * (n - 1)]))
    assert storage(scorer) == scorer.evidence.nbytes()


def test_kept_ablations_stay_within_the_byte_budget(tiny_scorer):
    prompt = encode(tiny_scorer, answer="Bananas are yellow.")
    keep = ablation_masks(len(prompt.chunks), 16, 0.5)
    probe = like(tiny_scorer)
    subset_logprobs(probe, prompt, np.ones((1, len(prompt.chunks)), dtype=bool))  # the full evidence alone
    evidence_bytes = probe.evidence.nbytes()
    scorer = like(tiny_scorer, evidence_cache_bytes=2 * evidence_bytes)  # room for a few ablations, not all
    subset_logprobs(scorer, prompt, keep)
    (key,) = scorer.evidence
    ablated = {tuple(row) for row in keep.tolist() if not all(row)}
    assert 0 < len(scorer.evidence.get(key).subsets) < len(ablated)
    assert evidence_bytes < scorer.evidence.nbytes() <= scorer.evidence.budget_bytes


def test_masked_mode_processes_fewer_tokens_than_exact(tiny_scorer):
    prompt = encode(tiny_scorer)
    exact = like(tiny_scorer).score(prompt)
    masked = like(tiny_scorer).score(prompt, masked=True)
    evidence = len(prompt.prefix) + sum(map(len, prompt.chunks))
    lead, tails = len(prompt.middle) - 1, (2 + len(prompt.chunks)) * len(prompt.answer.ids)
    # the full context once, the question after it and after the bare prefix, and one tail per row
    assert masked.tokens_processed == evidence + 2 * lead + tails
    assert masked.tokens_processed < exact.tokens_processed


@pytest.mark.parametrize("batched", [False, True])  # a cache each; all stacked in one batch
@pytest.mark.parametrize("budget", [0, 512 * 2**20])  # one cache for every condition in turn; a cache each, kept
def test_each_condition_gets_its_own_evidence_whether_kept_or_not(tiny_scorer, budget, batched):
    """The caches a stream opens are the conditions' evidence and question, however they
    were built (stacked: each row after its padding), and the streamed rows are the whole
    answer's."""
    prompt = encode(tiny_scorer)
    scorer = like(tiny_scorer, evidence_cache_bytes=budget, batch_conditions=batched)
    conditions = scorer.open_conditions(prompt.prefix, prompt.chunks, prompt.middle)
    rows = [prompt.condition_ids(), prompt.condition_ids(no_context=True)]
    rows += [prompt.condition_ids(without=k) for k in range(len(prompt.chunks))]
    assert conditions.rows == len(rows)
    for row, ids in enumerate(rows):
        cut = len(ids) - len(prompt.answer.ids)  # the evidence and the lead
        with torch.inference_mode():
            alone = scorer.passes.encode(ids[:cut], None)
        if batched:
            stacked = conditions.caches
            assert stacked.lengths[row] == cut == stacked.cache.get_seq_length() - stacked.pads[row]
            keys = [layer.keys[row : row + 1, :, stacked.pads[row] :] for layer in stacked.cache.layers]
        else:
            assert conditions.caches[row].get_seq_length() == cut
            keys = [layer.keys for layer in conditions.caches[row].layers]
        # fp32 noise between batched and lone encodings: the project's exactness bar, 1e-4
        assert all(torch.allclose(a, b.keys, atol=1e-4) for a, b in zip(keys, alone.layers, strict=True))
    cold = like(tiny_scorer, evidence_cache_bytes=0).score(prompt)
    # all but the tails
    assert conditions.tokens_processed == cold.tokens_processed - len(rows) * len(prompt.answer.ids)
    answer_ids = prompt.answer.ids
    streamed = [scorer.score_next(conditions, answer_ids[i : i + 5]) for i in range(0, len(answer_ids), 5)]
    whole = scorer.score(prompt)
    assert np.allclose(np.hstack([s.logp for s in streamed]), whole.logp, atol=1e-4)
    assert np.allclose(np.hstack([s.jsd for s in streamed]), whole.jsd, atol=1e-4)


def test_cancelled_scoring_drops_the_evidence_it_left_half_updated_and_keeps_the_rest(tiny_scorer):
    a, b = encode(tiny_scorer), encode(tiny_scorer, passages=PASSAGES[::-1])
    scorer = like(tiny_scorer)
    scorer.score(a)
    scorer.score(b)
    layers = iter(range(10**6))
    with pytest.raises(Cancelled):  # once the first tail's first layer has extended a's kept cache
        scorer.score(a, stop=lambda: next(layers) > 0)
    assert list(scorer.evidence) == [evidence_key(b.prefix, b.chunks)]
    again, cold = scorer.score(a), like(tiny_scorer, evidence_cache_bytes=0).score(a)
    assert again.tokens_processed == cold.tokens_processed
    # fp32 noise between kept and fresh encodings: the project's exactness bar, 1e-4
    assert np.allclose(again.logp, cold.logp, atol=1e-4) and np.allclose(again.jsd, cold.jsd, atol=1e-4)


def test_a_model_with_sliding_window_attention_is_refused_when_it_loads(tiny_scorer):
    """A sliding-window layer's cache keeps only its last positions, which the conditions' cut,
    copied and stacked caches cannot allow for (such a model failed in the stacked passes, with
    a RuntimeError, even on a prompt shorter than its window): refused with a message instead."""
    from transformers import MistralConfig, MistralForCausalLM

    config = MistralConfig(vocab_size=len(tiny_scorer.tokenizer), hidden_size=64, intermediate_size=128,
                           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, sliding_window=4096)
    with pytest.raises(InputError, match=r"sliding window \(4096 tokens\) in some layers"):
        Scorer.from_model(MistralForCausalLM(config), tiny_scorer.tokenizer, "tiny-mistral")
