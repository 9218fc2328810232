"""Forward passes of the scorer's model over KV caches, cancellable between decoder layers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..errors import Cancelled, InputError
from .kv import crop

if TYPE_CHECKING:
    from transformers import Cache, PreTrainedModel
    from transformers.modeling_outputs import CausalLMOutputWithPast

ENCODE_PIECE = 512  # evidence tokens per forward call


def sliding_window(model: PreTrainedModel) -> int | None:
    """The narrowest attention window among ``model``'s layers (None: every layer attends to
    every position), as the cache its forward passes make has it."""
    from transformers import DynamicCache

    layers = DynamicCache(config=model.config).layers
    windows = [getattr(layer, "sliding_window", None) for layer in layers if getattr(layer, "is_sliding", False)]
    return min((w for w in windows if isinstance(w, int)), default=None)


class ModelPasses:
    """Runs ``model`` on ``device``. While :meth:`stopping` is in effect with a ``stop``, it is
    asked before each decoder layer runs (before each forward pass, for a model whose layers
    are not at ``model.model.layers``), so that a cancelled request stops within one layer's
    work, not one forward pass's, however slow the machine."""

    def __init__(self, model: PreTrainedModel, device: torch.device) -> None:
        self.model, self.device = model, device
        layers = getattr(getattr(model, "model", None), "layers", None)
        self._stoppable = list(layers) if layers else [model]
        if (window := sliding_window(model)) is not None:
            raise InputError(f"this scorer's model attends over a sliding window ({window} tokens) in some layers, "
                             "whose caches keep only their last positions; the conditions' cut, copied and stacked "
                             "caches need every position kept: use a model with full attention in every layer "
                             "(the built-in scorers, Llama, Qwen2 without use_sliding_window)")

    @contextmanager
    def stopping(self, stop: Callable[[], bool] | None) -> Iterator[None]:
        """Raise :class:`Cancelled` from the passes run inside once ``stop`` says True. The
        checks are hooked onto the layers for this block only: passes without a ``stop`` run
        without hooks, on the modules' fast path."""
        if stop is None:
            yield
            return

        def check(*_: object) -> None:
            if stop():
                raise Cancelled("scoring was cancelled")

        hooks = [module.register_forward_pre_hook(check) for module in self._stoppable]
        try:
            yield
        finally:
            for hook in hooks:
                hook.remove()

    def forward(self, ids: list[int], cache: Cache | None, n_logits: int) -> CausalLMOutputWithPast:
        """The model's output for ``ids`` after ``cache`` (None: none), which it extends,
        with the logits of the last ``n_logits`` positions. A lone token runs with a copy
        of itself after it, cut from the cache and the logits again: a one-token pass takes
        a path of its own, whose bf16 rounding differs (:mod:`groundsense.scorer.attention`)."""
        lone = len(ids) == 1
        inputs = torch.tensor([ids * 2 if lone else ids], device=self.device)
        output = self.model(input_ids=inputs, cache=cache, use_cache=True, logits_to_keep=n_logits + lone)
        if lone:
            crop(output.cache, output.cache.get_seq_length() - 1)
            output.logits = output.logits[:, :-1]
        return output

    def encode(self, ids: list[int], cache: Cache | None) -> Cache:
        """Extend ``cache`` (None: a new one) with ``ids`` in pieces of ``ENCODE_PIECE``
        tokens, so that attention's memory stays bounded for long contexts."""
        for start in range(0, len(ids), ENCODE_PIECE):
            cache = self.forward(ids[start : start + ENCODE_PIECE], cache, 1).cache
        assert cache is not None, "a new cache needs at least one token"
        return cache

    def tail_logits(self, tail: list[int], cache: Cache, n_logits: int) -> torch.Tensor:
        """Logits of ``tail`` run after ``cache``, which is left as it was."""
        length = cache.get_seq_length()
        logits = self.forward(tail, cache, n_logits).logits
        assert logits is not None  # a causal LM's output always holds them
        crop(cache, length)  # back to evidence and question, for the next answer over them
        return logits

    def stack(self, caches: list[Cache]) -> StackedCaches:
        """The caches as one batch, left-padded to the longest (a copy: they are not changed)."""
        from transformers import DynamicCache

        lengths = [c.get_seq_length() for c in caches]
        longest = max(lengths)
        stacked = DynamicCache(config=self.model.config)
        for index in range(len(caches[0].layers)):
            keys, values = (
                torch.cat([F.pad(getattr(c.layers[index], part), (0, 0, longest - n, 0))
                           for c, n in zip(caches, lengths)])
                for part in ("keys", "values")
            )
            stacked.update(keys, values, index)
        return StackedCaches(stacked, [longest - n for n in lengths], lengths)

    def stacked_forward(self, ids: list[int], stacked: StackedCaches, n_logits: int) -> torch.Tensor:
        """Logits ``[rows, n_logits, vocab]`` of ``ids`` run after every row of ``stacked``
        in one forward call, each row masked to its own positions; ``stacked`` is extended.
        A lone token runs with a copy after it, as in :meth:`forward`."""
        if len(ids) == 1:
            logits = self.stacked_forward(ids * 2, stacked, n_logits + 1)[:, :-1]
            crop(stacked.cache, stacked.cache.get_seq_length() - 1)
            stacked.lengths = [length - 1 for length in stacked.lengths]
            return logits
        rows, n = len(stacked.lengths), len(ids)
        mask = torch.ones(rows, stacked.cache.get_seq_length() + n, dtype=torch.long, device=self.device)
        for row, pad in enumerate(stacked.pads):
            mask[row, :pad] = 0
        positions = torch.tensor(stacked.lengths, device=self.device)[:, None] + torch.arange(n, device=self.device)
        logits = self.model(
            input_ids=torch.tensor([ids] * rows, device=self.device), attention_mask=mask,
            position_ids=positions, cache=stacked.cache, use_cache=True, logits_to_keep=n_logits,
        ).logits
        stacked.lengths = [length + n for length in stacked.lengths]
        return logits


@dataclass
class StackedCaches:
    """Several conditions' KV caches as one batch (row order kept): ``cache`` holds row i
    after ``pads[i]`` masked positions; ``lengths[i]`` is the row's own length, the
    position of its next token."""

    cache: Cache
    pads: list[int]
    lengths: list[int]
