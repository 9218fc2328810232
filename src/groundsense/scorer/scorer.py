"""The scorer: a causal LM that re-scores a fixed answer under K+2 evidence conditions."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from .attention import use_aligned_attention
from .condition_encoder import ConditionEncoder
from .conditions import OpenConditions, open_conditions, score_exact, score_next
from .encoding import EncodedPrompt, PromptEncoder
from .evidence_cache import EvidenceCache
from .loading import load_model, n_parameters, pick_device, resolve_precision
from .masked import score_masked
from .passes import ModelPasses
from .token_scores import TokenScores

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


class Scorer(PromptEncoder):
    """A Hugging Face causal LM with its tokenizer and prompt layout: it encodes prompts
    (:class:`PromptEncoder`) and scores their answers.

    ``name`` is a built-in scorer name, a local model directory or a Hugging Face id;
    ``None`` is the embedded default (SmolLM2-135M-Instruct). ``precision``: ``auto`` (bf16
    on CUDA and on a CPU with native bf16, fp32 elsewhere), ``fp32``, ``bf16`` or, on a CPU,
    ``int8`` (docs/performance.md, "Numeric precision"); :attr:`precision` holds the one run.
    ``block_size`` bounds the answer positions whose vocabulary distributions are compared at once.
    ``evidence_cache_bytes`` bounds the KV caches kept of recent evidences (K+2 caches each), for
    later answers over the same evidence; 0 keeps none.
    ``batch_conditions`` runs the K+2 conditions over the answer tokens in one forward call
    instead of one call per condition, their caches stacked. By default (None) it does so
    where it measured faster: a stream's steps everywhere (a few tokens each: 2.2-2.6× faster
    on a CPU), a whole answer's tails on CUDA only (on a CPU, at about a hundred tokens a
    condition, batching gained nothing and the sequential path holds one cache at a time;
    docs/performance.md, "Batched conditions"). True or False sets both.
    """

    def __init__(
        self,
        name: str | None = None,
        device: str | None = None,
        block_size: int = 64,
        evidence_cache_bytes: int = 512 * 2**20,
        batch_conditions: bool | None = None,
        precision: str = "auto",
    ) -> None:
        on = pick_device(device)
        precision = resolve_precision(precision, on)
        display, model, tokenizer = load_model(name, on, precision)
        self._setup(display, model, tokenizer, on, block_size, evidence_cache_bytes, batch_conditions, precision)

    @classmethod
    def from_model(cls, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, name: str,
                   **options: Any) -> Scorer:
        """A scorer around a model already in memory (e.g. one built from a config for a
        speed test). ``tokenizer`` may be None when prompts come pre-encoded; ``precision``
        names the one the model is at (``fp32`` if not given)."""
        scorer = cls.__new__(cls)
        scorer._setup(name, model.eval(), tokenizer, next(model.parameters()).device, **options)
        return scorer

    def _setup(
        self, name: str, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None, device: torch.device,
        block_size: int = 64,
        evidence_cache_bytes: int = 512 * 2**20, batch_conditions: bool | None = None, precision: str = "fp32",
    ) -> None:
        super().__init__(tokenizer)
        self.name, self.model, self.device, self.precision = name, model, device, precision
        self.block_size = block_size
        self.batch_tails = device.type == "cuda" if batch_conditions is None else batch_conditions
        self.batch_steps = True if batch_conditions is None else batch_conditions
        self.evidence = EvidenceCache(evidence_cache_bytes)
        if device.type == "cpu" and precision == "bf16":  # a position's scores whatever pass computes them
            use_aligned_attention(model)
        self.passes = ModelPasses(model, device)
        self.condition_encoder = ConditionEncoder(self.passes, self.evidence)
        # One computation on the model at a time: the kept evidence, the passes' stop flag and the
        # tokenizer are shared. Reentrant: a judge on this scorer runs inside a detection's hold.
        self.lock = threading.RLock()

    def forget_evidence(self) -> None:
        """Drop the evidence encodings kept for later answers (the next answer starts cold)."""
        self.evidence.clear()

    @property
    def n_parameters(self) -> int:
        return n_parameters(self.model)

    @property
    def threads(self) -> int | None:
        """The CPU threads its passes run now (torch's pool); None on another device. At bf16 the
        thread count can change a score (docs/performance.md, "One answer, one score"), so
        every result records it."""
        return torch.get_num_threads() if self.device.type == "cpu" else None

    @torch.inference_mode()
    def score(
        self, prompt: EncodedPrompt, leave_one_out: bool = True, masked: bool = False,
        stop: Callable[[], bool] | None = None,
    ) -> TokenScores:
        """Score the answer under every condition; the evidence's encoding is reused.
        ``stop`` is asked before each decoder layer runs; when it says True,
        :class:`~groundsense.errors.Cancelled` is raised (a service drops a request past its
        timeout that way) and the kept encodings of the evidence, which the interrupted work
        may have left half-updated, are dropped.

        ``masked`` approximates the leave-one-out rows: instead of re-encoding the context
        without chunk k, the question-and-answer tail runs once more over the full
        context's encoding with chunk k's positions hidden from it (see
        :mod:`groundsense.scorer.masked`). The full- and no-context rows stay exact.
        """
        with self.lock, self.passes.stopping(stop):
            if leave_one_out and masked:
                scores = score_masked(self.condition_encoder, prompt, self.block_size)
            else:
                rows = 2 + len(prompt.chunks) if leave_one_out else 2
                scores = score_exact(self.condition_encoder, prompt, rows, self.block_size, self.batch_tails)
        return replace(scores, threads=self.threads)

    @torch.inference_mode()
    def open_conditions(
        self, prefix: list[int], chunks: list[list[int]], middle: list[int], leave_one_out: bool = True
    ) -> OpenConditions:
        """Each condition's KV cache up to the prompt's last token, as copies of its own, for
        an answer that arrives in pieces (:meth:`score_next`). The evidence comes from the
        kept evidence, or is encoded once and kept there, as for :meth:`score`."""
        rows = 2 + len(chunks) if leave_one_out else 2
        with self.lock:
            return open_conditions(self.condition_encoder, prefix, chunks, middle, rows, self.batch_steps)

    @torch.inference_mode()
    def score_next(self, conditions: OpenConditions, ids: list[int]) -> TokenScores:
        """Score the answer's next tokens ``ids`` under every condition, extending each
        condition's cache by them: the rows of :meth:`score` for those tokens."""
        with self.lock:
            return replace(score_next(self.passes, conditions, ids, self.block_size), threads=self.threads)
