"""Streaming detection: latency from a sentence's last token to its verdict, and the whole
stream's time against `detect` on the finished answer.

    PYTHONPATH=src python benchmarks/streaming.py --cases 12 --threads 1,2

On RAGTruth test answers (one per source, drawn in turn from each task as in speed.py), each
with a cold scorer, the answer is fed token by token as an LLM emits it (the scorer's own
tokens, decoded). A sentence's verdict comes back from the feed that completes its last token
and starts the next sentence (the last sentence's from ``close``); its latency is the wall time
of that call, which scores every condition over the final tokens not scored yet (the table
gives their median count). The stream's total (opening it, which encodes the evidence, every
feed and the close) is compared with ``detect`` on the whole answer, run back to back on the
same answer, median over answers. Both must give the same sentence scores (1e-4).

Every combination of mode (K+2, two-pass), thread count and ``--score-every`` runs on one answer
before the next answer starts, so that a shared machine's load falls on all of them alike; the
load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from itertools import product

import numpy as np
import torch
from speed import load_test_cases, pick_cases, results_machine, table

from groundsense import Detector


def token_deltas(detector: Detector, answer: str) -> list[str]:
    """The answer cut where the scorer's tokens end: one delta per token."""
    ends = detector.scorer.token_offsets(answer)[:, 1]
    cuts = [0, *sorted(set(int(e) for e in ends if 0 < e < len(answer))), len(answer)]
    return [answer[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def run_one(detector: Detector, case, score_every: int) -> tuple[list[float], list[int], float, float]:
    """Per-sentence verdict latencies and the tokens each verdict's call scored, the stream's
    total and detect's time, for one answer."""
    evidence = {"passages": case.passages} if case.passages is not None else {"context": case.context}
    detector.scorer.forget_evidence()
    start = time.perf_counter()
    stream = detector.stream(question=case.question, score_every=score_every, **evidence)
    latencies, scored = [], []

    def timed(call, *args):
        before, begun = stream._conditions.tokens_processed, time.perf_counter()
        out = call(*args)
        seconds, tokens = time.perf_counter() - begun, (stream._conditions.tokens_processed - before)
        judged = len(out) if isinstance(out, list) else len(out.sentences) - len(latencies)
        latencies.extend([seconds] * judged)
        scored.extend([tokens // stream._conditions.rows] * judged)
        return out

    for delta in token_deltas(detector, case.answer):
        timed(stream.feed, delta)
    result = timed(stream.close)
    streamed = time.perf_counter() - start
    detector.scorer.forget_evidence()
    start = time.perf_counter()
    whole = detector.detect(answer=case.answer, question=case.question,
                            sentences=[(s.start, s.end) for s in result.sentences], **evidence)
    detected = time.perf_counter() - start
    worst = max((abs(a.score - b.score) for a, b in zip(result.sentences, whole.sentences) if a.score is not None),
                default=0)
    if worst > 1e-4:
        raise SystemExit(f"{case.id}: stream and detect differ by {worst:.2e} (> 1e-4)")
    return latencies, scored, streamed, detected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--threads", default="1,2", help="torch thread counts, each timed in turn")
    parser.add_argument("--score-every", default="16",
                        help="the streams' score_every values, each timed in turn (comma-separated)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the RAGTruth answers drawn")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    cadences = [int(n) for n in args.score_every.split(",")]
    load_before, started = os.getloadavg(), time.perf_counter()
    cases = pick_cases(load_test_cases(), args.cases, 1, args.seed)
    detectors = {"K+2": Detector(mode="full"), "two-pass": Detector(mode="two_pass")}
    runs = list(product(detectors, threads, cadences))
    times = {run: ([], [], [], []) for run in runs}  # latencies, tokens scored, stream totals, detect times
    for detector in detectors.values():
        run_one(detector, cases[0], cadences[0])  # warm-up
    for number, case in enumerate(cases, 1):
        print(f"answer {number}/{len(cases)} ({case.id}), {time.perf_counter() - started:.0f} s in", file=sys.stderr)
        for mode, n_threads, every in runs:
            torch.set_num_threads(n_threads)
            latencies, scored, streamed, detected = run_one(detectors[mode], case, every)
            for into, values in zip(times[mode, n_threads, every], (latencies, scored, [streamed], [detected])):
                into += values
    rows = []
    for (mode, n_threads, every), (latencies, scored, streamed, detected) in times.items():
        p50, p95 = np.percentile(latencies, [50, 95])
        ratios = [s / d for s, d in zip(streamed, detected)]
        rows.append([mode, n_threads, every, len(latencies), f"{statistics.median(scored):.0f}", f"{p50 * 1000:.0f}",
                     f"{p95 * 1000:.0f}", f"{statistics.median(streamed):.2f}", f"{statistics.median(detected):.2f}",
                     f"{statistics.median(ratios):.2f}×"])
    print(f"{len(cases)} RAGTruth test answers, fed one scorer token at a time; cold scorer per answer.\n")
    print(table(["mode", "threads", "score_every", "sentences", "tokens scored by a verdict's call (median)",
                 "verdict latency p50 (ms)", "p95 (ms)", "stream total (s, median)", "detect (s, median)",
                 "stream / detect (median)"], rows))
    print(f"\nLoad average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}. Wall time {time.perf_counter() - started:.0f} s.")
    print(f"\n{results_machine(args.threads)}")


if __name__ == "__main__":
    main()
