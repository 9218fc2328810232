"""ContextCite (Cohen-Wang et al., 2024) on our scorer: a linear surrogate over random
context ablations, and each sentence's largest positive attribution.

The surrogate is the one of the ``context-cite`` package (0.0.4), re-implemented on the
scorer's cached evidence encoding (docs/verifiers.md says why the package is not used):

- ``ablations`` masks over the K chunks (the detector's chunks), chunk j kept with
  probability ``keep_prob``, mask i drawn by ``numpy.random.RandomState(seed + i)`` as the
  package does; each distinct mask is scored once (:func:`subset_logprobs`), and its encoding kept for the next
  answer over the same evidence (TofuEval has about 18 summaries per transcript), within
  ``EVIDENCE_CACHE_BYTES`` when the verifier loads its own scorer;
- per sentence and mask, the target is the logit of the sentence's probability given the
  answer before it, ``log p - log(1 - p)`` (the package's ``logit_prob``);
- Lasso (``alpha`` 0.01) on the standardised masks with the target divided by the
  sentence's token count, weights mapped back to mask units and multiplied by it again.

Per sentence: ``attribution_max`` = the largest weight clipped at 0 (the ``raw`` variant)
and ``attribution_max_per_token`` = it divided by the sentence's tokens (``per_token``);
``score`` = minus the chosen variant, so higher = less supported. ``support_chunk`` is the
chunk with the largest positive weight (None when no weight is positive).
"""

from __future__ import annotations

import numpy as np
import torch

from ..config import DEFAULTS
from ..errors import InputError
from ..features import assign_tokens
from ..inputs.evidence import build_evidence
from ..scorer import EncodedPrompt, Scorer
from ..scorer.evidence_cache import Ablation
from ..scorer.kv import cache_bytes, compact, crop
from .model import ModelVerifier, VerifierScores, gflops
from .verifier import SentenceInput

VARIANTS = ("raw", "per_token")
EVIDENCE_CACHE_BYTES = 4 * 2**30  # one evidence's 2^K ablations at 1,800 tokens take about 1.5 GiB (K=5, SmolLM2)


def ablation_masks(n_chunks: int, n_masks: int, keep_prob: float, seed: int = 0) -> np.ndarray:
    """[n_masks, n_chunks] bool: which chunks each ablation keeps (the package's draws)."""
    return np.array([
        np.random.RandomState(seed + i).choice([False, True], size=n_chunks, p=[1 - keep_prob, keep_prob])
        for i in range(n_masks)
    ]).reshape(n_masks, n_chunks)


def sequence_logit(logp: np.ndarray) -> np.ndarray:
    """log p - log(1 - p) of sequences from their total log-probability ``logp``."""
    logp = np.minimum(logp, -1e-12)  # p = 1 would make the logit infinite
    return logp - np.log(-np.expm1(logp))


def lasso_attributions(masks: np.ndarray, outputs: np.ndarray, n_tokens: int, alpha: float) -> np.ndarray:
    """Per-chunk weights of the package's ``LassoRegression`` solver."""
    from sklearn.linear_model import Lasso
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scaler, lasso = StandardScaler(), Lasso(alpha=alpha, random_state=0, fit_intercept=True)
    make_pipeline(scaler, lasso).fit(masks.astype(np.float32), outputs / n_tokens)
    return lasso.coef_ / scaler.scale_ * n_tokens


