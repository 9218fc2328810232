"""Verifiers on the real default scorer (judge, ContextCite) and on a tiny sequence
classifier built here from a config (its weights are random: plumbing, not accuracy)."""

import itertools
import subprocess
import sys

import numpy as np
import pytest
import torch

from groundsense.errors import InputError, VerifierUnavailable
from groundsense.inputs.evidence import build_evidence
from groundsense.pipeline.detector import Detector
from groundsense.scorer import reference
from groundsense.verification import Cascade, make_verifier
from groundsense.verification.contextcite import (
    ContextCiteVerifier,
    ablation_masks,
    lasso_attributions,
    sequence_logit,
    subset_logprobs,
)
from groundsense.verification.judge import JudgeVerifier, yes_probability
from groundsense.verification.prompts import JudgeLayout
from groundsense.verification.seqclf import NLIVerifier, premises, support_label
from groundsense.verification.verifier import SentenceInput

PASSAGES = [
    "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair.",
    "The Colosseum is in Rome. It could hold about 50,000 spectators.",
    "Bananas are yellow when ripe. They grow in tropical climates.",
]


def make_input(sentences: list[str], passages=PASSAGES) -> SentenceInput:
    return SentenceInput.from_texts("Tell me about these places.", passages, sentences)


SENTENCES = make_input(["The Colosseum could hold about 50,000 spectators.",
                        "The Eiffel Tower was painted blue by Picasso."])


def test_sentence_input_from_texts_joins_the_sentences_and_takes_the_chunks_as_passages():
    item = SentenceInput.from_texts("q", ["a.", "b."], ["One.", "Two three."])
    assert item.answer == "One. Two three." and item.texts() == ["One.", "Two three."]
    assert item.passages == ["a.", "b."] and item.context is None
    with pytest.raises(ValueError, match="exactly one of context and passages"):
        SentenceInput("q", "One.", [], context="a.", passages=["a."])


