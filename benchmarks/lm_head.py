"""The vocabulary head in fp32 under a bf16 scorer (issue #53: keep the numerically fragile steps
in fp32 where it is cheap): what it costs, and how far it brings a stream's verdicts in flight
to its result.

    PYTHONPATH=src:benchmarks python benchmarks/lm_head.py --cases 40 --out benchmarks/lm_head.json

The answers are the first ``--cases`` of the 200 RAGTruth test answers that ``routes.py`` scores
(the same pick), with their RAGTruth sentence spans, at ``--threads`` (default 1). Two bf16
detectors score them, each the default detector (the fused score): ``shipped``, as it ships (the
head in bf16: its logits carry bf16's 8-bit mantissa into the fp32 log-softmax), and ``head``,
the same with the head's weights and matmul in fp32 (the hidden states cast up first). Per
answer, each runs ``detect`` (timed, alternating which goes first) and a stream fed a token at a
time (its verdicts in flight). Each answer's records are kept in ``--cache`` so a stopped run
resumes. Reported: each detector's verdicts in flight against its own result (the bound issue #53
sets is 0.02), the head's scores against the shipped ones (the shift a refit of the bf16 files
would absorb), and the median time ratio. The shipped fusions judge both, so the head's flags are
for comparing routes only, not a figure of its quality.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from routes import cached, compact, compare, in_process
from speed import emit_json, load_test_cases, pick_cases, results_machine

from groundsense import Detector

DETECTORS = ("shipped", "head")


class Fp32Head(torch.nn.Module):
    """A vocabulary head that runs in fp32: its weights copied up once, the hidden states cast up."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.detach().float().clone(), requires_grad=False)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(hidden.float(), self.weight)


def with_fp32_head(detector: Detector) -> Detector:
    model = detector.scorer.model
    model.lm_head = Fp32Head(model.get_output_embeddings().weight)
    return detector


def timed_detect(detectors: dict[str, Detector], case, threads: int, first: str) -> dict[str, tuple[dict, float]]:
    """Each detector's ``detect`` of ``case`` (its evidence forgotten first, so each encodes it),
    ``first`` going first, with its seconds."""
    out = {}
    for name in sorted(detectors, key=lambda n: n != first):
        detector = detectors[name]
        detector.scorer.forget_evidence()
        begun = time.perf_counter()
        result = in_process(detector, threads, stream=False)(case)
        out[name] = (compact({"id": case.id, **result.to_dict()}), time.perf_counter() - begun)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=Path("results/lm-head"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cases = pick_cases(load_test_cases(), 200, 2, 0)[: args.cases]  # routes.py's pick, its first answers
    detectors = {"shipped": Detector(precision="bf16"), "head": with_fp32_head(Detector(precision="bf16"))}
    args.cache.mkdir(parents=True, exist_ok=True)
    paths = {(name, kind): args.cache / f"{name}-{kind}.jsonl" for name in DETECTORS for kind in ("detect", "stream")}
    done = {key: cached(path) for key, path in paths.items()}
    for i, case in enumerate(cases):
        if all(str(case.id) in records for records in done.values()):
            continue
        timed = timed_detect(detectors, case, args.threads, DETECTORS[i % 2])
        for name in DETECTORS:
            record, seconds = timed[name]
            streamed = in_process(detectors[name], args.threads, stream=True)(case)
            for kind, kept in (("detect", {**record, "seconds": seconds}),
                               ("stream", compact({"id": case.id, **streamed.to_dict()}))):
                with paths[(name, kind)].open("a") as out:
                    out.write(json.dumps(kept) + "\n")
        print(f"{i + 1}/{len(cases)}", file=sys.stderr, flush=True)
    picked = {str(c.id) for c in cases}
    records = {f"{name}-{kind}": {i: r for i, r in cached(path).items() if i in picked}
               for (name, kind), path in paths.items()}
    seconds = {name: np.array([records[f"{name}-detect"][str(c.id)]["seconds"] for c in cases]) for name in DETECTORS}
    ratios = seconds["head"] / seconds["shipped"]
    report = {
        "machine": results_machine(args.threads), "answers": len(cases), "threads": args.threads,
        "in flight against the result": [compare(records, f"{name}-stream in flight", f"{name}-detect")
                                         for name in DETECTORS],
        "stream result against detect": [compare(records, f"{name}-stream", f"{name}-detect") for name in DETECTORS],
        "head against shipped (detect)": compare(records, "head-detect", "shipped-detect"),
        "detect seconds, median": {name: round(float(np.median(s)), 3) for name, s in seconds.items()},
        "head / shipped time, median of per-answer ratios": round(float(np.median(ratios)), 3),
    }
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
