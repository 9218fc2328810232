"""Loading a scorer's model and tokenizer by name, at a numeric precision."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import torch

from .. import weights
from ..errors import InputError, ScorerUnavailable
from ..inputs.validate import PRECISIONS
from .threads import size_threads

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


def load_model(
    name: str | None, device: torch.device, precision: str = "auto"
) -> tuple[str, PreTrainedModel, PreTrainedTokenizerBase]:
    """``(display name, model in eval mode on device, tokenizer)`` of a built-in scorer name,
    a local model directory or a Hugging Face id (None: the embedded default), at
    ``precision`` (:func:`at_precision`; ``auto``: :func:`resolve_precision`) on any device; on
    the CPU, torch's threads sized first (:func:`~groundsense.scorer.threads.size_threads`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    precision = resolve_precision(precision, device)
    if device.type == "cpu":
        size_threads()
    name, source = weights.resolve(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        # transformers' decorated `to` loses its binding to the model in typeshed's functools.wraps
        # bf16 loads as bf16 (the same rounding as at_precision's, without an fp32 copy on the device)
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype).to(device).eval()  # type: ignore[arg-type]
    except (OSError, ValueError) as exc:
        weights.check_available(name)  # says why where it can: an unknown id, a directory without a model
        raise ScorerUnavailable(f"cannot load scorer {name!r} from {source}: {exc}") from exc
    return name, at_precision(model, precision), tokenizer


def pick_device(device: str | None) -> torch.device:
    """``device``, or cuda where available, else the CPU."""
    return torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))


def native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX-512 BF16 or AMX), where bf16 runs about
    twice as fast as fp32; elsewhere torch emulates it, slower than fp32."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # torch.cpu's own checks
    return any(getattr(torch.cpu, probe, lambda: False)() for probe in probes)


def resolve_precision(precision: str, device: torch.device) -> str:
    """``precision`` as the scorer runs it: ``auto`` is ``bf16`` on CUDA and on a CPU with native
    bf16 (:func:`native_bf16`), ``fp32`` elsewhere (docs/performance.md, "Numeric precision").
    The hardware's choice only: a detection resolves ``GROUNDSENSE_PRECISION`` before it asks
    (:func:`groundsense.pipeline.precision.detection_precision`)."""
    check_precision(precision, device)
    if precision != "auto":
        return precision
    return "bf16" if device.type == "cuda" or (device.type == "cpu" and native_bf16()) else "fp32"


def check_precision(precision: str, device: torch.device) -> None:
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "int8" and device.type != "cpu":
        raise InputError(f"precision int8 runs on a CPU only, not on {device}: pass device cpu")


def at_precision(model: PreTrainedModel, precision: str) -> PreTrainedModel:
    """``model`` (fp32) at ``precision``, changed in place: itself for ``fp32``; for ``bf16``,
    its weights and so its activations and KV cache in bfloat16 (fast where the CPU has
    AVX-512 BF16 or AMX, emulated and slow where not); for ``int8``, its ``nn.Linear`` layers
    (the decoder's projections and the vocabulary head) replaced by dynamically quantised ones
    (int8 weights with one scale per tensor, activations quantised per call), the embeddings,
    norms and attention left in fp32. The scorer turns logits to fp32 before its log-softmax
    at every precision. torch marks ``torch.ao.quantization`` deprecated in favour of
    torchao; its warnings are silenced here, the measured path being this one."""
    if precision == "bf16":
        return model.to(torch.bfloat16)  # type: ignore[arg-type]  # as in load_model
    if precision == "int8":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", message=r"torch\.quantize_per_tensor", category=UserWarning)
            torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
    return model


def n_parameters(model: PreTrainedModel) -> int:
    """The model's weights, at any precision: a quantised layer's are not torch parameters,
    and a vocabulary head tied to the embeddings counts once, as in fp32."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    tied = getattr(model.config, "tie_word_embeddings", False) and model.get_output_embeddings()
    return sum(p.numel() for p in model.parameters()) + sum(
        m.weight().numel() + (0 if m.bias() is None else m.bias().numel())
        for m in model.modules() if isinstance(m, DynamicLinear) and m is not tied
    )
