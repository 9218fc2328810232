"""Seconds per answer of each built-in scorer in each mode, on the same RAGTruth test answers,
in one process: the cost column of "which scorer, at what cost" (`groundsense eval scorer-cost
--timings`).

    PYTHONPATH=src python benchmarks/scorer_cost.py --cases 12 --threads 2 --out benchmarks/scorer_cost.json

Each scorer loads once; each mode then scores the answers on a fresh scorer around that model
(no evidence kept from another mode's run), after one warm-up answer from another source.
Answers come 2 per source, so that evidence is shared as in RAGTruth (the detector encodes it
once). The configurations run in turn and, with ``--repeats 2``, again in reverse order, so
that a load that drifts during the run weighs on each alike; the ratio to the default scorer's
full mode is taken within this one run. A scorer whose weights are not installed is skipped
with a note.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import mean

import torch

sys.path.insert(0, str(Path(__file__).parent))
from speed import emit_json, load_test_cases, pick_cases, results_machine  # noqa: E402

from groundsense.errors import ScorerUnavailable  # noqa: E402
from groundsense.pipeline.detector import Detector
from groundsense.scorer import Scorer  # noqa: E402
from groundsense.weights import BUILTINS, DEFAULT_SCORER  # noqa: E402
from groundsense_eval.data.rows import case_row  # noqa: E402

MODES = ("two_pass", "full")
BASELINE = (DEFAULT_SCORER, "full")


def time_mode(model: Scorer, mode: str, rows: list[dict], warm_up: dict) -> tuple[float, int]:
    """Seconds to score ``rows`` in ``mode`` on a fresh scorer around ``model``, and their sentences."""
    detector = Detector(Scorer.from_model(model.model, model.tokenizer, model.name), k=5, mode=mode)
    detector.detect_many([warm_up], progress=False)
    start = time.perf_counter()
    results = detector.detect_many(rows, progress=False)
    return time.perf_counter() - start, sum(len(r.sentences) for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--per-source", type=int, default=2, help="answers per source (they share evidence)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--scorers", default=",".join(BUILTINS), help="comma-separated built-in scorer names")
    parser.add_argument("--repeats", type=int, default=1, help="1: each configuration once; 2: then again in reverse")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here (also printed)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    cases = pick_cases(load_test_cases(), args.cases + 1, args.per_source, args.seed)
    warm_up = next(case_row(c) for c in cases if c.source_id != cases[0].source_id and c not in cases[: args.cases])
    rows = [case_row(c) for c in cases[: args.cases]]
    scorers, skipped = {}, {}
    for name in args.scorers.split(","):
        start = time.perf_counter()
        try:
            scorers[name] = Scorer(name, precision="fp32")  # as the shipped files judge it
        except ScorerUnavailable as exc:
            skipped[name] = str(exc)
            continue
        print(f"loaded {name} in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    order = [(name, mode) for name in scorers for mode in MODES]
    order += list(reversed(order)) if args.repeats > 1 else []
    runs: dict[tuple[str, str], list[float]] = {}
    sentences = {}
    for name, mode in order:
        seconds, sentences[name, mode] = time_mode(scorers[name], mode, rows, warm_up)
        runs.setdefault((name, mode), []).append(seconds)
        print(f"{name} {mode}: {seconds / len(rows):.2f} s per answer", file=sys.stderr, flush=True)
    baseline = mean(runs[BASELINE]) if BASELINE in runs else None
    report = {
        "command": " ".join(["python", "benchmarks/scorer_cost.py", *sys.argv[1:]]),
        "machine": results_machine(args.threads),
        "answers": len(rows), "sources": len({c.source_id for c in cases[: args.cases]}), "seed": args.seed,
        "threads": args.threads,
        "timings": [
            {"scorer": name, "mode": mode, "n_parameters": scorers[name].n_parameters,
             "seconds_per_answer": mean(times) / len(rows),
             "seconds_per_sentence": mean(times) / sentences[name, mode], "runs_seconds": times,
             "relative_to_default_full": mean(times) / baseline if baseline else None}
            for (name, mode), times in runs.items()
        ],
        "skipped": skipped,
    }
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
