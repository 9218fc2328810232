"""Attribution quality (the paper's section 8.2): is the chunk the detector returns as a
grounded sentence's support really its support?

For every grounded sentence (label 0) with a support chunk (:func:`features.support_chunk`
on its cached drops, the detector's own rule) three chunks of the same case are put to a
judge: the ``detector``'s, a ``random`` one (uniform over all the case's chunks, seeded; it
may be the detector's, as chance would have it) and the ``lexical`` one (the most words in
common, by :func:`groundsense.lexical.overlap`; the first on ties). :func:`attribution_pairs` writes the rows to rate;
the judge fills ``rating`` with one of :data:`SCALE`; :func:`attribution_summary` reads the
ratings table (columns :data:`RATING_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from groundsense.features import support_chunk
from groundsense.lexical import overlap

from ..data.cases import Case
from .rating_scale import SCALE

if TYPE_CHECKING:  # the scorer loads torch: the report reads ratings without it
    from groundsense.scorer import Scorer

WHICH = ("detector", "random", "lexical")
SUPPORTED = ("full", "partial")
RATING_COLUMNS = ["case_id", "sentence_index", "which", "chunk", "rating"]
_ORDINAL = {"contradicts": 0, "none": 1, "partial": 2, "full": 3}


def case_chunks(cases: Sequence[Case], scorer: Scorer, config: Mapping) -> dict[str, list[str]]:
    """Each case's chunk texts exactly as the detector scored them (same evidence cut and
    chunking: :func:`evidence.build_evidence` with the feature set's ``k`` and context cap)."""
    from groundsense.inputs import build_evidence

    chunks = {}
    for case in cases:
        evidence = build_evidence(scorer, case.context, case.passages, config["k"], config["max_context_tokens"])
        chunks[case.id] = [c.content.of(evidence.context) for c in evidence.chunks]
    return chunks


def attribution_pairs(table: pd.DataFrame, chunks: Mapping[str, list[str]], seed: int = 0) -> pd.DataFrame:
    """Rows to rate: per grounded sentence with a support chunk, one row per :data:`WHICH`
    with ``case_id, sentence_index, which, chunk, sentence, chunk_text``.

    ``table`` is a feature table (``label``, ``sentence``, ``drops``); ``chunks`` maps each
    case id to its chunk texts (:func:`case_chunks`), whose count must match the cached drops.
    """
    rng = np.random.default_rng(seed)
    rows = []
    grounded = table[table["label"] == 0].sort_values(["case_id", "sentence_index"])
    for row in grounded.itertuples(index=False):
        texts = chunks[row.case_id]
        if len(texts) != len(row.drops):
            raise ValueError(f"{row.case_id}: {len(texts)} chunks rebuilt but {len(row.drops)} scored; "
                             "rebuild them with the feature set's scorer, K and context cap")
        detector = support_chunk(np.asarray(row.drops, dtype=float))
        if detector is None:
            continue
        random = int(rng.integers(len(texts)))
        lexical = int(np.argmax(overlap(row.sentence, texts)))  # a chunk supports the sentence: there are chunks
        picks = {"detector": detector, "random": random, "lexical": lexical}
        rows += [{"case_id": row.case_id, "sentence_index": int(row.sentence_index), "which": which, "chunk": chunk,
                  "sentence": row.sentence, "chunk_text": texts[chunk]} for which, chunk in picks.items()]
    return pd.DataFrame(rows, columns=["case_id", "sentence_index", "which", "chunk", "sentence", "chunk_text"])


@dataclass
class AttributionSummary:
    rates: pd.DataFrame  # per ``which``: n, supported (full or partial), full, contradicts rates
    tests: pd.DataFrame  # detector against each other pick: paired Wilcoxon on the ordinal ratings


def attribution_summary(ratings: pd.DataFrame) -> AttributionSummary:
    """Supported rate of each pick and paired Wilcoxon signed-rank tests of the detector's
    ratings against the random and lexical picks' (ordinal: contradicts < none < partial <
    full; pairs with equal ratings are dropped, as in Wilcoxon's original test)."""
    missing = [c for c in RATING_COLUMNS if c not in ratings.columns]
    if missing:
        raise ValueError(f"the ratings table lacks the columns {missing}")
    unknown = set(ratings["rating"]) - set(SCALE)
    if unknown:
        raise ValueError(f"unknown ratings {sorted(unknown)}: use one of {', '.join(SCALE)}")
    rating = ratings["rating"]
    rates = (
        ratings.assign(supported=rating.isin(SUPPORTED), full=rating == "full", contradicts=rating == "contradicts")
        .groupby("which")
        .agg(n=("rating", "size"), supported=("supported", "mean"), full=("full", "mean"),
             contradicts=("contradicts", "mean"))
        .reindex([w for w in WHICH if w in set(ratings["which"])])
    )
    wide = ratings.assign(score=rating.map(_ORDINAL)).pivot_table(
        index=["case_id", "sentence_index"], columns="which", values="score", aggfunc="first"
    )
    tests = {}
    for other in ("random", "lexical"):
        if "detector" not in wide or other not in wide:
            continue
        pairs = wide[["detector", other]].dropna()
        diff = pairs["detector"] - pairs[other]
        p = float(wilcoxon(pairs["detector"], pairs[other]).pvalue) if (diff != 0).any() else float("nan")
        tests[f"detector vs {other}"] = {
            "pairs": len(pairs), "detector better": int((diff > 0).sum()), "other better": int((diff < 0).sum()),
            "mean difference": float(diff.mean()) if len(diff) else float("nan"), "p": p,
        }
    return AttributionSummary(rates, pd.DataFrame.from_dict(tests, orient="index"))
