"""Long evidence as retrieval returns it: a case's passages with other sources' passages added
as distractors until the evidence holds about a target number of scorer tokens."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import replace

from .cases import Case


def with_distractors(case: Case, pool: Sequence[tuple[str, str]], count_tokens: Callable[[str], int],
                     target: int, seed: int = 0) -> Case:
    """``case`` with passages of ``pool`` (``(source id, passage)`` pairs; those of the case's own
    source are skipped) inserted at seeded random positions until its passages hold at least
    ``target`` tokens by ``count_tokens``, or the pool runs out. The labels stay the case's: a
    distractor supports nothing the answer says. ``meta["distractors"]`` counts those added."""
    if case.passages is None:
        raise ValueError(f"case {case.id}: distractors are added to passages, and it has one context")
    rng = random.Random(f"{seed}:{case.id}")
    candidates = [text for source, text in pool if source != case.source_id]
    rng.shuffle(candidates)
    passages = list(case.passages)
    tokens = sum(count_tokens(p) for p in passages)
    added = 0
    for text in candidates:
        if tokens >= target:
            break
        passages.insert(rng.randint(0, len(passages)), text)
        tokens += count_tokens(text)
        added += 1
    return replace(case, passages=passages, meta={**case.meta, "distractors": str(added)})
