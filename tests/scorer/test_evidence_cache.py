"""The kept-evidence LRU, its leases and the KV cache operations under them, on caches made
by hand (no model)."""

import pytest
import torch
from transformers import DynamicCache

from groundsense.scorer.evidence_cache import Ablation, EvidenceCache, KeptEvidence
from groundsense.scorer.kv import cache_bytes, crop, cropped_copy


def make_cache(positions: int) -> DynamicCache:
    cache = DynamicCache()
    for layer in range(2):
        cache.update(torch.randn(1, 2, positions, 4), torch.randn(1, 2, positions, 4), layer)
    return cache


def storage(cache) -> int:
    return sum(t.untyped_storage().nbytes() for layer in cache.layers for t in (layer.keys, layer.values))


def entry(positions: int) -> KeptEvidence:
    return KeptEvidence([make_cache(positions)], [positions], ())


POSITION = cache_bytes(make_cache(1))


def filled(budget_positions: int, *keys: str) -> EvidenceCache:
    kept = EvidenceCache(budget_positions * POSITION)
    for key in keys:
        with kept.lease(key) as lease:
            assert lease.entry is None
            lease.entry = entry(10)
    return kept


def test_a_lease_commits_its_entry_as_the_newest():
    kept = filled(100, "a", "b", "c")
    with kept.lease("a") as lease:
        assert lease.entry is kept.get("a")
    assert list(kept) == ["b", "c", "a"]
    assert kept.nbytes() == 30 * POSITION


def test_older_entries_are_evicted_to_fit_the_budget_and_the_newest_stays():
    kept = filled(25, "a", "b", "c")
    assert list(kept) == ["b", "c"]
    with kept.lease("d") as lease:
        lease.entry = entry(40)  # over the budget on its own
    assert list(kept) == ["d"]


def test_work_that_raises_leaves_nothing_half_updated():
    kept = filled(100, "a", "b")
    with pytest.raises(RuntimeError):
        with kept.lease("a") as lease:
            crop(lease.entry.caches[0], 5)
            raise RuntimeError("cancelled")
    with pytest.raises(RuntimeError):
        with kept.lease("c") as lease:
            lease.entry = entry(10)
            raise RuntimeError("cancelled")
    assert list(kept) == ["b"]


def test_a_lease_that_stops_keeping_its_entry_drops_it():
    kept = filled(100, "a", "b")
    with kept.lease("a") as lease:
        lease.keep = False
    assert list(kept) == ["b"]


def test_room_is_made_before_a_new_entry_is_built():
    kept = filled(30, "a", "b", "c")
    with kept.lease("b") as lease:
        assert not kept.make_room(lease, 31 * POSITION)  # never fits: nothing evicted
        assert list(kept) == ["a", "b", "c"] and lease.entry is kept.get("b")
        assert kept.make_room(lease, 15 * POSITION)
        assert lease.entry is None and list(kept) == ["c"]  # the old "b", then the oldest
        lease.entry = entry(15)
    assert list(kept) == ["c", "b"]


def test_a_committed_entry_holds_no_storage_beyond_what_it_counts():
    cache = make_cache(20)
    crop(cache, 12)  # a view into the 20-position storage, as after an answer's tail
    kept = EvidenceCache(100 * POSITION)
    with kept.lease("a") as lease:
        lease.entry = KeptEvidence([cache], [12], ())
    assert storage(cache) == cache_bytes(cache) == kept.nbytes() == 12 * POSITION


def test_an_entry_over_the_budget_drops_its_own_ablations_the_latest_first():
    kept = EvidenceCache(30 * POSITION)
    with kept.lease("a") as lease:
        lease.entry = entry(10)
        for mask in ((False, True), (True, False), (False, False)):
            lease.entry.subsets[mask] = Ablation(make_cache(8), 8, ())
    assert list(kept.get("a").subsets) == [(False, True), (True, False)]
    assert kept.nbytes() == 26 * POSITION


def test_a_cropped_copy_holds_only_the_positions_it_keeps():
    """The copy of a cache cut back after an answer's tail does not carry the tail's storage,
    and the source is left as it was."""
    cache = make_cache(10)
    crop(cache, 7)
    copy = cropped_copy(cache, 4)
    assert copy.get_seq_length() == 4 and cache.get_seq_length() == 7
    for kept, source in zip(copy.layers, cache.layers):
        for part in ("keys", "values"):
            tensor = getattr(kept, part)
            assert tensor.untyped_storage().nbytes() == tensor.nbytes
            assert torch.equal(tensor, getattr(source, part)[..., :4, :])
