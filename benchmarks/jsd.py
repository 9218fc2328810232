"""Micro-benchmark of the JSD step: the scorer's entropy form against the two-KL form it replaced.

    PYTHONPATH=src python benchmarks/jsd.py --threads 1

Inputs are real next-token distributions of the default scorer: the log-probs at the last
``--tokens`` positions of a RAGTruth context read in full (P, the full-context row) and
with its first ``--cut`` tokens removed (Q, another condition). As in ``Scorer._compare``,
one condition's JSD to P is taken in blocks of 64 positions, with P's sums computed once
per answer (outside the timed loop). Reported: the median over interleaved repeats of each
form's time, the median ratio, and each form's largest absolute difference from the two-KL
form computed in float64.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import time

import torch

from groundsense.scorer import Scorer
from groundsense.scorer.divergence import Distributions, jsd
from groundsense_eval.data.locations import benchmark_path

LN2 = math.log(2.0)
BLOCK = 64


def two_kl_form(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """The previous implementation: (KL(P||M) + KL(Q||M)) / 2 with M from a log-add-exp."""
    logm = torch.logaddexp(logp, logq) - LN2
    p, q = logp.exp(), logq.exp()
    kl_pm = torch.where(p > 0, p * (logp - logm), 0.0).sum(-1)
    kl_qm = torch.where(q > 0, q * (logq - logm), 0.0).sum(-1)
    return (0.5 * (kl_pm + kl_qm)).clamp(0.0, LN2)


def real_distributions(tokens: int, cut: int) -> tuple[torch.Tensor, torch.Tensor]:
    scorer = Scorer()
    with gzip.open(benchmark_path("ragtruth"), "rt", encoding="utf-8") as lines:
        row = json.loads(next(line for line in lines if len(json.loads(line)["context"]) > 4 * (tokens + cut)))
    ids = scorer.tokenize(row["context"])[: tokens + cut + 100]
    with torch.inference_mode():
        rows = [scorer.model(input_ids=torch.tensor([x])).logits[0, -tokens:].float() for x in (ids, ids[cut:])]
    return tuple(torch.log_softmax(r, dim=-1) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=256, help="answer positions (the answer cap)")
    parser.add_argument("--cut", type=int, default=120, help="context tokens Q lacks")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    logp, logq = real_distributions(args.tokens, args.cut)
    full = Distributions.of(logp)  # once per answer in the scorer
    blocks = range(0, args.tokens, BLOCK)
    forms = {
        "two-KL (previous)": lambda: torch.cat([two_kl_form(logp[i : i + BLOCK], logq[i : i + BLOCK]) for i in blocks]),
        "entropy (library)": lambda: torch.cat([jsd(full.rows(i, i + BLOCK), logq[i : i + BLOCK]) for i in blocks]),
    }
    truth = two_kl_form(logp.double(), logq.double())
    times: dict[str, list[float]] = {name: [] for name in forms}
    with torch.inference_mode():
        for _ in range(args.repeats):
            for name, form in forms.items():  # interleaved, so that load drift hits both alike
                start = time.perf_counter()
                form()
                times[name].append(time.perf_counter() - start)
        errors = {name: float((form().double() - truth).abs().max()) for name, form in forms.items()}
    old, new = times.values()
    print(f"{args.tokens} positions x {logp.shape[1]:,} vocabulary, blocks of {BLOCK}, "
          f"{torch.get_num_threads()} thread(s), "
          f"{args.repeats} interleaved repeats")
    for name in forms:
        print(f"  {name:18s} median {statistics.median(times[name]) * 1e3:7.1f} ms   "
              f"max abs diff vs float64 {errors[name]:.1e}")
    print(f"  speed-up (median of ratios): {statistics.median(o / n for o, n in zip(old, new)):.2f}x")


if __name__ == "__main__":
    main()
