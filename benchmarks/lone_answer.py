"""A lone answer with its own evidence, nothing cached: what one `groundsense detect` call or
one `/v1/detect` request costs once the scorer is loaded, and where that time goes.

    PYTHONPATH=src python benchmarks/lone_answer.py --cases 12 --threads 1,2 --precision fp32,bf16

On RAGTruth test answers (one per source, drawn in turn from each task as in speed.py), each
answer is scored by ``Detector.detect``'s own steps, timed one by one: segmenting the answer,
chunking the evidence (``build_evidence``), tokenising the prompt (``Scorer.encode``), the
scorer's passes (``Scorer.score``: the evidence encoded, then the answer under each
condition) and calibration (features, flags, the result). The evidence cache is emptied
before each answer. Every combination of mode, thread count and precision runs on one answer
before the next starts, so that a shared machine's load falls on all alike (the load average
is printed). Figures are medians over answers; the scorer's passes are also given per token
processed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from itertools import product
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from speed import load_test_cases, pick_cases, results_machine, table  # noqa: E402

from groundsense.inputs.evidence import build_evidence  # noqa: E402
from groundsense.inputs.text import segment_sentences  # noqa: E402
from groundsense.pipeline.detector import Detector  # noqa: E402

STEPS = ("segment", "evidence", "tokenise", "scorer passes", "judge")


def timed_detect(detector: Detector, case) -> tuple[dict[str, float], int, int]:
    """Seconds of each of ``detect``'s steps on ``case``, the prompt's tokens and the tokens the passes processed."""
    scorer, seconds = detector.scorer, {}
    scorer.forget_evidence()

    def step(name, call, *args, **kwargs):
        begun = time.perf_counter()
        out = call(*args, **kwargs)
        seconds[name] = time.perf_counter() - begun
        return out

    spans = step("segment", segment_sentences, case.answer)
    evidence = step("evidence", build_evidence, scorer, case.context, case.passages, detector.config.k,
                    detector.config.max_context_tokens)
    chunk_texts = [evidence.chunk_text(c) for c in evidence.chunks]
    prompt = step("tokenise", scorer.encode, case.question or "", chunk_texts, case.answer,
                  detector.config.max_answer_tokens)
    scores = step("scorer passes", scorer.score, prompt, leave_one_out=detector.config.mode == "full")
    step("judge", detector.adjudicator.result, case.answer, spans, evidence, prompt, scores,
         scorer.unfamiliar_text(prompt))
    return seconds, len(prompt.condition_ids()), scores.tokens_processed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--threads", default="1,2", help="torch thread counts, each timed in turn")
    parser.add_argument("--precision", default="fp32", help="scorer precisions, each timed in turn (fp32,bf16,int8)")
    parser.add_argument("--modes", default="two_pass,full", help="detector modes, each timed in turn")
    parser.add_argument("--seed", type=int, default=0, help="seed of the RAGTruth answers drawn")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    precisions, modes = args.precision.split(","), args.modes.split(",")
    load_before, started = os.getloadavg(), time.perf_counter()
    cases = pick_cases(load_test_cases(), args.cases, 1, args.seed)
    detectors = {(mode, precision): Detector(mode=mode, precision=precision)
                 for mode, precision in product(modes, precisions)}
    for detector in detectors.values():
        timed_detect(detector, cases[0])  # warm-up
    runs = list(product(modes, precisions, threads))
    times: dict[tuple, list] = {run: [] for run in runs}
    for number, case in enumerate(cases, 1):
        print(f"answer {number}/{len(cases)} ({case.id}), {time.perf_counter() - started:.0f} s in", file=sys.stderr)
        for mode, precision, n_threads in runs:
            torch.set_num_threads(n_threads)
            times[mode, precision, n_threads].append(timed_detect(detectors[mode, precision], case))
    rows = []
    for (mode, precision, n_threads), measured in times.items():
        steps = {name: statistics.median(s[name] for s, _, _ in measured) for name in STEPS}
        totals = [sum(s.values()) for s, _, _ in measured]
        per_token = statistics.median(s["scorer passes"] / processed * 1000 for s, _, processed in measured)
        rows.append([mode.replace("_", "-"), precision, n_threads, f"{statistics.median(totals):.2f}",
                     *(f"{steps[name] * 1000:.0f}" for name in STEPS),
                     f"{statistics.median(p for _, p, _ in measured):.0f}",
                     f"{statistics.median(t for _, _, t in measured):.0f}", f"{per_token:.2f}"])
    print(f"{len(cases)} RAGTruth test answers (one per source), each with its own evidence; default scorer, K=5; "
          "medians over answers.\n")
    print(table(["mode", "precision", "threads", "seconds per answer", *(f"{name} (ms)" for name in STEPS),
                 "prompt tokens", "tokens processed", "ms per token processed"], rows))
    print(f"\nLoad average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}. Wall time {time.perf_counter() - started:.0f} s.")
    print(f"\n{results_machine(args.threads)}")


if __name__ == "__main__":
    main()
