"""Operations on a model's KV cache (a transformers ``DynamicCache``)."""

from __future__ import annotations

from copy import deepcopy


def crop(cache, length: int) -> None:
    """Keep the first ``length`` positions of a KV cache."""
    cache.crop(length - cache.get_seq_length())


def cropped_copy(cache, length: int):
    """A copy of a KV cache's first ``length`` positions that copies only those: a plain
    deepcopy would copy each tensor's whole storage, a cut-back answer tail's included."""
    cropped = {
        id(tensor): tensor[..., :length, :].clone()
        for layer in cache.layers
        if layer.is_initialized
        for tensor in (layer.keys, layer.values)
    }
    return deepcopy(cache, memo=cropped)


def cache_bytes(cache) -> int:
    return sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))


def compact(cache) -> None:
    """Give every layer storage of its own size: a cache cut back after an answer's tail is
    a view that still holds the tail's storage, so a kept cache would take more memory than
    :func:`cache_bytes` counts."""
    for layer in cache.layers:
        for part in ("keys", "values"):
            tensor = getattr(layer, part)
            if tensor.untyped_storage().nbytes() > tensor.nbytes:
                setattr(layer, part, tensor.clone())
