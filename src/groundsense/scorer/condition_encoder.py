"""Each condition's KV cache up to the prompt's last token: the condition's evidence (the
full context, none, or the context without some chunks), then the lead (the question and
template).

The evidence parts share prefixes: the full context is encoded once, and an ablated
evidence starts from a copy of an encoding that keeps the same leading chunks, cut back to
where they part, and encodes only the chunks after it. The caches are kept in the
:class:`EvidenceCache` when they fit its budget, so that a later answer over the same
evidence encodes only its own tokens (and the question, when it changed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from .evidence_cache import EvidenceCache, KeptEvidence, Lease, evidence_key
from .kv import cache_bytes, compact, crop, cropped_copy
from .passes import ModelPasses

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from transformers import Cache

T = TypeVar("T")


def agreement(mask: Sequence[bool], keep: Sequence[bool]) -> int:
    """How many leading chunks two chunk masks agree on."""
    return next((j for j, (a, b) in enumerate(zip(mask, keep)) if a != b), len(keep))


class ConditionEncoder:
    """Builds the conditions' caches with ``passes``, reusing and keeping encodings in ``kept``.

    Condition rows are those of :class:`TokenScores`: row 0 the full context, row 1 no
    context, row ``2 + k`` the context without chunk ``k``.
    """

    def __init__(self, passes: ModelPasses, kept: EvidenceCache) -> None:
        self.passes, self.kept = passes, kept

    def lease(self, prefix: list[int], chunks: list[list[int]]) -> AbstractContextManager[Lease]:
        """The kept-evidence lease of this evidence (see :meth:`EvidenceCache.lease`)."""
        return self.kept.lease(evidence_key(prefix, chunks))

    def caches(
        self, lease: Lease, prefix: list[int], chunks: list[list[int]], rows: int, lead: tuple[int, ...]
    ) -> tuple[list[Cache], int]:
        """A cache of its own for each of the first ``rows`` conditions, and the tokens
        encoded for them. They come from the lease's entry (its lead re-encoded when the
        question changed), or are encoded and put in the lease when they fit the budget."""
        found = self._reuse(lease, rows, lead)
        if found is None:
            full, keep = self._encode_evidence(lease, prefix, chunks, rows, lead)
            found = self._copies(lease, full, prefix, chunks, rows, lead, keep)
        return found

    def each(
        self, prefix: list[int], chunks: list[list[int]], rows: int, lead: tuple[int, ...],
        run: Callable[[int, Cache], T],
    ) -> tuple[list[T], int]:
        """``run(row, cache)`` for each of the first ``rows`` conditions, row 0 first; the
        results by row and the tokens encoded. ``cache`` is the row's cache, valid during the
        call, which ``run`` leaves as it found it. When the caches are not kept (they do not
        fit the budget), one cache serves every row in turn (:meth:`_in_place`)."""
        with self.lease(prefix, chunks) as lease:
            found = self._reuse(lease, rows, lead)
            if found is None:
                full, keep = self._encode_evidence(lease, prefix, chunks, rows, lead)
                if not keep:
                    return self._in_place(full, prefix, chunks, rows, lead, run)
                found = self._copies(lease, full, prefix, chunks, rows, lead, keep)
            caches, encoded = found
            results = []
            for row, cache in enumerate(caches):
                results.append(run(row, cache))
                compact(cache)  # kept: the storage of what ran over it freed now, not at the commit
            return results, encoded

    def ablated(
        self, sources: dict[tuple[bool, ...], Cache], chunks: list[list[int]], prefix: int, keep: list[bool]
    ) -> tuple[Cache, int]:
        """The cache of the evidence with only the chunks marked in ``keep`` (at least one
        left out), built from the encoding in ``sources`` (caches by the chunks they keep: the
        full evidence's, ablations') whose chunk mask agrees with ``keep`` longest: a copy of
        it cut back to the first chunk where the two differ, then the kept chunks from there
        encoded. ``prefix``: the tokens before the first chunk. Returns the cache and the
        tokens encoded."""
        source = max(sources, key=lambda mask: agreement(mask, keep))
        split = agreement(source, keep)
        length = prefix + sum(len(c) for c, kept in zip(chunks[:split], keep[:split]) if kept)
        cache = cropped_copy(sources[source], length)
        rest = list(chain.from_iterable(c for c, kept in zip(chunks[split:], keep[split:]) if kept))
        self.passes.encode(rest, cache)
        return cache, len(rest)

    def _reuse(self, lease: Lease, rows: int, lead: tuple[int, ...]) -> tuple[list[Cache], int] | None:
        """The kept caches of the first ``rows`` conditions, with ``lead`` after their
        evidence, and the tokens encoded for that; None when fewer are kept."""
        kept = lease.entry
        if kept is None or len(kept.caches) < rows:
            return None
        caches = kept.caches[:rows]
        if kept.lead == lead:
            return caches, 0
        for cache, length in zip(caches, kept.lengths):
            crop(cache, length)
            self.passes.encode(list(lead), cache)
        if rows < len(kept.caches):
            lease.keep = False  # its other caches still hold the old question
        else:
            kept.lead = lead
        return caches, rows * len(lead)

    def _encode_evidence(
        self, lease: Lease, prefix: list[int], chunks: list[list[int]], rows: int, lead: tuple[int, ...]
    ) -> tuple[Cache, bool]:
        """The full evidence's cache, and whether the first ``rows`` conditions' caches fit the
        budget (room made for them if so)."""
        full_ids = prefix + list(chain.from_iterable(chunks))
        full = self.passes.encode(full_ids, None)
        needed = cache_bytes(full) / max(len(full_ids), 1) * (sum(_lengths(prefix, chunks, rows)) + rows * len(lead))
        return full, self.kept.make_room(lease, needed)

    def _copies(
        self, lease: Lease, full: Cache, prefix: list[int], chunks: list[list[int]], rows: int, lead: tuple[int, ...],
        keep: bool,
    ) -> tuple[list[Cache], int]:
        """The conditions' caches, the full evidence's cache ``full`` the first and the others
        built from it, with the lead encoded after each; put in the lease when ``keep``."""
        caches: list[Cache] = []
        encoded = len(prefix) + sum(map(len, chunks))
        for row in range(rows):
            if row == 0:
                cache = full
            else:  # row 1: no chunk; row 2 + k: every chunk but k
                mask = [row != 1 and k != row - 2 for k in range(len(chunks))]
                cache, ablated = self.ablated({(True,) * len(chunks): full}, chunks, len(prefix), mask)
                encoded += ablated
            self.passes.encode(list(lead), cache)
            caches.append(cache)
            encoded += len(lead)
        if keep:
            lease.entry = KeptEvidence(caches, _lengths(prefix, chunks, rows), lead)
        return caches, encoded

    def _in_place(
        self, cache: Cache, prefix: list[int], chunks: list[list[int]], rows: int, lead: tuple[int, ...],
        run: Callable[[int, Cache], T],
    ) -> tuple[list[T], int]:
        """:meth:`each` on one cache, ``cache`` (the full evidence's), when none is kept: the
        full evidence first, then the leave-one-out rows from the last chunk back (the
        evidence before chunk k is a prefix of every later chunk's row, so each row cuts the
        cache back to its chunk's start and encodes the chunks after it), the no-context row
        last. The same tokens are encoded as with copies, but one cache is in memory instead
        of two."""
        ends = np.cumsum([len(prefix)] + [len(c) for c in chunks])
        results: list = [None] * rows
        encoded = int(ends[-1])  # the full evidence, for row 0
        for row in [0, *(2 + k for k in reversed(range(rows - 2))), *([1] if rows > 1 else [])]:
            if row > 0:
                crop(cache, int(ends[0]) if row == 1 else int(ends[row - 2]))
                rest = [] if row == 1 else list(chain.from_iterable(chunks[row - 1 :]))
                self.passes.encode(rest, cache)
                encoded += len(rest)
            self.passes.encode(list(lead), cache)
            encoded += len(lead)
            results[row] = run(row, cache)
        return results, encoded


def _lengths(prefix: list[int], chunks: list[list[int]], rows: int) -> list[int]:
    """The evidence tokens of the first ``rows`` conditions."""
    full = len(prefix) + sum(map(len, chunks))
    return ([full, len(prefix)] + [full - len(c) for c in chunks])[:rows]
