"""Reading the verifier score cache (format: docs/verifier-cache.md) and joining it to features.

``<root>/<benchmark>/<verifier-key>/config.json`` and ``part-NNNNN.parquet``: one row per
labelled sentence with ``case_id, sentence_index, score`` (higher = more likely unsupported),
``seconds``, ``gflops``, ``status``, ``error``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .store import read_parts

KEY = ["case_id", "sentence_index"]
REQUIRED = ["case_id", "sentence_index", "score", "seconds", "gflops", "status"]


def load_verifier_cache(root: str | Path, benchmark: str) -> dict[str, pd.DataFrame]:
    """Every verifier's rows for ``benchmark``, by verifier key; ``frame.attrs["config"]``
    holds its config.json. Folders without rows are left out."""
    caches = {}
    for config_file in sorted((Path(root) / benchmark).glob("*/config.json")):
        rows = read_parts(config_file.parent)
        if not len(rows):
            continue
        missing = [c for c in REQUIRED if c not in rows.columns]
        if missing:
            raise ValueError(f"{config_file.parent}: verifier scores lack the columns {missing}")
        rows.attrs["config"] = json.loads(config_file.read_text())
        caches[config_file.parent.name] = rows
    return caches


def scored(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with ``status == "scored"`` and a finite score, one per sentence."""
    keep = (rows["status"] == "scored") & np.isfinite(rows["score"].astype(float))
    return rows.loc[keep, KEY + ["score", "seconds", "gflops"]].astype({"sentence_index": "Int32"})


def join_scores(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``table`` restricted to the sentences the verifier scored, with its ``verifier``,
    ``verifier_seconds`` and ``verifier_gflops`` columns (order of ``table`` kept)."""
    right = scored(rows).rename(columns={"score": "verifier", "seconds": "verifier_seconds", "gflops": "verifier_gflops"})
    left = table.astype({"sentence_index": "Int32"})
    return left.merge(right, on=KEY, how="inner", validate="one_to_one").reset_index(drop=True)
