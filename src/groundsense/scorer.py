"""The scorer: a causal LM that re-scores a fixed answer under K+2 evidence conditions.

Conditions are rows of :class:`TokenScores`: row 0 is the full context, row 1 no
context, row ``2 + k`` the context without chunk ``k``. Conditions share the prompt up to
the first chunk they differ in, so one KV cache serves them all: after the full-context
pass the cache is cropped back to the shared prefix and only the suffix is encoded (chunks
are visited last to first, so each crop is a prefix of what the cache holds). Vocabulary
distributions are computed only at answer positions, and divergences in position blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import torch

from . import weights
from .errors import InputError, ScorerUnavailable
from .prompt import PromptLayout

LN2 = math.log(2.0)


@dataclass(frozen=True)
class EncodedAnswer:
    ids: list[int]  # the scored tokens, at most the answer cap
    offsets: np.ndarray  # [len(ids), 2] character spans in the caller's answer
    tokens_cut: int  # tokens past the cap, not scored


@dataclass(frozen=True)
class EncodedPrompt:
    prefix: list[int]
    chunks: list[list[int]]
    middle: list[int]
    answer: EncodedAnswer

    def condition_ids(self, without: int | None = None, no_context: bool = False) -> list[int]:
        """Token ids of one condition, the answer's last token excluded (it predicts nothing)."""
        chunks = [] if no_context else [c for k, c in enumerate(self.chunks) if k != without]
        return self.prefix + list(chain.from_iterable(chunks)) + self.middle + self.answer.ids[:-1]


@dataclass
class TokenScores:
    """Per condition and answer token: log-probability of the token, and the JSD between
    the condition's next-token distribution and the full-context one (row 0 is zeros)."""

    logp: np.ndarray  # [2 + K, T] (or [2, T] in two-pass mode)
    jsd: np.ndarray
    tokens_processed: int = field(default=0)


def js_divergence(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (natural log, so in [0, ln 2]) between rows of log-probs."""
    logm = torch.logaddexp(logp, logq) - LN2
    p, q = logp.exp(), logq.exp()
    kl_pm = torch.where(p > 0, p * (logp - logm), 0.0).sum(-1)
    kl_qm = torch.where(q > 0, q * (logq - logm), 0.0).sum(-1)
    return (0.5 * (kl_pm + kl_qm)).clamp(0.0, LN2)


def _crop(cache, length: int) -> None:
    """Keep the first ``length`` positions of a KV cache."""
    cache.crop(length - cache.get_seq_length())


def _leading_special_ids(tokenizer) -> list[int]:
    """Ids the tokenizer adds in front of plain text (a BOS token), if any."""
    with_special = tokenizer("a").input_ids
    plain = tokenizer("a", add_special_tokens=False).input_ids
    if plain and with_special[-len(plain) :] == plain:
        return with_special[: len(with_special) - len(plain)]
    return []


class Scorer:
    """A Hugging Face causal LM with its tokenizer and prompt layout.

    ``name`` is a built-in scorer name, a local model directory or a Hugging Face id;
    ``None`` is the embedded default (SmolLM2-135M-Instruct). CPU runs in fp32; CUDA in
    bf16. ``block_size`` bounds the answer positions whose vocabulary distributions are
    compared at once.
    """

    def __init__(self, name: str | None = None, device: str | None = None, block_size: int = 64):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name, source = weights.resolve(name)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source)
            self.model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise ScorerUnavailable(f"cannot load scorer {self.name!r} from {source}: {exc}") from exc
        self.block_size = block_size
        self._bos = _leading_special_ids(self.tokenizer)

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def tokenize(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def token_offsets(self, text: str) -> np.ndarray:
        """Character span of each token of ``text``, shape [n_tokens, 2]."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return np.asarray(enc.offset_mapping, dtype=np.int64).reshape(-1, 2)

    def encode(
        self, question: str, chunk_texts: list[str], answer: str, max_answer_tokens: int
    ) -> EncodedPrompt:
        layout = PromptLayout.for_tokenizer(self.tokenizer, question)
        prefix = self.tokenize(layout.prefix)
        if self._bos and prefix[: len(self._bos)] != self._bos:
            prefix = self._bos + prefix
        return EncodedPrompt(
            prefix=prefix,
            chunks=[self.tokenize(text) for text in chunk_texts],
            middle=self.tokenize(layout.middle),
            answer=self._encode_answer(layout.answer_lead + answer, len(layout.answer_lead), max_answer_tokens),
        )

    def _encode_answer(self, text: str, lead: int, cap: int) -> EncodedAnswer:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        if not enc.input_ids:
            raise InputError("the answer has no tokens to score")
        offsets = np.clip(np.asarray(enc.offset_mapping, dtype=np.int64) - lead, 0, None)
        return EncodedAnswer(enc.input_ids[:cap], offsets[:cap], max(0, len(enc.input_ids) - cap))

    @torch.inference_mode()
    def score(self, prompt: EncodedPrompt, leave_one_out: bool = True) -> TokenScores:
        """Score the answer under every condition, reusing the shared-prefix KV cache."""
        n_answer = len(prompt.answer.ids)
        target = torch.tensor(prompt.answer.ids, device=self.device)
        tail = prompt.middle + prompt.answer.ids[:-1]
        n_chunks = len(prompt.chunks) if leave_one_out else 0
        logp = np.zeros((2 + n_chunks, n_answer), dtype=np.float64)
        jsd = np.zeros_like(logp)

        full_ids = prompt.condition_ids()
        out = self._forward(full_ids, None, n_answer)
        cache = out.cache
        full = torch.log_softmax(out.logits[0].float(), dim=-1)
        logp[0] = full.gather(1, target[:, None])[:, 0].double().cpu().numpy()
        processed = len(full_ids)

        ends = np.cumsum([len(prompt.prefix)] + [len(c) for c in prompt.chunks])
        for k in reversed(range(n_chunks)):  # each crop keeps a prefix of what the cache holds
            _crop(cache, int(ends[k]))
            suffix = list(chain.from_iterable(prompt.chunks[k + 1 :])) + tail
            logp[2 + k], jsd[2 + k] = self._compare(full, self._forward(suffix, cache, n_answer).logits, target)
            processed += len(suffix)
        _crop(cache, len(prompt.prefix))
        logp[1], jsd[1] = self._compare(full, self._forward(tail, cache, n_answer).logits, target)
        processed += len(tail)
        return TokenScores(logp=logp, jsd=jsd, tokens_processed=processed)

    def _forward(self, ids: list[int], cache, n_answer: int):
        inputs = torch.tensor([ids], device=self.device)
        return self.model(input_ids=inputs, cache=cache, use_cache=True, logits_to_keep=n_answer)

    def _compare(self, full: torch.Tensor, logits: torch.Tensor, target: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """Token log-probs under one condition and their JSD to the full-context rows."""
        logq = torch.log_softmax(logits[0].float(), dim=-1)
        token_logp = logq.gather(1, target[:, None])[:, 0]
        blocks = [
            js_divergence(full[i : i + self.block_size], logq[i : i + self.block_size])
            for i in range(0, len(target), self.block_size)
        ]
        return token_logp.double().cpu().numpy(), torch.cat(blocks).double().cpu().numpy()
