"""Operations on a model's KV cache (a transformers ``DynamicCache``)."""

from __future__ import annotations

from copy import deepcopy
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import Cache


def crop(cache: Cache, length: int) -> None:
    """Keep the first ``length`` positions of a KV cache."""
    cache.crop(length - cache.get_seq_length())


def cropped_copy(cache: Cache, length: int) -> Cache:
    """A copy of a KV cache's first ``length`` positions that copies only those: a plain
    deepcopy would copy each tensor's whole storage, a cut-back answer tail's included."""
    from transformers.cache_utils import CacheLayerMixin

    cropped = {
        id(tensor): tensor[..., :length, :].clone()
        for layer in cache.layers
        if isinstance(layer, CacheLayerMixin) and layer.is_initialized
        for tensor in (layer.keys, layer.values)
        if tensor is not None
    }
    return deepcopy(cache, memo=cropped)


def cache_bytes(cache: Cache) -> int:
    from transformers.cache_utils import CacheLayerMixin

    layers = [layer for layer in cache.layers if isinstance(layer, CacheLayerMixin)]
    return sum(t.nbytes for layer in layers for t in (layer.keys, layer.values) if t is not None)


def compact(cache: Cache) -> None:
    """Give every layer storage of its own size: a cache cut back after an answer's tail is
    a view that still holds the tail's storage, so a kept cache would take more memory than
    :func:`cache_bytes` counts."""
    for layer in cache.layers:
        for part in ("keys", "values"):
            tensor = getattr(layer, part)
            if tensor.untyped_storage().nbytes() > tensor.nbytes:
                setattr(layer, part, tensor.clone())
