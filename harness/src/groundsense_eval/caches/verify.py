"""Resumable verifier runs: score benchmark cases with a verifier into a Parquet cache.

Layout (docs/verifiers.md): ``<cache>/<benchmark>/<kind>-<model>__<hash>/`` with
``config.json`` (verifier, model, params, version, n_parameters) and part files written and
resumed as the feature cache's (:mod:`.store`). One row per labelled sentence: the case
columns, ``sentence_index``, ``label``, ``type``, ``score`` (higher = more suspicious),
``seconds``, ``gflops``, ``status`` (``scored``; ``unscored`` where the verifier could not
score the sentence, score NaN; ``error`` for a failed case, one row), ``error``,
``support_chunk`` and the verifier's extra columns. A case's measured wall time is shared
out over its sentences in proportion to their GFLOPs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from groundsense.errors import GroundsenseError
from groundsense.progress import track
from groundsense.verification import ModelVerifier, VerifierScores

from ..data.cases import Case
from .store import RunSummary, benchmark_of, case_columns, error_row, pending_cases, write_cases, write_json


def verifier_rows(case: Case, scores: VerifierScores, seconds: float) -> list[dict]:
    """One row per labelled sentence of ``case``."""
    n = len(case.sentences)
    if len(scores.score) != n:
        raise RuntimeError(f"verifier returned {len(scores.score)} scores for {n} sentences")
    share = scores.gflops / scores.gflops.sum() if scores.gflops.sum() > 0 else np.full(n, 1 / n)
    support = scores.support_chunk or [None] * n
    return [
        {
            **case_columns(case),
            "sentence_index": i,
            "label": int(sentence.unsupported),
            "type": sentence.type,
            "score": float(scores.score[i]),
            "seconds": seconds * float(share[i]),
            "gflops": float(scores.gflops[i]),
            "status": "scored" if np.isfinite(scores.score[i]) else "unscored",
            "error": None,
            "support_chunk": support[i],
            **{name: np.asarray(values)[i].item() for name, values in scores.extra.items()},
        }
        for i, sentence in enumerate(case.sentences)
    ]


def verify(
    verifier: ModelVerifier,
    cases: Sequence[Case],
    cache: str | Path,
    limit: int | None = None,
    batch_size: int = 10,
    progress: bool = True,
) -> RunSummary:
    """Score ``cases`` (one benchmark) with ``verifier`` into the cache, skipping cached ones.

    Cases are taken in the feature extraction's order (:func:`.store.ordered`), so ``limit``
    selects the same cases as ``eval extract --limit``."""
    folder = Path(cache) / benchmark_of(cases) / verifier.key
    write_json(folder, verifier.config())
    pending, skipped = pending_cases(cases, folder, limit)
    written, errors = write_cases(folder, _case_rows(verifier, pending, progress), batch_size)
    return RunSummary(folder, written=written, skipped=skipped, errors=errors)


def _case_rows(verifier: ModelVerifier, cases: list[Case], progress: bool) -> Iterator[list[dict]]:
    for case in track(cases, f"Verifying ({verifier.kind})", enabled=progress):
        start = time.perf_counter()
        try:
            scores = verifier.verify(case.sentence_input())
        except (GroundsenseError, ValueError, RuntimeError) as exc:
            yield [error_row(case, exc)]
            continue
        yield verifier_rows(case, scores, time.perf_counter() - start)
