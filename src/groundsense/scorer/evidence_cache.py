"""Encoded evidences kept for later answers over the same evidence: an LRU of KV caches
within a byte budget, keyed by the evidence's token ids.

An entry is used through :meth:`EvidenceCache.lease`: the work inside may reuse, change or
replace it, and leaving the block commits what the lease holds (compacted, as the newest
entry, older entries evicted to fit the budget). Work that raises leaves nothing
half-updated behind: the entry is dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .kv import cache_bytes, compact

if TYPE_CHECKING:
    from transformers import Cache


def evidence_key(prefix: list[int], chunks: list[list[int]]) -> tuple:
    """The key of an evidence: the prompt's opening and chunk token ids."""
    return tuple(prefix), tuple(map(tuple, chunks))


@dataclass
class Ablation:
    """The cache of an ablated evidence (``length`` tokens) followed by ``lead``, the
    question it was last used with."""

    cache: Cache
    length: int
    lead: tuple[int, ...]


@dataclass
class KeptEvidence:
    """One evidence's encoded conditions: each cache holds its condition's evidence
    (``lengths`` tokens) followed by ``lead``, the last question seen. ``subsets`` holds
    ablations of the evidence (by chunk mask) kept for the verifiers."""

    caches: list[Cache]
    lengths: list[int]
    lead: tuple[int, ...]
    subsets: dict[tuple[bool, ...], Ablation] = field(default_factory=dict)

    def all_caches(self) -> list[Cache]:
        return [*self.caches, *(ablation.cache for ablation in self.subsets.values())]


@dataclass
class Lease:
    """The entry under ``key`` while it is in use (None: nothing kept). On commit, ``entry``
    is kept unless ``keep`` was turned off."""

    key: tuple
    entry: KeptEvidence | None
    keep: bool = True


class EvidenceCache:
    """Kept evidences, least recently used first, within ``budget_bytes`` of KV caches
    (0 keeps none). The newest entry stays even when it alone exceeds the budget."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[tuple, KeptEvidence] = OrderedDict()

    def __iter__(self) -> Iterator[tuple]:
        """The keys, least recently used first."""
        return iter(list(self._entries))

    def get(self, key: tuple) -> KeptEvidence | None:
        return self._entries.get(key)

    def clear(self) -> None:
        self._entries.clear()

    def nbytes(self) -> int:
        return sum(cache_bytes(c) for kept in self._entries.values() for c in kept.all_caches())

    @contextmanager
    def lease(self, key: tuple) -> Iterator[Lease]:
        """The entry under ``key`` for the block's work; committed when the block ends, dropped
        when it raises."""
        lease = Lease(key, self._entries.get(key))
        try:
            yield lease
        except BaseException:
            self._entries.pop(key, None)
            raise
        self._commit(lease)

    def make_room(self, lease: Lease, needed: float) -> bool:
        """Whether an entry of ``needed`` bytes fits the budget. If it does, the lease's old
        entry and then the oldest ones are evicted until it fits beside the rest, so that the
        old and the new caches never exceed the budget together."""
        if needed > self.budget_bytes:
            return False
        self._entries.pop(lease.key, None)
        lease.entry = None
        while self._entries and self.nbytes() + needed > self.budget_bytes:
            self._entries.popitem(last=False)
        return True

    def _commit(self, lease: Lease) -> None:
        """Keep the lease's entry as the newest, older entries evicted until the budget holds
        (or one is left), then the entry's own ablations, the latest first."""
        if lease.entry is None or not lease.keep:
            self._entries.pop(lease.key, None)
            return
        for cache in lease.entry.all_caches():
            compact(cache)  # without the storage of answer tails run over it
        self._entries[lease.key] = lease.entry
        self._entries.move_to_end(lease.key)
        while len(self._entries) > 1 and self.nbytes() > self.budget_bytes:
            self._entries.popitem(last=False)
        while lease.entry.subsets and self.nbytes() > self.budget_bytes:
            lease.entry.subsets.popitem()
