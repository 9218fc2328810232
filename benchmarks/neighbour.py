"""Threads sized to the CPUs the process can use (issue #53): one ``detect`` of a RAGTruth answer of
about 350 prompt tokens, timed alone, beside a busy neighbour process on one core, and under
``taskset`` on one core.

    PYTHONPATH=src python benchmarks/neighbour.py --out benchmarks/neighbour.json

Each setting runs as a user would run it, in a fresh process at the default thread count (no
``--threads``, no ``OMP_NUM_THREADS``): the process loads the default detector, scores the answer
once to warm up, then ``--repeats`` times; its median is the setting's time. The neighbour is a
Python process spinning on core 0 (``taskset -c 0``), started before the process and stopped
after it. Goal: no setting takes more than twice the time alone. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from speed import emit_json, load_test_cases, results_machine

GOAL = 2.0
TARGET_TOKENS = 350


def pick_case():
    """The first RAGTruth test QA answer (in id order) whose full-context prompt is 300-400 tokens."""
    from groundsense.scorer import Scorer

    scorer = Scorer(precision="fp32")
    for case in sorted((c for c in load_test_cases() if c.task == "QA"), key=lambda c: c.id):
        text = "\n".join(case.passages) if case.passages is not None else case.context
        tokens = len(scorer.tokenize(case.question + "\n" + text + "\n" + case.answer))
        if abs(tokens - TARGET_TOKENS) <= 50:
            return case, tokens
    raise SystemExit("no RAGTruth test QA answer of 300-400 tokens")


def measure(case_id: str, repeats: int) -> None:
    """In the child: print the median seconds of ``detect`` on the case, and the threads it ran."""
    import torch

    from groundsense import Detector
    from groundsense_eval.data.ragtruth import load_ragtruth

    [case], _ = load_ragtruth(ids={case_id})
    detector = Detector()
    evidence = {"passages": case.passages} if case.passages is not None else {"context": case.context}

    def once() -> float:
        detector.scorer.forget_evidence()  # every run encodes the evidence, as a new answer's would
        start = time.perf_counter()
        detector.detect(case.answer, question=case.question, **evidence)
        return time.perf_counter() - start

    once()
    times = [once() for _ in range(repeats)]
    print(json.dumps({"seconds": statistics.median(times), "runs": times, "threads": torch.get_num_threads(),
                      "precision": detector.config.precision}))


def run_child(case_id: str, repeats: int, prefix: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "GROUNDSENSE_THREADS")}
    done = subprocess.run([*prefix, sys.executable, __file__, "--child", case_id, "--repeats", str(repeats)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure(args.child, args.repeats)
        return
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("this benchmark needs at least 2 CPUs: one for the neighbour")
    case, tokens = pick_case()
    settings: dict[str, dict] = {"alone": run_child(case.id, args.repeats, [])}
    neighbour = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1)
        settings["beside a busy neighbour on core 0"] = run_child(case.id, args.repeats, [])
    finally:
        neighbour.kill()
        neighbour.wait()
    settings["under taskset on one core"] = run_child(case.id, args.repeats, ["taskset", "-c", "1"])
    alone = settings["alone"]["seconds"]
    for result in settings.values():
        result["times alone"] = round(result["seconds"] / alone, 2)
    report = {"machine": results_machine(None), "case": case.id, "prompt_tokens": tokens, "settings": settings,
              "goal": f"at most {GOAL:g}x the time alone",
              "met": all(r["times alone"] <= GOAL for r in settings.values())}
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
