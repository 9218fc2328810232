"""Streaming detection: latency from a sentence's last token to its verdict, and the whole
stream's time against `detect` on the finished answer.

    PYTHONPATH=src python benchmarks/streaming.py --cases 12 --threads 2

On RAGTruth test answers (one per source, drawn in turn from each task as in speed.py), each
with a cold scorer, the answer is fed token by token as an LLM emits it (the scorer's own
tokens, decoded). A sentence's verdict comes back from the feed that completes its last token
and starts the next sentence (the last sentence's from ``close``); its latency is the wall time
of that call, which scores every condition over the tokens fed since the previous call. The
stream's total (opening it, which encodes the evidence, every feed and the close) is compared
with ``detect`` on the whole answer, run back to back on the same answer, median over answers.
Both must give the same sentence scores (1e-4).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from speed import load_test_cases, parse_run_arguments, pick_cases, results_machine, table

from groundsense import Detector


def token_deltas(detector: Detector, answer: str) -> list[str]:
    """The answer cut where the scorer's tokens end: one delta per token."""
    ends = detector.scorer.token_offsets(answer)[:, 1]
    cuts = [0, *sorted(set(int(e) for e in ends if 0 < e < len(answer))), len(answer)]
    return [answer[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def run_one(detector: Detector, case) -> tuple[list[float], float, float]:
    """Per-sentence verdict latencies, the stream's total and detect's time, for one answer."""
    evidence = {"passages": case.passages} if case.passages is not None else {"context": case.context}
    detector.scorer.forget_evidence()
    start = time.perf_counter()
    stream = detector.stream(question=case.question, **evidence)
    latencies = []
    for delta in token_deltas(detector, case.answer):
        call = time.perf_counter()
        judged = stream.feed(delta)
        latencies += [time.perf_counter() - call] * len(judged)
    call = time.perf_counter()
    result = stream.close()
    latencies += [time.perf_counter() - call] * (len(result.sentences) - len(latencies))
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
    return latencies, streamed, detected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=12)
    args = parse_run_arguments(parser)
    cases = pick_cases(load_test_cases(), args.cases, 1, args.seed)
    rows = []
    for mode in ("full", "two_pass"):
        detector = Detector(mode=mode)
        run_one(detector, cases[0])  # warm-up
        latencies, ratios, streamed, detected = [], [], [], []
        for case in cases:
            lat, s, d = run_one(detector, case)
            latencies += lat
            streamed.append(s)
            detected.append(d)
            ratios.append(s / d)
        p50, p95 = np.percentile(latencies, [50, 95])
        rows.append([
            "K+2" if mode == "full" else "two-pass", len(latencies), f"{p50 * 1000:.0f}", f"{p95 * 1000:.0f}",
            f"{statistics.median(streamed):.2f}", f"{statistics.median(detected):.2f}",
            f"{statistics.median(ratios):.2f}×",
        ])
    print(f"{len(cases)} RAGTruth test answers, fed one scorer token at a time; cold scorer per answer.\n")
    print(table(["mode", "sentences", "verdict latency p50 (ms)", "p95 (ms)", "stream total (s, median)",
                 "detect (s, median)", "stream / detect (median)"], rows))
    print(f"\n{results_machine(args.threads)}")


if __name__ == "__main__":
    main()
