"""Reading the verifier score cache (format: docs/evaluation.md, "Verifier scores") and joining it
to features.

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
# Verifiers whose run stores more than one variant's score: variant -> the column it negates.
VARIANTS = {"contextcite": {"raw": "attribution_max", "per_token": "attribution_max_per_token"}}


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
        caches.update(other_variants(config_file.parent.name, rows))
    return caches


def other_variants(key: str, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The variants a run stored beside the one it scored (ContextCite: ``raw`` and
    ``per_token`` in one run), each as its own verifier ``<key>~<variant>``, its score the
    negated stored column as the run's own score is."""
    config = rows.attrs["config"]
    variants = {}
    for variant, column in VARIANTS.get(config.get("verifier"), {}).items():
        if variant != config.get("params", {}).get("variant", "raw") and column in rows.columns:
            other = rows.assign(score=-rows[column].astype(float))
            other.attrs["config"] = {**config, "params": {**config.get("params", {}), "variant": variant}}
            variants[f"{key}~{variant}"] = other
    return variants


def scored(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with ``status == "scored"`` and a finite score, one per sentence."""
    keep = (rows["status"] == "scored") & np.isfinite(rows["score"].astype(float))
    return rows.loc[keep, KEY + ["score", "seconds", "gflops"]].astype({"sentence_index": "Int32"})


def join_scores(table: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """``table`` restricted to the sentences the verifier scored, with its ``verifier``,
    ``verifier_seconds`` and ``verifier_gflops`` columns (order of ``table`` kept)."""
    right = scored(rows).rename(columns={"score": "verifier", "seconds": "verifier_seconds",
                                         "gflops": "verifier_gflops"})
    left = table.astype({"sentence_index": "Int32"})
    return left.merge(right, on=KEY, how="inner", validate="one_to_one").reset_index(drop=True)
