"""LLM judge: an instruct scorer asked, per sentence, whether the context supports it.

The prompt is the context (chunked and cut to the token budget exactly as the detector
does), the question, ``Is the following sentence supported by the context? Answer Yes or
No.`` and the sentence. P(supported) is read from the next-token distribution: the
probability of every single-token spelling of Yes (``Yes``, ``yes``, ``YES``, with or
without a leading space) over that of Yes and No together. The context is encoded once per
answer and kept in the scorer's evidence cache, so each sentence encodes only its own tokens,
and answers over the same evidence reuse it too (:func:`next_token_logprobs`, a pass the
evaluation's attribution rater makes too). The raw probability is stored; calibration
(a logistic fit on the development split) is left to the analysis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from ..config import DEFAULTS
from ..errors import VerifierUnavailable
from ..inputs.evidence import build_evidence
from ..scorer import Scorer
from .model import ModelVerifier, VerifierScores, gflops
from .prompts import JUDGE_NO, JUDGE_YES, JudgeLayout
from .verifier import SentenceInput

if TYPE_CHECKING:
    from transformers import Cache


def reply_token_ids(scorer: Scorer, words: tuple[str, ...]) -> list[int]:
    """Ids of the spellings of ``words`` (with and without a leading space) that are one token."""
    ids = [scorer.tokenize(w) for word in words for w in (word, " " + word)]
    return sorted({i[0] for i in ids if len(i) == 1})


class JudgeVerifier(ModelVerifier):
    """``judge:<scorer>``: any causal LM that follows instructions (a built-in scorer name,
    a local directory or a Hugging Face id), loaded at ``precision`` unless given loaded. ``k`` and
    ``max_context_tokens`` chunk and cut the context as the detector does."""

    kind = "judge"
    options = {"k": int, "max_context_tokens": int}

    def __init__(self, scorer: Scorer | str | None = None, k: int = DEFAULTS.k,
                 max_context_tokens: int = DEFAULTS.max_context_tokens,
                 device: str | None = None, precision: str = "auto"):
        self.scorer = scorer if isinstance(scorer, Scorer) else Scorer(scorer, device=device, precision=precision)
        self.model_name, self.n_parameters = self.scorer.name, self.scorer.n_parameters
        self.k, self.max_context_tokens = k, max_context_tokens
        self.params = {"k": k, "max_context_tokens": max_context_tokens}
        self.yes, self.no = reply_token_ids(self.scorer, JUDGE_YES), reply_token_ids(self.scorer, JUDGE_NO)
        if not self.yes or not self.no:
            raise VerifierUnavailable(f"the tokenizer of {self.model_name!r} has no single token for Yes or No: "
                                      "it cannot be the judge")

    def score_input(self, sentences: SentenceInput) -> VerifierScores:
        scorer = self.scorer
        evidence = build_evidence(scorer, sentences.context, sentences.passages, self.k, self.max_context_tokens)
        layout = JudgeLayout.for_tokenizer(scorer.text_tokenizer(), sentences.question)
        prefix, lead, suffix = (scorer.encode_prefix(layout.prefix), scorer.tokenize(layout.lead),
                                scorer.tokenize(layout.suffix))
        chunks = [scorer.tokenize(evidence.chunk_text(c)) for c in evidence.chunks]
        tails = [scorer.tokenize(text) + suffix for text in sentences.texts()]
        logp, processed = next_token_logprobs(scorer, prefix, chunks, lead, tails, self.yes + self.no)
        p_supported, mass = yes_probability(logp, len(self.yes))
        shared = len(prefix) + sum(map(len, chunks)) + len(lead)
        own = np.array([len(t) for t in tails], dtype=float)
        return VerifierScores(
            score=1.0 - p_supported,
            gflops=gflops(shared + own, self.n_parameters),
            extra={
                "p_supported": p_supported,
                "answer_mass": mass,  # how much of the next-token distribution is Yes or No
                "tokens_as_run": own + (processed - own.sum()) / len(tails),  # as run: the evidence encoded once
            },
        )


@torch.inference_mode()
def next_token_logprobs(
    scorer: Scorer, prefix: list[int], chunks: list[list[int]], lead: list[int], tails: list[list[int]],
    token_ids: list[int],
) -> tuple[np.ndarray, int]:
    """The judge's pass: log-probabilities of ``token_ids`` as the next token after ``prefix +
    chunks + lead + tail``, for each tail (shape [len(tails), len(token_ids)]), and the tokens
    encoded. The evidence and lead are encoded once (or taken from the scorer's kept evidence)."""
    encoder = scorer.condition_encoder
    ids = torch.tensor(token_ids, device=encoder.passes.device)

    def run(row: int, cache: Cache) -> np.ndarray:
        out = np.zeros((len(tails), len(token_ids)))
        for i, tail in enumerate(tails):
            logits = encoder.passes.tail_logits(tail, cache, 1)
            out[i] = torch.log_softmax(logits[0, -1].float(), dim=-1)[ids].double().cpu().numpy()
        return out

    with scorer.lock:
        (out,), encoded = encoder.each(prefix, chunks, 1, tuple(lead), run)
    return out, encoded + sum(map(len, tails))


def yes_probability(logp: np.ndarray, n_yes: int) -> tuple[np.ndarray, np.ndarray]:
    """From next-token log-probs of the Yes ids (first ``n_yes`` columns) then the No ids:
    P(Yes) / (P(Yes) + P(No)) per row, and P(Yes) + P(No)."""
    p, mass = option_probabilities(logp, [n_yes, logp.shape[1] - n_yes])
    return p[:, 0], mass


def option_probabilities(logp: np.ndarray, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """From next-token log-probs of the answer options' token ids, each option's ids in
    consecutive columns (``sizes[j]`` of them for option j): per row, each option's
    probability over that of all options ([rows, options]) and the options' total mass."""
    ends = np.cumsum(sizes)
    options = np.stack([np.logaddexp.reduce(logp[:, end - size : end], axis=1) for size, end in zip(sizes, ends)],
                       axis=1)
    total = np.logaddexp.reduce(options, axis=1)
    return np.exp(options - total[:, None]), np.exp(total)
