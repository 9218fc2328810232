"""The lexical signals of a feature set's sentences, over the chunks the detector scored.

They need no model pass, only the cases' text and the scorer's tokenizer (to cut and chunk the
evidence exactly as the detector did: :func:`.attribution.case_chunks`), so they are computed
once per feature set and stored beside its parts as ``lexical.parquet``: one row per cached
sentence, keyed by ``case_id`` and ``sentence_index``, with the :data:`~groundsense.lexical.LEXICAL`
columns and ``absent`` (the terms :func:`~groundsense.lexical.absent_terms` lists, joined by
``"|"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from groundsense.lexical import LEXICAL, EvidenceWords, absent_terms, lexical_signals

from .extract import FeatureSet
from .store import write_table

LEXICAL_FILE = "lexical.parquet"
KEY = ["case_id", "sentence_index"]


def lexical_rows(sentences: pd.DataFrame, chunks: Mapping[str, list[str]]) -> pd.DataFrame:
    """The signals of each row of ``sentences`` (``case_id``, ``sentence_index``, ``sentence``)
    whose case ``chunks`` holds (case id -> chunk texts)."""
    rows = []
    for case_id, group in sentences.groupby("case_id", sort=True):
        if case_id not in chunks:
            continue
        evidence = EvidenceWords.of(chunks[str(case_id)])  # case ids are strings
        for index, sentence in zip(group["sentence_index"].tolist(), group["sentence"].tolist()):
            text = sentence or ""
            rows.append({"case_id": case_id, "sentence_index": int(index),
                         **lexical_signals(text, evidence), "absent": "|".join(absent_terms(text, evidence))})
    return pd.DataFrame(rows, columns=[*KEY, *LEXICAL, "absent"])


def lexical_path(features: FeatureSet) -> Path:
    """Where a cached feature set's lexical signals are stored."""
    if features.folder is None:
        raise ValueError(f"the {features.benchmark} feature set {features.key} is not cached: no lexical signals")
    return features.folder / LEXICAL_FILE


def write_lexical(path: Path, rows: pd.DataFrame) -> Path:
    return write_table(path, rows.sort_values(KEY, ignore_index=True))


def lexical_columns(features: FeatureSet, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (rows of ``features``) with the lexical signals joined on where they are stored,
    as it is where they are not (or where the set is not cached)."""
    if features.folder is None or not lexical_path(features).exists():
        return table
    return with_lexical(table, lexical_path(features))


def with_lexical(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``table`` (a feature set's rows) with its sentences' lexical signals joined on; an error
    that says how to compute them when they are missing."""
    command = f"groundsense eval lexical {path.parent.parent.name} --cache {path.parent.parent.parent}"
    if not path.exists():
        raise FileNotFoundError(f"no lexical signals at {path}: compute them with `{command}`")
    signals = pd.read_parquet(path)
    joined = table.merge(signals, on=KEY, how="left", validate="one_to_one")
    missing = joined[list(LEXICAL)].isna().any(axis=1).sum()
    if missing:  # a stored file is kept as it is unless forced, so a set scored further needs --force
        raise ValueError(f"{path} lacks the signals of {missing} of {len(table)} sentences (stored before the set's "
                         f"last answers were scored?): compute them again with `{command} --force`")
    return joined
