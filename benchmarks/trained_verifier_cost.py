"""What candidate V-135M (issue #55, docs/detector-selection.md "A trained verifier") costs, against
its goal: in a cascade, at most the two-pass scorer's time again for the sentences it reads.

    PYTHONPATH=src:harness/src python benchmarks/trained_verifier_cost.py --cases 12 --threads 2 \\
        --out benchmarks/trained_verifier_cost.json

On the same RAGTruth test answers (2 per source, as ``scorer_cost.py`` picks them), at the default
precision and ``--threads``: the two-pass detector's seconds per answer (its evidence forgotten
first, so each answer encodes it), and the verifier's seconds over the sentences a cascade at the
shipped escalation reads (the detector's most suspicious share of each answer's sentences, at
least one) and over all of them. The verifier runs over a scorer of its own (its adapter changes
that model in place), in fp32 as ``TrainedVerifier.load`` builds it, with an adapter and head
freshly drawn: its cost does not depend on what they learned. The answers run in turn in one
process, so the ratios are within one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from speed import emit_json, load_test_cases, pick_cases, results_machine  # noqa: E402

from groundsense.config import DEFAULTS  # noqa: E402
from groundsense.inputs.text import join_passages  # noqa: E402
from groundsense.pipeline.detector import Detector  # noqa: E402
from groundsense.scorer import Scorer  # noqa: E402
from groundsense.verification.cascade import escalation_mask  # noqa: E402
from groundsense_eval.fits.verifier import TrainedVerifier  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cases = pick_cases(load_test_cases(), args.cases, 2, args.seed)
    detector = Detector(mode="two_pass")
    verifier = TrainedVerifier(Scorer(precision="fp32", device=str(detector.scorer.device)))  # as load() makes it
    rows = []
    for case in cases:
        evidence = {"passages": case.passages} if case.passages is not None else {"context": case.context}
        detector.scorer.forget_evidence()
        begun = time.perf_counter()
        result = detector.detect(case.answer, question=case.question, **evidence)
        detected = time.perf_counter() - begun
        text = case.context if case.passages is None else join_passages(case.passages)[0]
        chunks = [text[c.start : c.end] for c in result.chunks]
        scores = np.array([np.nan if s.score is None else s.score for s in result.sentences])
        sentences = [s.text for s in result.sentences]
        read = [t for t, chosen in zip(sentences, escalation_mask(scores, DEFAULTS.escalate)) if chosen]
        timed = {}
        for name, texts in (("escalated", read), ("all", sentences)):
            begun = time.perf_counter()
            verifier.score_sentences(case.question, chunks, texts)
            timed[name] = time.perf_counter() - begun
        rows.append({"id": str(case.id), "sentences": len(sentences), "escalated": len(read),
                     "two_pass_s": detected, "verifier_escalated_s": timed["escalated"],
                     "verifier_all_s": timed["all"]})
        print(f"{len(rows)}/{len(cases)}", file=sys.stderr, flush=True)
    two_pass = np.array([r["two_pass_s"] for r in rows])
    escalated = np.array([r["verifier_escalated_s"] for r in rows])
    every = np.array([r["verifier_all_s"] for r in rows])
    report = {
        "machine": results_machine(args.threads), "threads": args.threads,
        "precision": {"detector": detector.scorer.precision, "verifier": verifier.scorer.precision},
        "answers": len(rows), "escalate": DEFAULTS.escalate,
        "seconds per answer, mean": {"two-pass detector": round(float(two_pass.mean()), 3),
                                     "verifier, escalated sentences": round(float(escalated.mean()), 3),
                                     "verifier, every sentence": round(float(every.mean()), 3)},
        "verifier on the escalated sentences / two-pass detector, median of per-answer ratios":
            round(float(np.median(escalated / two_pass)), 3),
        "goal (at most the two-pass time again) met": bool(np.median(escalated / two_pass) <= 1.0),
        "per answer": rows,
    }
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
