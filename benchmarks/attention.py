"""What the aligned attention (groundsense.scorer.attention) costs a bf16 scorer on this CPU:
``detect`` with it and with torch's fused attention (``sdpa``, transformers' default), on the
same answers, in one process.

    PYTHONPATH=src:harness/src:benchmarks python benchmarks/attention.py --cases 12 --out benchmarks/attention.json

The answers are the first ``--cases`` of the 200 RAGTruth test answers that ``routes.py``
scores, with their RAGTruth sentence spans. One bf16 detector (the default: the fused score,
K=5) scores each answer with each attention in turn, the order alternating, its kept evidence
forgotten first so that each encodes it, at each of ``--threads``. Reported per thread count:
each attention's median seconds per answer and the median of the per-answer ratios (aligned
over sdpa). Run it with nothing else running.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from speed import emit_json, load_test_cases, pick_cases, results_machine

from groundsense import Detector
from groundsense.scorer.attention import ALIGNED
from groundsense_eval.data.rows import case_row

ATTENTIONS = (ALIGNED, "sdpa")


def timed(detector: Detector, row: dict, attention: str) -> float:
    detector.scorer.model.set_attn_implementation(attention)
    detector.scorer.forget_evidence()
    begun = time.perf_counter()
    detector.detect(row["answer"], context=row.get("context"), passages=row.get("passages"),
                    question=row["question"], sentences=[tuple(s) for s in row["sentences"]])
    return time.perf_counter() - begun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = [case_row(case) for case in pick_cases(load_test_cases(), 200, 2, 0)[: args.cases]]
    detector = Detector(precision="bf16")
    timed(detector, rows[0], ALIGNED)  # warm up: the first call pays for one-time setup
    runs = []
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        seconds: dict[str, list[float]] = {name: [] for name in ATTENTIONS}
        for i, row in enumerate(rows):
            for name in ATTENTIONS if i % 2 == 0 else ATTENTIONS[::-1]:
                seconds[name].append(timed(detector, row, name))
        ratios = [a / s for a, s in zip(seconds[ALIGNED], seconds["sdpa"])]
        runs.append({"threads": threads, "answers": len(rows),
                     "median seconds": {name: round(statistics.median(v), 3) for name, v in seconds.items()},
                     "median ratio aligned / sdpa": round(statistics.median(ratios), 3)})
    detector.scorer.model.set_attn_implementation(ALIGNED)
    emit_json({"command": "PYTHONPATH=src:harness/src:benchmarks python benchmarks/attention.py "
                          f"--cases {args.cases} --threads {args.threads}",
               "machine": results_machine(None), "precision": "bf16", "runs": runs}, args.out)


if __name__ == "__main__":
    main()
