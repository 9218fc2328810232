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

The result equals independent forward passes (see :mod:`groundsense.reference`). Opt-in,
``score(masked=True)`` approximates the leave-one-out rows by hiding chunk k from the tail
with an attention mask over the full context's encoding instead of re-encoding without it.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from copy import deepcopy
from dataclasses import dataclass, field
from typing import NamedTuple
from collections.abc import Callable, Iterator, Sequence
from itertools import chain

import numpy as np
import torch
import torch.nn.functional as F

from . import weights
from .errors import Cancelled, InputError, ScorerUnavailable
from .prompt import PromptLayout

LN2 = math.log(2.0)
TINY = torch.finfo(torch.float32).tiny  # keeps log(0) finite; adds nothing to s·log s
ENCODE_PIECE = 512  # evidence tokens per forward call
PACK_ATTENTION = 2**19  # masked leave-one-out: query-key pairs one packed forward call may hold


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


@dataclass
class ConditionCaches:
    """An answer's conditions being scored as it arrives: each condition's KV cache (row
    order as in :class:`TokenScores`) up to the last token fed, and the token the next
    piece's first token is predicted from (not fed yet)."""

    caches: list
    next_input: int
    tokens_processed: int = 0


@dataclass
class _KeptEvidence:
    """One evidence's encoded conditions in the LRU: each cache holds its condition's
    evidence (``lengths`` tokens) followed by ``lead``, the last question seen.
    ``subsets`` holds the ablations kept by :meth:`Scorer.subset_logprobs`, by chunk mask."""

    caches: list
    lengths: list[int]
    lead: tuple[int, ...]
    subsets: dict[tuple[bool, ...], "_Ablation"] = field(default_factory=dict)

    def all_caches(self) -> list:
        return [*self.caches, *(ablation.cache for ablation in self.subsets.values())]


@dataclass
class _Ablation:
    """The cache of an ablated evidence (``length`` tokens) followed by ``lead``, the
    question it was last used with."""

    cache: object
    length: int
    lead: tuple[int, ...]


class Distributions(NamedTuple):
    """Rows of next-token distributions with the sums the JSD needs: the probabilities,
    sum p·log p and sum p (a log-softmax row sums to 1 only up to rounding)."""

    probs: torch.Tensor
    plogp: torch.Tensor
    mass: torch.Tensor

    @classmethod
    def of(cls, logp: torch.Tensor) -> "Distributions":
        probs = logp.exp()
        return cls(probs, _dot(probs, logp), probs.sum(-1))

    def rows(self, start: int, stop: int) -> "Distributions":
        return Distributions(*(t[start:stop] for t in self))


def _dot(probs: torch.Tensor, logs: torch.Tensor) -> torch.Tensor:
    """Row sums of probs·logs, with 0·log 0 = 0 (log-probs of -inf are clamped)."""
    return torch.linalg.vecdot(probs, logs.clamp_min(torch.finfo(logs.dtype).min))


def js_divergence(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (natural log, so in [0, ln 2]) between rows of log-probs."""
    return _jsd(Distributions.of(logp), logq)


def _jsd(p: Distributions, logq: torch.Tensor) -> torch.Tensor:
    """JSD in its entropy form, H(M) - (H(P) + H(Q))/2 with M = (P + Q)/2, written as
    (Σ p log p + Σ q log q - Σ s log s + ln 2 · Σ s)/2 with s = p + q: the same value as
    the two KL terms, with one logarithm per entry instead of a log-add-exp, and P's sums
    computed once for all conditions (see docs/performance.md for the speed-up)."""
    q = Distributions.of(logq)
    s = p.probs + q.probs
    s_log_s = torch.linalg.vecdot(s, (s + TINY).log_())
    return (0.5 * (p.plogp + q.plogp - s_log_s + LN2 * (p.mass + q.mass))).clamp(0.0, LN2)


def additive_mask(visible: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A float attention mask from a boolean one (True = may attend): 0 where visible, the
    dtype's lowest value elsewhere. Float masks work with sdpa and eager attention alike."""
    return torch.zeros(visible.shape, dtype=dtype, device=visible.device).masked_fill_(~visible, torch.finfo(dtype).min)


def _crop(cache, length: int) -> None:
    """Keep the first ``length`` positions of a KV cache."""
    cache.crop(length - cache.get_seq_length())


def _evidence_key(prefix: list[int], chunks: list[list[int]]) -> tuple:
    """The evidence LRU's key: the prompt's opening and chunk token ids."""
    return tuple(prefix), tuple(map(tuple, chunks))


def _cache_bytes(cache) -> int:
    return sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))