def test_verification_loads_no_torch_until_a_kind_is_made_and_never_imports_the_evaluation():
    code = (
        "import sys\n"
        "import groundsense.verification as verification\n"
        "verification.make_verifier, verification.check_verifier, verification.KINDS\n"
        "assert 'torch' not in sys.modules, 'importing the verification package or its spec checks loaded torch'\n"
        "import groundsense.verification.cascade, groundsense.verification.factory, groundsense.verification.lexical\n"
        "for kind in verification.KINDS: verification.verifier_class(kind)\n"
        "print(sorted(m for m in sys.modules if m.startswith('groundsense_eval')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- the LLM judge ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def judge(scorer):
    return JudgeVerifier(scorer)


def test_judge_gives_probabilities_and_costs(judge):
    scores = judge.verify(SENTENCES)
    p = scores.extra["p_supported"]
    assert p.shape == (2,) and ((p > 0) & (p < 1)).all()
    np.testing.assert_allclose(scores.score, 1 - p)
    assert ((scores.extra["answer_mass"] > 0) & (scores.extra["answer_mass"] <= 1)).all()
    assert (scores.gflops > 0).all() and (scores.extra["tokens_as_run"] > 0).all()


def test_judge_context_cache_equals_independent_passes(scorer, judge):
    """The evidence encoded once (and reused by a second answer over it) gives the
    probabilities of one plain forward pass per sentence, without any cache."""
    other = make_input(["Bananas grow in tropical climates."])
    first, second = judge.verify(SENTENCES), judge.verify(other)
    assert second.extra["tokens_as_run"][0] < second.gflops[0] / (2 * scorer.n_parameters / 1e9)  # evidence reused
    for item, scores in ((SENTENCES, first), (other, second)):
        layout = JudgeLayout.for_tokenizer(scorer.tokenizer, item.question)
        evidence = build_evidence(scorer, item.context, item.passages, 5, 1800)
        context = [t for c in evidence.chunks for t in scorer.tokenize(evidence.chunk_text(c))]
        for i, sentence in enumerate(item.texts()):
            ids = (scorer.encode_prefix(layout.prefix) + context + scorer.tokenize(layout.lead)
                   + scorer.tokenize(sentence) + scorer.tokenize(layout.suffix))
            with torch.inference_mode():
                logits = scorer.model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
            logp = torch.log_softmax(logits.float(), -1)[judge.yes + judge.no].double().numpy()
            p, _ = yes_probability(logp[None], len(judge.yes))
            assert abs(p[0] - scores.extra["p_supported"][i]) <= 1e-4


def test_yes_probability_sums_spellings():
    logp = np.log(np.array([[0.2, 0.1, 0.05, 0.05]]))  # two Yes ids, then two No ids
    p, mass = yes_probability(logp, 2)
    assert p[0] == pytest.approx(0.3 / 0.4) and mass[0] == pytest.approx(0.4)


# --- ContextCite ---------------------------------------------------------------------------

def test_subset_passes_equal_the_detector_conditions(scorer):
    """The ablation passes reuse the condition machinery: full, no-context and leave-one-out
    masks give the detector's rows."""
    prompt = scorer.encode("q", [p + " " for p in PASSAGES], SENTENCES.answer, 256)
    k = len(PASSAGES)
    keep = np.array([[True] * k, [False] * k] + [[j != i for j in range(k)] for i in range(k)])
    logp, _ = subset_logprobs(scorer, prompt, keep)
    assert np.abs(logp - scorer.score(prompt).logp).max() <= 1e-4


def test_ablations_in_sorted_order_encode_each_run_of_leading_chunks_once(scorer):
    """Every subset of the chunks in sorted order: each row's log-probs are a plain forward
    pass's over the prompt without the left-out chunks, and each ablation encodes only the
    chunks after where it parts from one encoded before it."""
    prompt = scorer.encode("q", [p + " " for p in PASSAGES], SENTENCES.answer, 256)
    k = len(prompt.chunks)
    keep = np.array(list(itertools.product([False, True], repeat=k)))
    scorer.forget_evidence()
    logp, processed = subset_logprobs(scorer, prompt, keep)
    np.testing.assert_allclose(logp, reference.subset_logprobs(scorer, prompt, keep)[0], atol=1e-4)
    runs = {tuple(m[: j + 1]) for m in keep.tolist() for j in range(k) if m[j] and not all(m[: j + 1])}
    evidence = len(prompt.prefix) + sum(map(len, prompt.chunks)) + sum(len(prompt.chunks[len(r) - 1]) for r in runs)
    # the tail: the middle's last token and the answer's but last
    lead, tail = len(prompt.middle) - 1, len(prompt.answer.ids)
    assert processed == evidence + len(keep) * (lead + tail)
    scorer.forget_evidence()


def test_ablations_kept_for_a_later_answer_give_a_cold_scorers_logprobs(scorer):
    """A second answer over the same evidence and question encodes only its own tokens under
    every ablation and gets what a scorer without kept encodings gives it; a new question is
    encoded after the kept ablations."""
    chunks = [p + " " for p in PASSAGES]
    first, second = (scorer.encode("q", chunks, answer, 256) for answer in (SENTENCES.answer, "Bananas are yellow."))
    drawn = ablation_masks(len(chunks), 16, 0.5)  # seven distinct masks of the eight, in drawn order
    keep = np.array(list(dict.fromkeys(map(tuple, drawn))))
    scorer.forget_evidence()
    subset_logprobs(scorer, first, keep)
    warm, warm_tokens = subset_logprobs(scorer, second, keep)
    assert warm_tokens == len(keep) * len(second.answer.ids)  # nothing but the answer's tokens
    scorer.forget_evidence()
    cold, cold_tokens = subset_logprobs(scorer, second, keep)
    np.testing.assert_allclose(warm, cold, atol=1e-4)  # fp32 noise between kept and fresh encodings: the exactness bar
    assert cold_tokens > warm_tokens
    third = scorer.encode("another question", chunks, "Bananas are yellow.", 256)
    relead, relead_tokens = subset_logprobs(scorer, third, keep)
    scorer.forget_evidence()
    cold_third, cold_third_tokens = subset_logprobs(scorer, third, keep)
    np.testing.assert_allclose(relead, cold_third, atol=1e-4)
    assert warm_tokens < relead_tokens < cold_third_tokens
    scorer.forget_evidence()


def test_contextcite_credits_a_copied_sentence_to_its_source_chunk(scorer):
    verifier = ContextCiteVerifier(scorer, ablations=32)
    scores = verifier.verify(SENTENCES)
    assert scores.support_chunk[0] == 1  # the Colosseum passage
    best = scores.extra["attribution_max"]
    assert (best >= 0).all() and best[0] > 0
    np.testing.assert_allclose(scores.score, -best)
    assert (scores.gflops > 0).all() and (scores.extra["passes"] <= 2 ** len(PASSAGES)).all()
    per_token = ContextCiteVerifier(scorer, ablations=32, variant="per_token").verify(SENTENCES)
    np.testing.assert_allclose(per_token.extra["attribution_max"], best)
    assert per_token.score[0] == pytest.approx(-per_token.extra["attribution_max_per_token"][0])


def test_contextcite_leaves_sentences_past_the_answer_cap_unscored(scorer):
    scores = ContextCiteVerifier(scorer, ablations=8, max_answer_tokens=5).verify(SENTENCES)
    assert np.isfinite(scores.score[0]) and np.isnan(scores.score[1]) and scores.support_chunk[1] is None


def test_a_cascade_refuses_contextcite_whose_scores_are_not_probabilities(scorer):
    with pytest.raises(InputError, match="not probabilities"):
        Cascade(Detector(scorer), ContextCiteVerifier(scorer))


def test_lasso_recovers_a_planted_attribution():
    masks = ablation_masks(4, 64, 0.5, seed=0)
    outputs = 3.0 * masks[:, 2] - 1.0 * masks[:, 0] + 0.5
    weights = lasso_attributions(masks, outputs, n_tokens=10, alpha=0.01)
    # Lasso shrinks each weight by about alpha x n_tokens / std(mask) = 0.2, in mask units
    assert weights.argmax() == 2 and weights[2] == pytest.approx(3.0, abs=0.35) and weights[0] < -0.5
    assert weights[1] == 0 and weights[3] == 0
    assert masks.shape == (64, 4) and 0.3 < masks.mean() < 0.7


def test_sequence_logit_is_finite_at_probability_one():
    assert np.isfinite(sequence_logit(np.array([0.0, -1e-20]))).all()
    assert sequence_logit(np.array([np.log(0.5)]))[0] == pytest.approx(0.0)


# --- sequence classifiers (tiny model built from a config) ----------------------------------

@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory, scorer):
    """A 2-layer BERT NLI classifier with random weights, and the default scorer's tokenizer."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(scorer.tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=37, max_position_embeddings=512, pad_token_id=scorer.tokenizer.pad_token_id,
                        id2label={0: "ENTAILMENT", 1: "neutral", 2: "contradiction"})
    folder = tmp_path_factory.mktemp("tiny-nli")
    BertForSequenceClassification(config).save_pretrained(folder)
    scorer.tokenizer.save_pretrained(folder)
    return str(folder)


def test_classifier_scores_one_minus_the_best_chunk(tiny_nli):
    verifier = NLIVerifier(tiny_nli)
    assert verifier.label == 0  # "entailment" found case-insensitively
    scores = verifier.verify(SENTENCES)
    chunks = premises(SENTENCES, "chunks", 5)
    assert len(chunks) == len(PASSAGES)
    for i, sentence in enumerate(SENTENCES.texts()):
        probs, tokens = verifier.support_probabilities(chunks, [sentence] * len(chunks))
        assert scores.extra["p_supported"][i] == pytest.approx(probs.max(), abs=1e-6)
        assert scores.extra["best_chunk"][i] == probs.argmax()
        assert scores.score[i] == pytest.approx(1 - probs.max(), abs=1e-6)
        assert scores.gflops[i] == pytest.approx(tokens.sum() * 2 * verifier.n_parameters / 1e9)


def test_classifier_batching_and_whole_context_premise(tiny_nli):
    one_by_one = NLIVerifier(tiny_nli, batch_size=1).verify(SENTENCES)
    np.testing.assert_allclose(NLIVerifier(tiny_nli, batch_size=16).verify(SENTENCES).score, one_by_one.score,
                               atol=1e-4)  # padding changes fp32 sums: the exactness bar
    whole = NLIVerifier(tiny_nli, premise="context")
    context = premises(SENTENCES, "context", 5)
    assert context == ["\n\n".join(PASSAGES)]
    probs, _ = whole.support_probabilities(context * 2, SENTENCES.texts())
    np.testing.assert_allclose(whole.verify(SENTENCES).score, 1 - probs, atol=1e-6)


def test_classifier_truncates_long_premises(tiny_nli):
    long_input = make_input(["The Colosseum is in Rome."], passages=[" ".join(PASSAGES * 40)])
    scores = NLIVerifier(tiny_nli, premise="context", max_length=64).verify(long_input)
    assert scores.gflops[0] == pytest.approx(64 * 2 * NLIVerifier(tiny_nli).n_parameters / 1e9)


def test_single_logit_head_is_a_sigmoid(tmp_path, scorer):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(vocab_size=len(scorer.tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=37, num_labels=1, pad_token_id=scorer.tokenizer.pad_token_id)
    BertForSequenceClassification(config).save_pretrained(tmp_path)
    scorer.tokenizer.save_pretrained(tmp_path)
    verifier = make_verifier(f"minicheck:{tmp_path}")
    probs, _ = verifier.support_probabilities(["The sky is blue."], ["The sky is blue."])
    batch = verifier.tokenizer(["The sky is blue."], ["The sky is blue."], return_tensors="pt")
    with torch.inference_mode():
        logit = verifier.model(**batch).logits[0, 0]
    assert verifier.params["label"] is None and probs[0] == pytest.approx(torch.sigmoid(logit).item(), abs=1e-6)


def test_label_lookup():
    labels = {0: "ENTAILMENT", 1: "neutral", 2: "contradiction"}
    assert support_label(labels, "entailment") == 0 and support_label(labels, "2") == 2
    with pytest.raises(VerifierUnavailable, match=r"no label 'supported' \(its labels: 0=ENTAILMENT, 1=neutral"):
        support_label(labels, "supported")


def test_clear_errors(tiny_nli, tmp_path):
    with pytest.raises(VerifierUnavailable, match="no label 'aligned'.*-o label="):
        make_verifier(f"alignscore:{tiny_nli}")
    assert make_verifier(f"alignscore:{tiny_nli}", {"label": "entailment"}).label == 0
    with pytest.raises(VerifierUnavailable, match="no model directory at"):
        make_verifier(f"nli:{tmp_path / 'missing'}")
    with pytest.raises(InputError, match="unknown verifier 'selfcheck:x'"):
        make_verifier("selfcheck:x")
    with pytest.raises(InputError, match="nli has no option 'ablations'"):
        make_verifier(f"nli:{tiny_nli}", {"ablations": "3"})
    with pytest.raises(InputError, match="option k='five': expected int"):
        make_verifier(f"nli:{tiny_nli}", {"k": "five"})
    with pytest.raises(InputError, match="premise must be one of chunks, context"):
        make_verifier(f"nli:{tiny_nli}", {"premise": "passages"})
