"""Attribution quality, step 2: a judge rates every row of ``pairs.parquet`` (does the chunk
support the sentence?) into ``ratings-<judge>.parquet`` beside it, resumably.

Columns: :data:`~.attribution.RATING_COLUMNS` (``case_id, sentence_index, which, chunk,
rating``), the four options' probabilities ``p_full, p_partial, p_none, p_contradicts``
(summing to 1), ``mass`` (their share of the judge's next-token distribution) and ``seconds``
(the wall time of the rows rated against one chunk text, shared equally among them).

``limit`` takes the first N rows of the pairs file (in its order: case, sentence, pick); rows
already in the ratings file are skipped. The rows to rate are grouped by chunk text, so each
text is encoded once for all its sentences, whichever answers they come from; the file is
rewritten atomically every ``every`` rows and when the run stops, so a kill loses at most
the rows rated since.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from groundsense.progress import track
from groundsense.verification import model_slug

from .attribution import RATING_COLUMNS
from .rater import SupportRater
from .rating_scale import SCALE
from .store import write_table

PAIR_COLUMNS = ["case_id", "sentence_index", "which", "chunk", "sentence", "chunk_text"]
KEY = ["case_id", "sentence_index", "which"]
PROBABILITY_COLUMNS = [f"p_{rating}" for rating in SCALE]
COLUMNS = RATING_COLUMNS + PROBABILITY_COLUMNS + ["mass", "seconds"]


@dataclass
class RatingSummary:
    """What one run did to a ratings file, in rows."""

    path: Path
    rated: int = 0
    skipped: int = 0  # already rated


def ratings_path(folder: Path, judge: str) -> Path:
    """``ratings-<judge>.parquet`` in the pairs' folder (the name the report looks for)."""
    return folder / f"ratings-{model_slug(judge)}.parquet"


def read_pairs(path: Path) -> pd.DataFrame:
    """The pairs file, checked for the columns a rater needs."""
    pairs = pd.read_parquet(path)
    missing = [c for c in PAIR_COLUMNS if c not in pairs.columns]
    if missing:
        raise ValueError(f"{path} lacks the columns {missing}: rewrite it with `groundsense eval attribution-pairs`")
    blank = pairs[~(pairs["sentence"].str.strip().astype(bool) & pairs["chunk_text"].str.strip().astype(bool))]
    if len(blank):
        first = blank.iloc[0]
        raise ValueError(f"{path}: {len(blank)} row(s) with a blank sentence or chunk, the first "
                         f"{first['case_id']} sentence {first['sentence_index']} ({first['which']}): "
                         "rewrite it with `groundsense eval attribution-pairs`")
    return pairs


def read_ratings(path: Path) -> pd.DataFrame:
    """The ratings written so far (none: an empty table with :data:`COLUMNS`)."""
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    ratings = pd.read_parquet(path)
    missing = [c for c in COLUMNS if c not in ratings.columns]
    if missing:
        raise ValueError(f"{path} lacks the columns {missing}: move it aside to rate again")
    return ratings


def rate_pairs(
    rater: SupportRater, pairs: pd.DataFrame, path: Path, limit: int | None = None, every: int = 200,
    progress: bool = True,
) -> RatingSummary:
    """Rate the first ``limit`` rows of ``pairs`` not yet in the ratings file at ``path``."""
    selected = pairs.iloc[:limit]
    done = read_ratings(path)
    rated = set(done[KEY].itertuples(index=False, name=None))
    pending = selected[[key not in rated for key in selected[KEY].itertuples(index=False, name=None)]]
    summary = RatingSummary(path, skipped=len(selected) - len(pending))
    groups = list(pending.groupby("chunk_text", sort=False))
    new: list[pd.DataFrame] = []
    try:
        for text, group in track(groups, f"Rating {len(pending)} pairs", enabled=progress):
            new.append(_rated(rater, text, group))
            summary.rated += len(group)
            if sum(map(len, new)) >= every:
                done, new = _save(path, done, new), []
    finally:  # an interrupt keeps the rows rated
        if new:
            _save(path, done, new)
    return summary


def _rated(rater: SupportRater, text: str, group: pd.DataFrame) -> pd.DataFrame:
    start = time.perf_counter()
    ratings = rater.rate(text, group["sentence"].tolist())
    rows = group[[c for c in RATING_COLUMNS if c != "rating"]].assign(rating=ratings.rating, mass=ratings.mass)
    rows[PROBABILITY_COLUMNS] = ratings.probabilities
    return rows.assign(seconds=(time.perf_counter() - start) / len(group))[COLUMNS]


def _save(path: Path, done: pd.DataFrame, new: list[pd.DataFrame]) -> pd.DataFrame:
    table = pd.concat([done, *new], ignore_index=True) if len(done) else pd.concat(new, ignore_index=True)
    write_table(path, table)
    return table
