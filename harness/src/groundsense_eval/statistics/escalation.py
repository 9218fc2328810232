"""The cascade offline: the detector ranks every test sentence, the top fraction is escalated
to the verifier (:func:`groundsense.verification.cascade.escalation_mask`, the rule the
:class:`~groundsense.verification.cascade.Cascade` wrapper applies), and AUC and compute are compared with
the verifier alone.

Ranking: escalated sentences come first, ordered by the verifier's score; the rest follow in
the detector's order. So escalating nothing is the detector alone, and everything the
verifier alone. Compute per sentence = the detector's cost on every sentence (the feature
set's Table 9 mean) + the verifier's measured cost of the escalated sentences, over all
sentences.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from groundsense.verification import escalation_mask

from .bootstrap import source_bootstrap
from .compare import VerifierComparison

RATES = (0.05, 0.10, 0.20, 0.50)


def cascade_scores(detector: np.ndarray, verifier: np.ndarray, escalated: np.ndarray) -> np.ndarray:
    """One ranking: escalated sentences above the rest, each group in its own scorer's order."""
    detector_rank = rankdata(detector) / (len(detector) + 1)  # in (0, 1)
    verifier_rank = rankdata(verifier) / (len(verifier) + 1)
    return np.where(escalated, 1.0 + verifier_rank, detector_rank)


def cascade_table(
    comparison: VerifierComparison,
    detector: str,
    cost: pd.DataFrame,
    rates: tuple[float, ...] = RATES,
    seed: int = 0,
    n_resamples: int = 2000,
) -> pd.DataFrame:
    """Per escalation rate (0 = the detector alone; then ``rates``) and for the verifier
    alone: span AUC with its interval, the paired difference to the verifier alone, and
    GFLOPs and seconds per sentence. ``cost`` is the feature set's cost table (Table 9)."""
    test = comparison.test
    suspicion = comparison.detector_scores[detector]
    verifier = test["verifier"].to_numpy(dtype=float)
    v_gflops, v_seconds = (test[c].to_numpy(dtype=float) for c in ("verifier_gflops", "verifier_seconds"))
    d_gflops, d_seconds = map(float, cost.loc[detector, ["gflops", "seconds"]].to_numpy(dtype=float))
    scores, rows = {}, {}
    for rate in (0.0, *rates):
        mask = escalation_mask(suspicion, rate)
        name = f"{detector} alone" if rate == 0 else f"escalate {rate:.0%}"
        scores[name] = cascade_scores(suspicion, verifier, mask)
        rows[name] = {"escalated": float(mask.mean()), "gflops": d_gflops + v_gflops[mask].sum() / len(mask),
                      "seconds": d_seconds + v_seconds[mask].sum() / len(mask)}
    scores["verifier alone"] = verifier
    rows["verifier alone"] = {"escalated": 1.0, "gflops": float(v_gflops.mean()), "seconds": float(v_seconds.mean())}
    result = source_bootstrap(test["label"].to_numpy(), scores, test["source_id"].to_numpy(), n_resamples, seed)
    table = result.intervals().join(pd.DataFrame.from_dict(rows, orient="index"))
    diff = result.differences("verifier alone")[["diff", "lo", "hi"]]
    return table.join(diff.rename(columns={"diff": "Δ vs verifier", "lo": "Δ lo", "hi": "Δ hi"}))
