"""Synthetic hard negatives (issue #55): unsupported claims made from supported ones without
lowering their word overlap with the evidence, so that a verifier trained on them cannot lean on
overlap. Two recipes, each a pure function of its inputs and a seeded random generator:

- **negate**: a negation is added to the sentence's first auxiliary verb (or removed from it), or
  its first comparison word is flipped (``more`` to ``less``, ``before`` to ``after``);
- **delete** (MiniCheck's D2C idea): the sentence is kept and the evidence sentence that supports
  it is removed, where exactly one evidence sentence shares most of its words.

Each returns a :class:`HardNegative` that records how it was made, or None where the recipe does
not apply to the sentence. A supported sentence's text is its input; the label of what comes out is
"unsupported". How often that label is wrong is measured on a sample (docs/detector-selection.md,
"A trained verifier"). A third recipe, swapping a number or a name for another the evidence holds,
was dropped on that measure (td-1: 8 of 23 read wrong, mostly list markers such as "1." taken for
a claim's number).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from groundsense import segment_sentences
from groundsense.lexical import overlap

RECIPES = ("negate", "delete")

# An auxiliary verb not in a contraction ("can't", "did n't"): those are left alone.
_AUXILIARY = re.compile(r"\b(is|are|was|were|has|have|had|can|could|will|would|should|does|did|do|may|must)"
                        r"( not)?\b(?!['’]| n['’]t)")
_FLIPS = {"more": "less", "less": "more", "higher": "lower", "lower": "higher", "increase": "decrease",
          "decrease": "increase", "increased": "decreased", "decreased": "increased", "before": "after",
          "after": "before", "above": "below", "below": "above", "larger": "smaller", "smaller": "larger",
          "greater": "smaller", "most": "least", "least": "most", "earlier": "later", "later": "earlier",
          "first": "last", "last": "first", "maximum": "minimum", "minimum": "maximum"}
_FLIP = re.compile(r"\b(" + "|".join(_FLIPS) + r")\b", re.IGNORECASE)
# delete: the supporting evidence sentence shares at least this share of the claim's words, and no
# other evidence sentence shares as much (else the claim would keep its support).
SUPPORT_OVERLAP = 0.6


@dataclass(frozen=True)
class HardNegative:
    """An unsupported claim and the evidence it is judged against, with how it was made:
    ``recipe`` (one of :data:`RECIPES`), ``detail`` (``negate:add``, ``delete:support``, ...), and
    ``replaced``/``by``: the text taken out (of the sentence, or of the evidence for ``delete``)
    and what took its place."""

    sentence: str
    evidence: tuple[str, ...]
    recipe: str
    detail: str
    replaced: str
    by: str


def negate(sentence: str, evidence: tuple[str, ...], rng: np.random.Generator) -> HardNegative | None:
    """Flip the first comparison word, else add (or remove) a negation at the first auxiliary
    verb; which of the two, where both apply, is chosen at random. None where neither applies."""
    flip, auxiliary = _FLIP.search(sentence), _AUXILIARY.search(sentence)
    if flip and (auxiliary is None or rng.random() < 0.5):
        word = flip.group()
        new = _FLIPS[word.lower()]
        new = new.capitalize() if word[0].isupper() else new
        changed = sentence[: flip.start()] + new + sentence[flip.end():]
        return HardNegative(changed, evidence, "negate", "negate:flip", word, new)
    if auxiliary:
        verb, negated = auxiliary.group(1), auxiliary.group(2)
        new = verb if negated else f"{verb} not"
        changed = sentence[: auxiliary.start()] + new + sentence[auxiliary.end():]
        return HardNegative(changed, evidence, "negate", "negate:remove" if negated else "negate:add",
                            auxiliary.group(), new)
    return None


def delete(sentence: str, evidence: tuple[str, ...], rng: np.random.Generator) -> HardNegative | None:
    """Remove from ``evidence`` the one sentence that supports ``sentence``: the evidence sentence
    sharing at least :data:`SUPPORT_OVERLAP` of its words where every other shares less than that. None
    where no single evidence sentence stands out so (the claim could keep its support)."""
    pieces = [(i, piece) for i, text in enumerate(evidence) for piece in evidence_sentences(text)]
    if len(pieces) < 2:
        return None
    shares = overlap(sentence, [text for _, text in pieces])
    order = np.argsort(-shares, kind="stable")
    best, runner_up = shares[order[0]], shares[order[1]]
    if best < SUPPORT_OVERLAP or runner_up >= SUPPORT_OVERLAP:
        return None
    chunk, removed = pieces[int(order[0])]
    kept = list(evidence)
    kept[chunk] = re.sub(r"\s{2,}", " ", kept[chunk].replace(removed, "", 1)).strip()
    return HardNegative(sentence, tuple(kept), "delete", "delete:support", removed, "")


@lru_cache(maxsize=64)
def evidence_sentences(text: str) -> tuple[str, ...]:
    """``text``'s sentences; kept for the next sentences of the same answer, whose evidence is the same."""
    return tuple(text[s.start:s.end] for s in segment_sentences(text))


MAKERS = {"negate": negate, "delete": delete}


def hard_negative(sentence: str, evidence: tuple[str, ...], rng: np.random.Generator) -> HardNegative | None:
    """One hard negative of ``sentence``: the recipes tried in a random order, the first that
    applies kept (so each recipe is drawn where several apply, and any applies where one does)."""
    for recipe in rng.permutation(RECIPES):
        made = MAKERS[str(recipe)](sentence, evidence, rng)
        if made is not None:
            return made
    return None
