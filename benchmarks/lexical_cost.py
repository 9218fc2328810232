"""What the fused score's own work adds to ``detect``'s time: the lexical signals and absent terms
(groundsense.lexical) and the ranking of the signals against the shipped lexical fusion's
references, on the 2×6 RAGTruth test workload of benchmarks/speed.py (12 answers, two per
source, sources drawn in turn from each task).

    PYTHONPATH=src python benchmarks/lexical_cost.py --threads 2 --out benchmarks/lexical_cost.json

In one process: each answer is detected once to warm up, then, ``--repeats`` times in turn, the
whole ``detect`` call is timed, and the lexical work on the same answer (the evidence's
vocabulary, each sentence's signals and absent terms, as the adjudicator computes them, and the
fused score's ranks of its signals) is timed on its own. The share is the median over repeats
of (lexical seconds / detect seconds), summed over the answers; the detect time includes the
lexical work, so the share is what removing it would save.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from speed import emit_json, load_test_cases, parse_run_arguments, pick_cases, results_machine  # noqa: E402

from groundsense.calibration.fusion import RankFusion  # noqa: E402
from groundsense.lexical import LEXICAL, EvidenceWords, absent_terms, lexical_signals  # noqa: E402
from groundsense.pipeline.detector import Detector  # noqa: E402
from groundsense_eval.data.rows import case_row  # noqa: E402


def lexical_work(chunks: list[str], sentences: list[str], features: dict[str, np.ndarray], fusion: RankFusion
                 ) -> None:
    """What the adjudicator does for the fused score beyond the scorer's features."""
    words = EvidenceWords.of(chunks)
    signals = [lexical_signals(sentence, words) for sentence in sentences]
    for sentence in sentences:
        absent_terms(sentence, words)
    values = {**features, **{name: np.array([row[name] for row in signals]) for name in LEXICAL}}
    fusion.score(fusion.signals(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parse_run_arguments(parser)
    rows = [case_row(c) for c in pick_cases(load_test_cases(), args.cases, per_source=2, seed=args.seed)]
    detector = Detector()
    fusion = detector.adjudicator.fusion_for(detector.config.k)
    if detector.config.score != "fused" or fusion is None:
        raise SystemExit(f"the default score here is {detector.config.score}, not the fused one: nothing to time")
    inputs = []
    for row in rows:  # warm-up; the chunks, sentences and features exactly as scored
        result = detector.detect(**{k: row.get(k) for k in ("answer", "context", "passages", "question")})
        scored = row["context"] if row.get("context") else "\n\n".join(row["passages"])  # chunk spans index it
        chunks = [scored[c.start:c.end] for c in result.chunks]
        features = {name: np.array([s.features[name] for s in result.sentences], float) for name in fusion.inputs}
        inputs.append((row, chunks, [s.text for s in result.sentences], features))
    shares, detect_seconds, lexical_seconds = [], [], []
    for _ in range(args.repeats):
        detect_total = lexical_total = 0.0
        for row, chunks, sentences, features in inputs:
            start = time.perf_counter()
            detector.detect(**{k: row.get(k) for k in ("answer", "context", "passages", "question")})
            detect_total += time.perf_counter() - start
            start = time.perf_counter()
            lexical_work(chunks, sentences, features, fusion)
            lexical_total += time.perf_counter() - start
        shares.append(lexical_total / detect_total)
        detect_seconds.append(detect_total / len(inputs))
        lexical_seconds.append(lexical_total / len(inputs))
    emit_json({
        "machine": results_machine(args.threads),
        "answers": len(inputs), "repeats": args.repeats,
        "detect_seconds_per_answer": round(statistics.median(detect_seconds), 4),
        "lexical_seconds_per_answer": round(statistics.median(lexical_seconds), 5),
        "lexical_share_of_detect": round(statistics.median(shares), 4),
        "goal": "under 0.05",
        "sentences": sum(len(s) for _, _, s, _ in inputs), "precision": detector.config.precision,
    }, args.out)


if __name__ == "__main__":
    main()
