"""What the model verifiers share: the per-answer output, the cost estimate and the cache key."""

from __future__ import annotations

import hashlib
import json
import re
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..inputs.validate import check_inputs
from .verifier import SentenceInput, Verifier

if TYPE_CHECKING:
    from ..scorer import Scorer

VERSION = 1  # bump when a verifier's scores change for the same configuration


@dataclass
class VerifierScores:
    """A verifier's output for one answer, one entry per sentence of its input.

    ``score`` is the probability (or score) that the sentence is unsupported, higher = more
    suspicious, NaN where the sentence could not be scored. ``gflops`` is the cost estimate
    (tokens through the model x 2 x parameters / 1e9, counting every pass in full, as if no
    cache were reused). ``extra`` holds verifier-specific columns; ``support_chunk`` is set by
    attribution verifiers (the chunk index credited with the sentence, or None)."""

    score: np.ndarray
    gflops: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    support_chunk: list[int | None] | None = None


def gflops(tokens: np.ndarray | float, n_parameters: int) -> np.ndarray:
    """Forward-pass cost of ``tokens`` tokens: 2 FLOPs per parameter per token, in GFLOPs."""
    return np.asarray(tokens, dtype=float) * 2 * n_parameters / 1e9


class ModelVerifier(Verifier):
    """A verifier backed by a model: it scores a :class:`SentenceInput` with its cost, and
    its settings make the key of its score cache.

    Subclasses set ``kind`` and ``options`` (option name -> type, the settings a user may
    pass as ``-o NAME=VALUE``), and fill ``model_name``, ``n_parameters`` and ``params``
    (the settings in effect, which go into the cache key)."""

    kind: ClassVar[str]
    options: ClassVar[dict[str, type]] = {}
    model_name: str
    n_parameters: int
    params: dict

    def __init__(self, model: Scorer | str, device: str | None = None, **options: Any) -> None:
        """Every kind is made as ``cls(model, device=..., **options)`` (:mod:`.kinds`):
        ``model`` a name, or for the kinds that run on the scorer a loaded :class:`Scorer`."""
        raise TypeError(f"{type(self).__name__} must define __init__(model, device=None, **options)")

    def verify(self, sentences: SentenceInput) -> VerifierScores:
        """Score every sentence of ``sentences``; raise an InputError on input it cannot score."""
        check_inputs(sentences.answer, sentences.context, sentences.passages)
        return self.score_input(sentences)

    @abstractmethod
    def score_input(self, sentences: SentenceInput) -> VerifierScores:
        """:meth:`verify` on a checked input."""

    @property
    def name(self) -> str:
        """The spec that builds this verifier, as reported by a cascade."""
        return f"{self.kind}:{self.model_name}"

    def score_sentences(self, question: str, chunks: list[str], sentences: list[str]) -> list[float]:
        """The sentences scored against the detector's ``chunks``, given as the passages (so
        the evidence is the detector's). Not checked again: a cascade hands over the text of a
        request it checked (call :meth:`verify` for a check)."""
        return self.score_input(SentenceInput.from_texts(question, chunks, sentences)).score.tolist()

    def config(self) -> dict:
        """What makes two runs comparable (the cache key hashes it), plus the model size."""
        return {"verifier": self.kind, "model": self.model_name, "params": self.params, "version": VERSION,
                "n_parameters": self.n_parameters}

    @property
    def key(self) -> str:
        """Cache folder name: ``<kind>-<model name>__<hash of the configuration>``."""
        identity = {k: v for k, v in self.config().items() if k != "n_parameters"}
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]
        return f"{self.kind}-{model_slug(self.model_name)}__{digest}"


def model_slug(name: str) -> str:
    """A model name (built-in, directory or Hugging Face id) as a file-name part: its last
    path component, characters other than letters, digits and ``._-`` replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name.rstrip("/").split("/")[-1])