class ContextCiteVerifier(ModelVerifier):
    """``contextcite:<scorer>``: the ContextCite surrogate with a built-in scorer, a local
    directory or a Hugging Face id as the model (loaded at ``precision`` unless given loaded); chunks
    and token caps as the detector's."""

    kind = "contextcite"
    scores_are_probabilities = False  # minus an attribution: rankable, not a probability
    options = {"k": int, "max_context_tokens": int, "max_answer_tokens": int, "ablations": int,
               "keep_prob": float, "alpha": float, "variant": str, "seed": int}

    def __init__(self, scorer: Scorer | str | None = None, k: int = DEFAULTS.k,
                 max_context_tokens: int = DEFAULTS.max_context_tokens,
                 max_answer_tokens: int = DEFAULTS.max_answer_tokens,
                 ablations: int = 64, keep_prob: float = 0.5, alpha: float = 0.01,
                 variant: str = "raw", seed: int = 0, device: str | None = None, precision: str = "auto"):
        if variant not in VARIANTS:
            raise InputError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
        if ablations < 2 or not 0 < keep_prob < 1:
            raise InputError("ContextCite needs at least 2 ablations and a keep probability strictly between 0 and 1")
        if not isinstance(scorer, Scorer):
            scorer = Scorer(scorer, device=device, evidence_cache_bytes=EVIDENCE_CACHE_BYTES, precision=precision)
        self.scorer = scorer
        self.model_name, self.n_parameters = self.scorer.name, self.scorer.n_parameters
        self.params = {"k": k, "max_context_tokens": max_context_tokens, "max_answer_tokens": max_answer_tokens,
                       "ablations": ablations, "keep_prob": keep_prob, "alpha": alpha, "variant": variant, "seed": seed}

    def score_input(self, sentences: SentenceInput) -> VerifierScores:
        p = self.params
        evidence = build_evidence(self.scorer, sentences.context, sentences.passages, p["k"], p["max_context_tokens"])
        prompt = self.scorer.encode(sentences.question, [evidence.chunk_text(c) for c in evidence.chunks],
                                    sentences.answer, p["max_answer_tokens"])
        masks = ablation_masks(len(prompt.chunks), p["ablations"], p["keep_prob"], p["seed"])
        distinct, inverse = np.unique(masks, axis=0, return_inverse=True)
        logp, processed = subset_logprobs(self.scorer, prompt, distinct)
        logp = logp[inverse.reshape(-1)]  # [ablations, answer tokens]
        owner = assign_tokens(prompt.answer.offsets, sentences.spans)
        n = len(sentences.spans)
        best = np.full(n, np.nan)
        support: list[int | None] = [None] * n
        n_tokens = np.array([(owner == i).sum() for i in range(n)], dtype=float)
        for i in np.flatnonzero(n_tokens):  # sentences past the answer cap have no token: unscored
            weights = lasso_attributions(masks, sequence_logit(logp[:, owner == i].sum(axis=1)), int(n_tokens[i]),
                                         p["alpha"])
            top = int(np.argmax(weights))
            best[i] = max(float(weights[top]), 0.0)
            support[i] = top if weights[top] > 0 else None
        per_token = best / np.where(n_tokens > 0, n_tokens, np.nan)
        one_pass = len(prompt.condition_ids()) + 1  # prompt and answer tokens of the full-context pass
        return VerifierScores(
            score=-(best if p["variant"] == "raw" else per_token),
            gflops=np.full(n, float(gflops(len(distinct) * one_pass, self.n_parameters)) / n),
            extra={"attribution_max": best, "attribution_max_per_token": per_token,
                   "passes": np.full(n, float(len(distinct))), "tokens_as_run": np.full(n, processed / n)},
            support_chunk=support,
        )


@torch.inference_mode()
def subset_logprobs(scorer: Scorer, prompt: EncodedPrompt, keep: np.ndarray) -> tuple[np.ndarray, int]:
    """ContextCite's pass: answer-token log-probs (shape [len(keep), answer tokens]) with only the chunks
    marked in each row of ``keep`` (bool, [n, K]) left in the context, and the tokens
    encoded. Rows that keep every chunk are the full-context condition. A new ablation
    starts from the encoding (the full evidence's, a kept ablation's or the previous
    row's) that keeps the same leading chunks longest, cut back to where they part, so rows
    in sorted order (as ``numpy.unique`` gives them) encode each run of leading chunks
    once. The ablated encodings are kept with the evidence's (within its budget), so a
    later answer over the same evidence encodes only its own tokens (and the question under
    each ablation, when it changed). :func:`groundsense.scorer.reference.subset_logprobs` is the
    same by one plain forward pass per row."""
    encoder = scorer.condition_encoder
    lead, tail, n_answer = prompt.lead, prompt.tail, len(prompt.answer.ids)
    target = torch.tensor(prompt.answer.ids, device=encoder.passes.device)
    logp = np.zeros((len(keep), n_answer))
    fresh: dict[tuple[bool, ...], Ablation] = {}
    previous: dict[tuple[bool, ...], Ablation] = {}
    with scorer.lock, encoder.lease(prompt.prefix, prompt.chunks) as lease:
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
