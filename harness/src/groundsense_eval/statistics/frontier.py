"""The cost-accuracy frontier (the paper's Figure 4): span AUC on the test partition against
GFLOPs per sentence, for every detector method of every cached configuration (each scorer
size, full and two-pass) and every verifier, with measured seconds beside it.

Detector cost comes from each set's Table 9 (:func:`.benchmark_result.cost_table`); two-pass sets are
scored with the methods they can run (:func:`methods.two_pass_scores`). A verifier's cost is
the mean of its cached per-sentence ``gflops`` and ``seconds`` over the test sentences it
scored. It is listed once per benchmark, from the configuration it was compared with on the
most test sentences, and its AUC rests on those sentences only (``n``), which may be fewer
than the detectors'; ``gap_same_sentences`` gives the sentence gap on exactly them, the
paired reference (Table 7 has its interval), by the scorer ``gap_scorer`` of that configuration.
"""

from __future__ import annotations

import pandas as pd

from .benchmark_result import BenchmarkResult
from .compare import VerifierComparison
from .methods import two_pass_scores
from .metrics import auc_or_nan

COLUMNS = ["benchmark", "kind", "scorer", "method", "n", "auc", "gap_same_sentences", "gap_scorer", "gflops",
           "seconds", "seconds_measured"]


def detector_aucs(result: BenchmarkResult) -> dict[str, float]:
    """Span AUC of each detector method the set can score (empty when it cannot be evaluated)."""
    if result.evaluation is not None:
        return dict(result.evaluation.span.point)
    if result.test is None or set(result.test["label"]) != {0, 1}:
        return {}
    y = result.test["label"].to_numpy()
    return {m: auc_or_nan(y, s) for m, s in two_pass_scores(result.test).items()}


def frontier_table(results: list[BenchmarkResult], comparisons: dict[str, list[VerifierComparison]]) -> pd.DataFrame:
    """One row per (benchmark, detector configuration and method) and per (benchmark,
    verifier). ``comparisons`` maps a set's name (``benchmark-key``) to its verifier comparisons."""
    rows = []
    widest: dict[tuple[str, str], tuple[int, VerifierComparison, str]] = {}
    for result in results:
        f = result.features
        n = len(result.test) if result.test is not None else 0
        for method, auc in detector_aucs(result).items():
            cost = result.cost.loc[method]
            rows.append({"benchmark": f.benchmark, "kind": "detector", "scorer": f.config["scorer"],
                         "method": f"{method} ({f.config['mode']}, K={f.config['k']})", "n": n, "auc": auc,
                         "gap_same_sentences": float("nan"), "gap_scorer": None, "gflops": cost["gflops"],
                         "seconds": cost["seconds"],
                         "seconds_measured": bool(cost["seconds_measured"])})
        for c in comparisons.get(f"{f.benchmark}-{f.key}", []):
            if c.n_test > widest.get((f.benchmark, c.name), (-1, None))[0]:
                widest[(f.benchmark, c.name)] = (c.n_test, c, f.config["scorer"])
    for (benchmark, name), (n, c, scorer) in widest.items():
        rows.append({"benchmark": benchmark, "kind": "verifier", "scorer": name, "method": name, "n": n,
                     "auc": c.span.point[name], "gap_same_sentences": c.span.point["sentence gap"],
                     "gap_scorer": scorer,
                     "gflops": float(c.test["verifier_gflops"].mean()),
                     "seconds": float(c.test["verifier_seconds"].mean()), "seconds_measured": True})
    return pd.DataFrame(rows, columns=COLUMNS)
