"""Sequence-classifier verifiers (NLI, MiniCheck, AlignScore) by Hugging Face id or local path.

Each sentence is the hypothesis and each chunk of the evidence the premise (``premise=chunks``,
the default), or the whole evidence (``premise=context``). The support probability is the
softmax probability of the label named by ``label`` (looked up in ``config.id2label``, case
insensitive, or given as an index); a single-logit head is read as a sigmoid. Score =
1 - the largest support probability over the premises.

Chunks are the detector's (passages as given; a context string split into ``k`` chunks of
sentences) without the scorer's token cut: the classifier has its own input limit, and a
premise longer than ``max_length`` tokens is truncated from its end (the hypothesis is kept).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..config import DEFAULTS
from ..errors import InputError, VerifierUnavailable
from ..inputs.text import chunk_context, join_passages
from ..scorer.loading import pick_device
from .model import ModelVerifier, VerifierScores, gflops
from .verifier import SentenceInput

PREMISES = ("chunks", "context")


def support_label(id2label: dict, wanted: str) -> int:
    """Index of the label ``wanted`` (a name, case-insensitive, or an index) in ``id2label``."""
    names = {int(i): str(name) for i, name in id2label.items()}
    if wanted.isdigit() and int(wanted) in names:
        return int(wanted)
    matches = [i for i, name in names.items() if name.lower() == wanted.lower()]
    if not matches:
        listed = ", ".join(f"{i}={name}" for i, name in sorted(names.items()))
        raise VerifierUnavailable(
            f"the model has no label {wanted!r} (its labels: {listed}); name the label that means "
            f"'supported' with -o label=NAME or -o label=INDEX"
        )
    return matches[0]


def premises(sentences: SentenceInput, premise: str, k: int) -> list[str]:
    """The premise texts of an input: its chunks (as the detector makes them), or the whole evidence."""
    if sentences.context is not None:
        context, chunks = sentences.context, chunk_context(sentences.context, k)
    else:  # exactly one of the two is set (SentenceInput checks it)
        context, chunks = join_passages(sentences.passages or [])
    if premise == "context":
        return [context]
    return [c.content.of(context) for c in chunks]


class SequenceClassifierVerifier(ModelVerifier):
    """A premise/hypothesis classifier; subclasses set ``kind`` and the default label."""

    options = {"label": str, "premise": str, "k": int, "max_length": int, "batch_size": int}
    default_label = "entailment"

    def __init__(self, model: str, label: str | None = None, premise: str = "chunks", k: int = DEFAULTS.k,
                 max_length: int = 512, batch_size: int = 16, device: str | None = None):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if premise not in PREMISES:
            raise InputError(f"premise must be one of {', '.join(PREMISES)}, not {premise!r}")
        if _looks_like_path(model) and not Path(model).expanduser().is_dir():
            raise VerifierUnavailable(f"no model directory at {model}: download the {self.kind} model "
                                      "and pass its directory")
        self.device = pick_device(device)
        try:
            source = str(Path(model).expanduser()) if _looks_like_path(model) else model
            self.tokenizer = AutoTokenizer.from_pretrained(source)
            self.model = AutoModelForSequenceClassification.from_pretrained(source).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise VerifierUnavailable(
                f"cannot load the {self.kind} model {model!r} ({type(exc).__name__}: {exc}). Its weights cannot be "
                "downloaded here: download it where you have internet access and pass its local directory"
            ) from exc
        label = label or self.default_label
        self.binary = self.model.config.num_labels == 1
        self.label = None if self.binary else support_label(self.model.config.id2label, label)
        self.model_name, self.n_parameters = model, sum(p.numel() for p in self.model.parameters())
        self.premise, self.k, self.batch_size = premise, k, batch_size
        self.max_length = min(max_length, self.tokenizer.model_max_length)
        self.params = {"label": None if self.binary else label, "premise": premise, "k": k,
                       "max_length": self.max_length}

    def score_input(self, sentences: SentenceInput) -> VerifierScores:
        texts = premises(sentences, self.premise, self.k)
        hypotheses = sentences.texts()
        pairs = [(p, s) for s in hypotheses for p in texts]  # sentence-major: rows of [S, P]
        probs, tokens = self.support_probabilities([p for p, _ in pairs], [s for _, s in pairs])
        probs, tokens = probs.reshape(len(hypotheses), len(texts)), tokens.reshape(len(hypotheses), len(texts))
        best = probs.max(axis=1)
        extra = {"p_supported": best}
        if self.premise == "chunks":
            extra["best_chunk"] = probs.argmax(axis=1)
        return VerifierScores(score=1.0 - best, gflops=gflops(tokens.sum(axis=1), self.n_parameters), extra=extra)

    @torch.inference_mode()
    def support_probabilities(self, premise_texts: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """P(supported) of each premise/hypothesis pair, and the tokens each pair fed the model."""
        probs, tokens = [], []
        for start in range(0, len(premise_texts), self.batch_size):
            batch = self.tokenizer(
                premise_texts[start : start + self.batch_size], hypotheses[start : start + self.batch_size],
                truncation="only_first", max_length=self.max_length, padding=True, return_tensors="pt",
            ).to(self.device)
            logits = self.model(**batch).logits.float()
            p = torch.sigmoid(logits[:, 0]) if self.binary else torch.softmax(logits, dim=-1)[:, self.label]
            probs.append(p.cpu().numpy())
            tokens.append(batch["attention_mask"].sum(dim=1).cpu().numpy())
        return np.concatenate(probs).astype(float), np.concatenate(tokens).astype(float)


def _looks_like_path(model: str) -> bool:
    return model.startswith((".", "/", "~")) or Path(model).expanduser().exists() or model.count("/") > 1


class NLIVerifier(SequenceClassifierVerifier):
    """``nli:<id or path>``: an NLI cross-encoder; support = the ``entailment`` label."""

    kind = "nli"
    default_label = "entailment"


class MiniCheckVerifier(SequenceClassifierVerifier):
    """``minicheck:<id or path>``: a MiniCheck-style binary fact-checker (RoBERTa/DeBERTa
    sequence classifier); support = the ``supported`` label (``-o label=1`` for LABEL_0/LABEL_1)."""

    kind = "minicheck"
    default_label = "supported"


class AlignScoreVerifier(SequenceClassifierVerifier):
    """``alignscore:<id or path>``: an AlignScore-style alignment classifier exported as a
    Hugging Face sequence classifier; support = the ``aligned`` label."""

    kind = "alignscore"
    default_label = "aligned"