def _compact(cache) -> None:
    """Give every layer storage of its own size: a cache cut back after an answer's tail is
    a view that still holds the tail's storage, so a kept cache would take more memory than
    :func:`_cache_bytes` counts."""
    for layer in cache.layers:
        for part in ("keys", "values"):
            tensor = getattr(layer, part)
            if tensor.untyped_storage().nbytes() > tensor.nbytes:
                setattr(layer, part, tensor.clone())


def _agreement(mask: Sequence[bool], keep: Sequence[bool]) -> int:
    """How many leading chunks two chunk masks agree on."""
    return next((j for j, (a, b) in enumerate(zip(mask, keep)) if a != b), len(keep))


def _cropped_copy(cache, length: int):
    """A copy of a KV cache's first ``length`` positions that copies only those: a plain
    deepcopy would copy each tensor's whole storage, a cut-back answer tail's included."""
    cropped = {
        id(tensor): tensor[..., :length, :].clone()
        for layer in cache.layers
        if layer.is_initialized
        for tensor in (layer.keys, layer.values)
    }
    return deepcopy(cache, memo=cropped)


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
    compared at once. ``evidence_cache_bytes`` bounds the KV caches kept of recent
    evidences (K+2 caches each), for later answers over the same evidence; 0 keeps none.
    ``batch_conditions`` runs the K+2 question-and-answer tails as one batch (default: on
    CUDA, where it pays; on a CPU the sequential path uses less memory for the same work).
    """

    def __init__(
        self,
        name: str | None = None,
        device: str | None = None,
        block_size: int = 64,
        evidence_cache_bytes: int = 512 * 2**20,
        batch_conditions: bool | None = None,
    ):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name, source = weights.resolve(name)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source)
            self.model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise ScorerUnavailable(f"cannot load scorer {self.name!r} from {source}: {exc}") from exc
        self._configure(block_size, evidence_cache_bytes, batch_conditions)

    @classmethod
    def from_model(cls, model, tokenizer, name: str, **options) -> "Scorer":
        """A scorer around a model already in memory (e.g. one built from a config for a
        speed test). ``tokenizer`` may be None when prompts come pre-encoded."""
        scorer = cls.__new__(cls)
        scorer.name, scorer.model, scorer.tokenizer = name, model.eval(), tokenizer
        scorer.device = next(model.parameters()).device
        scorer._configure(**options)
        return scorer

    def _configure(
        self, block_size: int = 64, evidence_cache_bytes: int = 512 * 2**20, batch_conditions: bool | None = None
    ) -> None:
        self.block_size = block_size
        self.evidence_cache_bytes = evidence_cache_bytes
        self.batch_conditions = self.device.type == "cuda" if batch_conditions is None else batch_conditions
        self._evidence_lru: OrderedDict = OrderedDict()
        self._stop: Callable[[], bool] | None = None  # set by :meth:`score` for its duration
        self._watch_stop()
        self._bos = _leading_special_ids(self.tokenizer) if self.tokenizer is not None else []

    def forget_evidence(self) -> None:
        """Drop the evidence encodings kept for later answers (the next answer starts cold)."""
        self._evidence_lru.clear()

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def tokenize(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def token_offsets(self, text: str) -> np.ndarray:
        """Character span of each token of ``text``, shape [n_tokens, 2]."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return np.asarray(enc.offset_mapping, dtype=np.int64).reshape(-1, 2)

    def byte_fragment_share(self, ids: Sequence[int]) -> float:
        """Share of the tokens ``ids`` that are a piece of one character's UTF-8 bytes rather
        than whole characters: high for a script the tokenizer, and so the model, saw little of."""
        if not ids:
            return 0.0
        return sum("\ufffd" in piece for piece in self.tokenizer.batch_decode([[i] for i in ids])) / len(ids)

    def encode(
        self, question: str, chunk_texts: list[str], answer: str, max_answer_tokens: int
    ) -> EncodedPrompt:
        layout = PromptLayout.for_tokenizer(self.tokenizer, question)
        return EncodedPrompt(
            prefix=self.encode_prefix(layout.prefix),
            chunks=[self.tokenize(text) for text in chunk_texts],
            middle=self.tokenize(layout.middle),
            answer=self._encode_answer(layout.answer_lead + answer, len(layout.answer_lead), max_answer_tokens),
        )

    def encode_prefix(self, text: str) -> list[int]:
        """Token ids of a prompt's opening text, with the BOS token the model expects."""
        prefix = self.tokenize(text)
        if self._bos and prefix[: len(self._bos)] != self._bos:
            prefix = self._bos + prefix
        return prefix

    def _encode_answer(self, text: str, lead: int, cap: int) -> EncodedAnswer:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        if not enc.input_ids:
            raise InputError("the answer has no tokens to score")
        offsets = np.clip(np.asarray(enc.offset_mapping, dtype=np.int64) - lead, 0, None)
        return EncodedAnswer(enc.input_ids[:cap], offsets[:cap], max(0, len(enc.input_ids) - cap))

    @torch.inference_mode()
    def score(
        self, prompt: EncodedPrompt, leave_one_out: bool = True, masked: bool = False,
        stop: Callable[[], bool] | None = None,
    ) -> TokenScores:
        """Score the answer under every condition; the evidence's encoding is reused.
        ``stop`` is asked before each decoder layer runs (:meth:`_watch_stop`); when it says
        True, :class:`Cancelled` is raised (a service drops a request past its
        timeout that way) and the kept evidence encodings, which the interrupted work may
        have left half-updated, are dropped.

        ``masked`` approximates the leave-one-out rows: instead of re-encoding the context
        without chunk k, the question-and-answer tail runs once more over the full
        context's encoding with chunk k's positions hidden from it (see
        :meth:`_masked_conditions`). The full- and no-context rows stay exact.
        """
        self._stop = stop
        try:
            return self._score(prompt, leave_one_out, masked)
        except Cancelled:
            self.forget_evidence()
            raise
        finally:
            self._stop = None

    def _score(self, prompt: EncodedPrompt, leave_one_out: bool, masked: bool) -> TokenScores:
        n_answer = len(prompt.answer.ids)
        target = torch.tensor(prompt.answer.ids, device=self.device)
        # Everything up to the last prompt token stays in the caches (the question too,
        # shared by answers to the same question); the tail predicts the answer tokens.
        lead, tail = tuple(prompt.middle[:-1]), prompt.middle[-1:] + prompt.answer.ids[:-1]
        rows = 2 + len(prompt.chunks) if leave_one_out else 2
        logp = np.zeros((rows, n_answer), dtype=np.float64)
        jsd = np.zeros_like(logp)
        if leave_one_out and masked:
            conditions = self._masked_conditions(prompt, lead, tail)
        else:
            conditions = self._exact_conditions(prompt, rows, lead, tail)
        full = None
        processed = 0
        for row, logits, encoded in conditions:
            if full is None:  # row 0 comes first
                full = Distributions.of(torch.log_softmax(logits[0].float(), dim=-1))
            logp[row], jsd[row] = self._compare(full, logits, target)
            processed += encoded
        return TokenScores(logp=logp, jsd=jsd, tokens_processed=processed)

    @torch.inference_mode()
    def open_conditions(
        self, prefix: list[int], chunks: list[list[int]], middle: list[int], leave_one_out: bool = True
    ) -> ConditionCaches:
        """Each condition's KV cache up to the prompt's last token, as copies of its own, for
        an answer that arrives in pieces (:meth:`score_next`). The evidence comes from the
        LRU, or is encoded once and kept there, as for :meth:`score`."""
        lead = tuple(middle[:-1])
        rows = 2 + len(chunks) if leave_one_out else 2
        caches, processed = [None] * rows, 0
        # a loop, not list(): each row's cache may be reused for the next once copied
        for row, cache, encoded in self._evidence_caches(prefix, chunks, rows, lead, in_turn=True):
            caches[row] = _cropped_copy(cache, cache.get_seq_length())
            processed += encoded
        return ConditionCaches(caches, middle[-1], processed)

    @torch.inference_mode()
    def score_next(self, conditions: ConditionCaches, ids: list[int]) -> TokenScores:
        """Score the answer's next tokens ``ids`` under every condition, extending each
        condition's cache by them: the rows of :meth:`score` for those tokens."""
        inputs = [conditions.next_input, *ids[:-1]]
        target = torch.tensor(ids, device=self.device)
        logp = np.zeros((len(conditions.caches), len(ids)), dtype=np.float64)
        jsd = np.zeros_like(logp)
        full = None
        for row, cache in enumerate(conditions.caches):
            logits = self._forward(inputs, cache, len(inputs)).logits
            if full is None:  # row 0 comes first
                full = Distributions.of(torch.log_softmax(logits[0].float(), dim=-1))
            logp[row], jsd[row] = self._compare(full, logits, target)
        conditions.next_input = ids[-1]
        processed = len(inputs) * len(conditions.caches)
        conditions.tokens_processed += processed
        return TokenScores(logp=logp, jsd=jsd, tokens_processed=processed)

    def _exact_conditions(
        self, prompt: EncodedPrompt, rows: int, lead: tuple[int, ...], tail: list[int]
    ) -> Iterator[tuple[int, torch.Tensor, int]]:
        """``(row, tail logits, tokens encoded for the row)`` of each condition, exactly."""
        evidence = self._evidence_caches(prompt.prefix, prompt.chunks, rows, lead, in_turn=not self.batch_conditions)
        if not self.batch_conditions:  # one condition at a time: only the caches being used are in memory
            for row, cache, encoded in evidence:
                yield row, self._tail_logits(tail, cache, len(tail)), encoded + len(tail)
            return
        evidence = list(evidence)
        logits = self._batched_tails(tail, [cache for _, cache, _ in evidence], len(tail))
        for (row, _, encoded), row_logits in zip(evidence, logits):
            yield row, row_logits, encoded + len(tail)

    def _masked_conditions(
        self, prompt: EncodedPrompt, lead: tuple[int, ...], tail: list[int]
    ) -> Iterator[tuple[int, torch.Tensor, int]]:
        """The same rows as :meth:`_exact_conditions`, the leave-one-out ones approximated.

        The full context and the question are encoded once (their caches come from the
        evidence LRU like the exact conditions' do). The tail of row ``2 + k`` then runs
        over that encoding with chunk k's positions masked out, its position ids unchanged;
        the question's and the later chunks' cached states still carry what they read in
        chunk k, which is what this approximates. Row 0 (nothing hidden) and the masked rows
        run packed into one sequence, as many per forward call as keep its attention scores
        within ``PACK_ATTENTION`` query-key pairs (:meth:`_masked_tails`): on RAGTruth-length
        contexts that is all of them or a few per call, and one per call near 4k tokens,
        where packing more raised the peak memory more than it saved time.
        """
        # row 0's cache is done with before row 1's is asked for, so the two can be one cache
        for row, cache, encoded in self._evidence_caches(prompt.prefix, prompt.chunks, 2, lead, in_turn=True):
            if row == 0:
                yield from self._masked_rows(prompt, tail, cache, encoded)
            else:
                yield 1, self._tail_logits(tail, cache, len(tail)), encoded + len(tail)

    def _masked_rows(
        self, prompt: EncodedPrompt, tail: list[int], full, full_encoded: int
    ) -> Iterator[tuple[int, torch.Tensor, int]]:
        """Row 0 and the masked rows ``2 + k`` over ``full``, the full context's cache."""
        ends = np.cumsum([len(prompt.prefix)] + [len(c) for c in prompt.chunks]).tolist()
        hidden = [(0, 0)] + list(zip(ends[:-1], ends[1:]))  # row 0 hides nothing; row 2 + k chunk k
        rows = [0] + [2 + k for k in range(len(prompt.chunks))]
        per_pass, n, length = 1, len(tail), full.get_seq_length()
        while per_pass < len(rows) and (per_pass + 1) * n * (length + (per_pass + 1) * n) <= PACK_ATTENTION:
            per_pass += 1
        for start in range(0, len(rows), per_pass):
            logits = self._masked_tails(tail, full, hidden[start : start + per_pass])
            for i, row in enumerate(rows[start : start + per_pass]):
                yield row, logits[i : i + 1], (full_encoded if row == 0 else 0) + len(tail)

    def _masked_tails(self, tail: list[int], cache, hidden: list[tuple[int, int]]) -> torch.Tensor:
        """Logits ``[len(hidden), len(tail), vocab]`` of ``tail`` run after ``cache`` once
        per ``(start, stop)`` in ``hidden``, with those cache positions masked out.

        The copies are packed into one sequence (batch 1, so the cache is not copied): each
        copy attends to the cache minus its hidden span and causally to its own tokens,
        never to another copy, and takes the positions it would have had alone.
        """
        length, n, copies = cache.get_seq_length(), len(tail), len(hidden)
        visible = torch.zeros(copies, n, length + copies * n, dtype=torch.bool, device=self.device)
        own = torch.ones(n, n, dtype=torch.bool, device=self.device).tril()
        for i, (start, stop) in enumerate(hidden):
            visible[i, :, :length] = True
            visible[i, :, start:stop] = False
            visible[i, :, length + i * n : length + (i + 1) * n] = own
        mask = additive_mask(visible, self.model.dtype)
        positions = torch.arange(length, length + n, device=self.device).repeat(copies)
        logits = self.model(
            input_ids=torch.tensor([tail * copies], device=self.device),
            attention_mask=mask.reshape(1, 1, copies * n, -1), position_ids=positions[None],
            cache=cache, use_cache=True, logits_to_keep=copies * n,
        ).logits
        _crop(cache, length)
        return logits.reshape(copies, n, -1)

    @torch.inference_mode()
    def next_token_logprobs(
        self, prefix: list[int], chunks: list[list[int]], lead: list[int], tails: list[list[int]], token_ids: list[int]
    ) -> tuple[np.ndarray, int]:
        """Log-probabilities of ``token_ids`` as the next token after ``prefix + chunks +
        lead + tail``, for each tail (shape [len(tails), len(token_ids)]), and the tokens
        encoded. The evidence and lead are encoded once (or taken from the evidence LRU)."""
        ids = torch.tensor(token_ids, device=self.device)
        out = np.zeros((len(tails), len(token_ids)))
        # a loop, not list(): the evidence cache is compacted and kept after the tails have run
        for _, cache, processed in self._evidence_caches(prefix, chunks, 1, tuple(lead)):
            for row, tail in enumerate(tails):
                logits = self._tail_logits(tail, cache, 1)
                out[row] = torch.log_softmax(logits[0, -1].float(), dim=-1)[ids].double().cpu().numpy()
                processed += len(tail)
        return out, processed

    @torch.inference_mode()
    def subset_logprobs(self, prompt: EncodedPrompt, keep: np.ndarray) -> tuple[np.ndarray, int]:
        """Answer-token log-probs (shape [len(keep), answer tokens]) with only the chunks
        marked in each row of ``keep`` (bool, [n, K]) left in the context, and the tokens
        encoded. Rows that keep every chunk are the full-context condition. A new ablation
        starts from the encoding (the full evidence's, a kept ablation's or the previous
        row's) that keeps the same leading chunks longest, cut back to where they part, so rows
        in sorted order (as ``numpy.unique`` gives them) encode each run of leading chunks
        once. The ablated encodings are kept with the evidence's (within
        ``evidence_cache_bytes``), so a later answer over the same evidence encodes only its
        own tokens (and the question under each ablation, when it changed)."""
        lead, tail = tuple(prompt.middle[:-1]), prompt.middle[-1:] + prompt.answer.ids[:-1]
        n_answer = len(prompt.answer.ids)
        target = torch.tensor(prompt.answer.ids, device=self.device)
        logp = np.zeros((len(keep), n_answer))
        key, fresh, previous = _evidence_key(prompt.prefix, prompt.chunks), {}, {}
        # a loop, not list(): the evidence cache is compacted and kept after the tails have run
        for _, full, processed in self._evidence_caches(prompt.prefix, prompt.chunks, 1, lead):
            kept = self._evidence_lru.get(key)
            known = kept.subsets if kept is not None else {}
            budget = self.evidence_cache_bytes - _cache_bytes(full) - sum(_cache_bytes(a.cache) for a in known.values())
            for row, mask in enumerate(np.asarray(keep, dtype=bool)):
                chunk_mask = tuple(mask.tolist())
                cache, encoded = full, 0
                if not mask.all():
                    ablation = known.get(chunk_mask, fresh.get(chunk_mask))
                    if ablation is None:
                        sources = {m: a.cache for m, a in (previous | known | fresh).items()}
                        sources[(True,) * len(mask)] = full
                        cache, encoded = self._condition_cache(sources, prompt.chunks, len(prompt.prefix), list(chunk_mask))
                        ablation = _Ablation(cache, cache.get_seq_length(), ())
                    previous = {chunk_mask: ablation}
                    cache = ablation.cache
                    if ablation.lead != lead:  # a new question after the same evidence
                        _crop(cache, ablation.length)
                        self._encode(list(lead), cache)
                        ablation.lead, encoded = lead, encoded + len(lead)
                logq = torch.log_softmax(self._tail_logits(tail, cache, n_answer)[0].float(), dim=-1)
                logp[row] = logq.gather(1, target[:, None])[:, 0].double().cpu().numpy()
                processed += encoded + len(tail)
                if mask.all():
                    continue
                if chunk_mask not in known and chunk_mask not in fresh and _cache_bytes(cache) <= budget:
                    fresh[chunk_mask], budget = ablation, budget - _cache_bytes(cache)
                if chunk_mask in known or chunk_mask in fresh:
                    _compact(cache)  # kept: without the tail's storage
        self._keep_subsets(key, fresh)
        return logp, processed

    def _keep_subsets(self, key: tuple, subsets: dict[tuple[bool, ...], "_Ablation"]) -> None:
        """Add ablations to the kept evidence ``key`` (if it is still kept), older evidences
        making room first, then its own ablations if it still does not fit."""
        kept = self._evidence_lru.get(key)
        if kept is None:
            return
        kept.subsets.update(subsets)
        self._evidence_lru.move_to_end(key)
        self._evict_older()
        while kept.subsets and self._lru_bytes() > self.evidence_cache_bytes:
            kept.subsets.popitem()

    def _condition_cache(
        self, sources: dict[tuple[bool, ...], object], chunks: list[list[int]], prefix: int, keep: list[bool]
    ) -> tuple[object, int]:
        """The cache of the evidence with only the chunks marked in ``keep`` (at least one
        left out), built from the encoding in ``sources`` (caches by the chunks they keep: the
        full evidence's, ablations') whose chunk mask agrees with ``keep`` longest: a copy of
        it cut back to the first chunk where the two differ, then the kept chunks from there
        encoded. ``prefix``: the tokens before the first chunk. Returns the cache and the
        tokens encoded."""
        source = max(sources, key=lambda mask: _agreement(mask, keep))
        split = _agreement(source, keep)
        length = prefix + sum(len(c) for c, kept in zip(chunks[:split], keep[:split]) if kept)
        cache = _cropped_copy(sources[source], length)
        rest = list(chain.from_iterable(c for c, kept in zip(chunks[split:], keep[split:]) if kept))
        self._encode(rest, cache)
        return cache, len(rest)

    def _tail_logits(self, tail: list[int], cache, n_answer: int) -> torch.Tensor:
        length = cache.get_seq_length()
        logits = self._forward(tail, cache, n_answer).logits
        _crop(cache, length)  # back to evidence and question, for the next answer over them
        return logits

    def _batched_tails(self, tail: list[int], caches: list, n_answer: int) -> list[torch.Tensor]:
        """Run the same tail after every condition's evidence in one batch: the caches are
        left-padded to one length and masked, and each row keeps its own positions."""
        from transformers import DynamicCache

        lengths = [c.get_seq_length() for c in caches]
        longest = max(lengths)
        batched = DynamicCache(config=self.model.config)
        for index in range(len(caches[0].layers)):
            keys, values = (
                torch.cat([F.pad(getattr(c.layers[index], part), (0, 0, longest - n, 0)) for c, n in zip(caches, lengths)])
                for part in ("keys", "values")
            )
            batched.update(keys, values, index)
        mask = torch.ones(len(caches), longest + len(tail), dtype=torch.long, device=self.device)
        for row, n in enumerate(lengths):
            mask[row, : longest - n] = 0
        positions = torch.tensor([[n + i for i in range(len(tail))] for n in lengths], device=self.device)
        logits = self.model(
            input_ids=torch.tensor([tail] * len(caches), device=self.device), attention_mask=mask,
            position_ids=positions, cache=batched, use_cache=True, logits_to_keep=n_answer,
        ).logits
        return [logits[row : row + 1] for row in range(len(caches))]

    def _evidence_caches(
        self, prefix: list[int], chunks: list[list[int]], rows: int, lead: tuple[int, ...], in_turn: bool = False
    ) -> Iterator[tuple[int, object, int]]:
        """``(row, KV cache of that condition's prompt up to the last token, tokens encoded
        for it)`` for the first ``rows`` conditions: the condition's evidence, then ``lead``
        (the question and template).

        Evidence seen before comes from the LRU, and its question too when it is the same
        as last time. Otherwise prefix + all chunks are encoded once, and the condition
        without chunk k starts from a copy of that cache cut back to chunk k and encodes
        only the chunks after it. The caches are kept for later answers when they fit the
        byte budget. When they are not, and the caller is done with each row's cache before
        it asks for the next (``in_turn``), one cache serves every row in turn
        (:meth:`_conditions_in_place`).
        """
        key = _evidence_key(prefix, chunks)
        kept = self._evidence_lru.get(key)
        if kept is not None and len(kept.caches) >= rows:
            self._evidence_lru.move_to_end(key)
            fresh_lead = kept.lead != lead
            for row, (cache, length) in enumerate(zip(kept.caches[:rows], kept.lengths)):
                if fresh_lead:
                    _crop(cache, length)
                    self._encode(list(lead), cache)
                yield row, cache, len(lead) if fresh_lead else 0
                _compact(cache)
            if fresh_lead and rows < len(kept.caches):
                del self._evidence_lru[key]  # its other caches still hold the old question
            else:
                kept.lead = lead
            return
        full_ids = prefix + list(chain.from_iterable(chunks))
        full = self._encode(full_ids, None)
        ends = np.cumsum([len(prefix)] + [len(c) for c in chunks])
        lengths = ([len(full_ids), len(prefix)] + [len(full_ids) - len(c) for c in chunks])[:rows]
        needed = _cache_bytes(full) / max(len(full_ids), 1) * (sum(lengths) + rows * len(lead))
        keep = needed <= self.evidence_cache_bytes
        if keep:  # make room first, so that the old and the new caches never exceed the budget together
            self._evidence_lru.pop(key, None)  # kept before with fewer rows: replaced below
            while self._evidence_lru and self._lru_bytes() + needed > self.evidence_cache_bytes:
                self._evidence_lru.popitem(last=False)
        elif in_turn:
            yield from self._conditions_in_place(full, len(full_ids), chunks, ends, rows, lead)
            return
        caches = []
        for row in range(rows):
            if row == 0:
                cache, encoded = full, len(full_ids)
            else:  # row 1: no chunk; row 2 + k: every chunk but k
                mask = [row != 1 and k != row - 2 for k in range(len(chunks))]
                cache, encoded = self._condition_cache({(True,) * len(chunks): full}, chunks, len(prefix), mask)
            self._encode(list(lead), cache)
            yield row, cache, encoded + len(lead)
            if keep:
                _compact(cache)
                caches.append(cache)
        if keep:
            self._remember(key, _KeptEvidence(caches, lengths, lead))

    def _conditions_in_place(
        self, cache, encoded: int, chunks: list[list[int]], ends: np.ndarray, rows: int, lead: tuple[int, ...]
    ) -> Iterator[tuple[int, object, int]]:
        """The conditions of :meth:`_evidence_caches` in one cache, when none is kept: the
        full evidence first, then the leave-one-out rows from the last chunk back (the
        evidence before chunk k is a prefix of every later chunk's row, so each row cuts the
        cache back to its chunk's start and encodes the chunks after it), the no-context
        row last. The same tokens are encoded as with copies, but one cache is in memory
        instead of two. Each row's cache is reused once the consumer is done with it.
        ``encoded``: the full evidence's tokens, encoded for row 0."""
        for row in [0, *(2 + k for k in reversed(range(rows - 2))), *([1] if rows > 1 else [])]:
            if row > 0:
                start = int(ends[0]) if row == 1 else int(ends[row - 2])
                _crop(cache, start)
                rest = [] if row == 1 else list(chain.from_iterable(chunks[row - 1 :]))
                self._encode(rest, cache)
                encoded = len(rest)
            self._encode(list(lead), cache)
            yield row, cache, encoded + len(lead)

    def _encode(self, ids: list[int], cache):
        """Extend ``cache`` (None: a new one) with ``ids`` in pieces of ``ENCODE_PIECE``
        tokens, so that attention's memory stays bounded for long contexts."""
        for start in range(0, len(ids), ENCODE_PIECE):
            cache = self._forward(ids[start : start + ENCODE_PIECE], cache, 1).cache
        return cache

    def _remember(self, key: tuple, kept: "_KeptEvidence") -> None:
        self._evidence_lru[key] = kept  # a new entry, the newest: the caller popped any older one
        self._evict_older()

    def _evict_older(self) -> None:
        """Drop the oldest kept evidences until the LRU fits its budget or one is left."""
        while len(self._evidence_lru) > 1 and self._lru_bytes() > self.evidence_cache_bytes:
            self._evidence_lru.popitem(last=False)

    def _lru_bytes(self) -> int:
        return sum(_cache_bytes(c) for kept in self._evidence_lru.values() for c in kept.all_caches())

    def _check_stop(self) -> None:
        if self._stop is not None and self._stop():
            raise Cancelled("scoring was cancelled")

    def _watch_stop(self) -> None:
        """Ask ``_stop`` before each decoder layer runs (before each forward pass, for a model
        whose layers are not at ``model.model.layers``), so that a cancelled request stops
        within one layer's work, not one forward pass's, however slow the machine."""
        layers = getattr(getattr(self.model, "model", None), "layers", None)
        for module in layers if layers else [self.model]:
            module.register_forward_pre_hook(lambda *_: self._check_stop())

    def _forward(self, ids: list[int], cache, n_answer: int):
        inputs = torch.tensor([ids], device=self.device)
        return self.model(input_ids=inputs, cache=cache, use_cache=True, logits_to_keep=n_answer)

    def _compare(self, full: Distributions, logits: torch.Tensor, target: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """Token log-probs under one condition and their JSD to the full-context rows."""
        logq = torch.log_softmax(logits[0].float(), dim=-1)
        token_logp = logq.gather(1, target[:, None])[:, 0]
        blocks = [
            _jsd(full.rows(i, i + self.block_size), logq[i : i + self.block_size])
            for i in range(0, len(target), self.block_size)
        ]
        return token_logp.double().cpu().numpy(), torch.cat(blocks).double().cpu().numpy()
