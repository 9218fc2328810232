"""A trained verifier, candidate V-135M of docs/detector-selection.md ("A trained verifier"): a
scorer's decoder with LoRA (rank 8, alpha 16, dropout 0.05) on the query and value projections of
every layer, and a linear head on the last token's final hidden state, whose sigmoid is
P(unsupported) of the claim its input ends with (:mod:`.verifier_inputs`).

What is saved is the adapter and the head only (:meth:`TrainedVerifier.save`: one safetensors file
of about 2 MB, its metadata naming the base), loaded over the base by the library's own code
(:meth:`TrainedVerifier.load`; a missing base raises ``ScorerUnavailable``, which says what to
install). The adapter changes the forward pass of the scorer's model in place: a verifier owns
its scorer, which must not score for a detector too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from groundsense.scorer import Scorer
from groundsense.verification import ModelVerifier, SentenceInput, VerifierScores, gflops

from ..caches.trained_scores import artefact_digest
from .verifier_inputs import sentence_inputs

if TYPE_CHECKING:
    from transformers import PreTrainedModel

LORA: dict[str, Any] = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.05, "target_modules": ["q_proj", "v_proj"]}
Ids = Sequence[int] | np.ndarray  # one input's token ids: a list, or an array read from a bundle
FORMAT = 1  # of the saved file and of the input (verifier_inputs): bump when either changes


class VerifierModel(torch.nn.Module):
    """``base`` (a causal LM, changed in place) with the LoRA adapter, and the head: the forward
    pass gives each input's logit of P(unsupported)."""

    def __init__(self, base: PreTrainedModel) -> None:
        from peft import LoraConfig, inject_adapter_in_model

        super().__init__()
        inject_adapter_in_model(LoraConfig(**LORA), base)  # in place; only the adapter's weights train
        self.base = base
        self.head = torch.nn.Linear(base.config.hidden_size, 1, device=base.device)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits ([batch]) of right-padded ``ids`` ([batch, tokens]; ``mask`` 1 on real tokens)."""
        decoder = cast(torch.nn.Module, self.base.get_decoder())
        hidden = decoder(input_ids=ids, attention_mask=mask).last_hidden_state
        last = hidden[torch.arange(len(ids), device=ids.device), mask.sum(dim=1) - 1]
        return self.head(last).squeeze(-1).float()

    def trained_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    def trained_state(self) -> dict[str, torch.Tensor]:
        """The adapter's and the head's weights, by name: all that training changes."""
        from peft import get_peft_model_state_dict

        adapter = get_peft_model_state_dict(self.base)
        return ({f"adapter.{k}": v.detach() for k, v in adapter.items()}
                | {f"head.{k}": v.detach() for k, v in self.head.state_dict().items()})

    def load_trained_state(self, state: dict[str, torch.Tensor]) -> None:
        from peft import set_peft_model_state_dict

        adapter = {k.removeprefix("adapter."): v for k, v in state.items() if k.startswith("adapter.")}
        # peft annotates its result as a bare namedtuple; it is load_state_dict's, which has unexpected_keys
        unexpected = set_peft_model_state_dict(self.base, adapter).unexpected_keys  # type: ignore[attr-defined]
        if unexpected or len(adapter) != sum(1 for name, _ in self.base.named_parameters() if "lora_" in name):
            raise ValueError("the saved adapter does not fit this base model")
        self.head.load_state_dict({k.removeprefix("head."): v for k, v in state.items() if k.startswith("head.")})


def padded(inputs: Sequence[Ids], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``inputs`` right-padded to the longest: ids and attention mask, [batch, tokens] each."""
    width = max(map(len, inputs))
    ids = torch.full((len(inputs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(inputs), width), dtype=torch.long)
    for row, tokens in enumerate(inputs):
        ids[row, : len(tokens)] = torch.as_tensor(tokens, dtype=torch.long)
        mask[row, : len(tokens)] = 1
    return ids.to(device), mask.to(device)


class TrainedVerifier(ModelVerifier):
    """``trained:<file>``: P(unsupported) of each sentence from a trained adapter and head over
    ``scorer`` (until one is loaded, a fresh adapter and head drawn with ``seed``), ``batch_size``
    inputs a pass."""

    kind = "trained"

    def __init__(self, scorer: Scorer, name: str = "untrained", batch_size: int = 16, seed: int = 0,
                 params: dict | None = None) -> None:
        self.scorer, self.model_name, self.batch_size = scorer, name, batch_size
        with torch.random.fork_rng(devices=[scorer.device] if scorer.device.type == "cuda" else []):
            torch.manual_seed(seed)
            self.model = VerifierModel(scorer.model)
        self.n_parameters = scorer.n_parameters + sum(p.numel() for p in self.model.head.parameters())
        self.params = params or {}
        tokenizer = scorer.text_tokenizer()
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    @classmethod
    def load(cls, path: str | Path, scorer: Scorer | None = None, device: str | None = None,
             batch_size: int = 16) -> TrainedVerifier:
        """The verifier saved at ``path``, over ``scorer`` (one with no adapter yet), else over its
        base loaded by name in fp32 on ``device``."""
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as saved:
            meta = saved.metadata()
            state = {key: saved.get_tensor(key) for key in saved.keys()}
        if int(meta.get("format", 0)) != FORMAT:
            raise ValueError(f"{path}: a trained verifier of format {meta.get('format')}, not {FORMAT}: train it again")
        if scorer is None:
            scorer = Scorer(meta["base"], device=device, precision="fp32")
        elif scorer.name != meta["base"]:
            raise ValueError(f"{path} was trained over {meta['base']!r}, not {scorer.name!r}")
        verifier = cls(scorer, Path(path).stem, batch_size, params={"sha256": artefact_digest(path)})
        verifier.model.load_trained_state({k: v.to(scorer.device) for k, v in state.items()})
        return verifier

    def save(self, path: str | Path) -> None:
        """The adapter and the head, with the base's name, to one safetensors file."""
        from safetensors.torch import save_file

        state = {k: v.contiguous().cpu() for k, v in self.model.trained_state().items()}
        save_file(state, str(path), metadata={"base": self.scorer.name, "format": str(FORMAT),
                                              "lora": json.dumps(LORA)})

    @torch.inference_mode()
    def probabilities(self, inputs: Sequence[Ids]) -> np.ndarray:
        """P(unsupported) of each input (:func:`.verifier_inputs.input_ids`), :attr:`batch_size` a pass."""
        self.model.eval()
        out = np.zeros(len(inputs))
        for start in range(0, len(inputs), self.batch_size):
            batch = inputs[start : start + self.batch_size]
            logits = self.model(*padded(batch, self.pad_id, self.scorer.device))
            out[start : start + len(batch)] = torch.sigmoid(logits).double().cpu().numpy()
        return out

    def score_input(self, sentences: SentenceInput) -> VerifierScores:
        inputs = sentence_inputs(self.scorer, sentences)
        return VerifierScores(score=self.probabilities(inputs),
                              gflops=gflops(np.array([len(i) for i in inputs], dtype=float), self.n_parameters))
