"""Synthetic evaluation inputs: a sentence table whose grounding features carry signal, and
cached feature sets built from it."""

import numpy as np
import pandas as pd

from groundsense.features import GROUNDING
from groundsense_eval.caches.extract import FeatureSet

CONFIG = {"scorer": "tiny", "k": 5, "mode": "full", "max_context_tokens": 1800, "max_answer_tokens": 256,
          "precision": "fp32", "n_parameters": 1_000_000}


def feature_set(benchmark: str, seed: int, mode: str = "full") -> FeatureSet:
    """A synthetic cached feature set: every answer has 3 chunks, 100 prompt tokens and took 2 s."""
    rows = synthetic_table(n_cases=150, seed=seed).assign(
        benchmark=benchmark, status="scored", error=None, seconds=2.0,
        tokens_processed=250, prompt_tokens=100, n_chunks=3,
    )
    rows["sentence_index"] = rows.groupby("case_id").cumcount()
    return FeatureSet(benchmark, {**CONFIG, "mode": mode}, f"tiny__{mode}-k5-0000", rows)


def synthetic_table(n_cases=240, seed=0):
    """Sentences whose grounding features carry signal (low when unsupported) and baselines none."""
    rng = np.random.default_rng(seed)
    rows = []
    for case in range(n_cases):
        for k in range(rng.integers(2, 6)):
            label = int(rng.random() < 0.2)
            rows.append({
                "case_id": f"c{case}", "source_id": f"s{case // 3}", "task": ["QA", "Summary"][case % 2],
                "benchmark": "synthetic", "sentence": "x", "start": 0, "end": 1, "label": label,
                "type": (["baseless", "conflict"][k % 2] if label else None),
                **{f: rng.normal() - 1.0 * label for f in GROUNDING},
                "surprisal": rng.normal(), "n_tokens": int(rng.integers(5, 30)),
            })
    return pd.DataFrame(rows)
