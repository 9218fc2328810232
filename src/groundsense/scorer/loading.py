"""Loading a scorer's model and tokenizer by name."""

from __future__ import annotations

import torch

from .. import weights
from ..errors import ScorerUnavailable


def load_model(name: str | None, device: torch.device) -> tuple[str, object, object]:
    """``(display name, model in eval mode on device, tokenizer)`` of a built-in scorer name,
    a local model directory or a Hugging Face id (None: the embedded default). CPU runs in
    fp32, CUDA in bf16."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name, source = weights.resolve(name)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype).to(device).eval()
    except (OSError, ValueError) as exc:
        raise ScorerUnavailable(f"cannot load scorer {name!r} from {source}: {exc}") from exc
    return name, model, tokenizer
