"""Numeric precision: the scorer's real workload (``Scorer.score``, K+2 conditions, exact
leave-one-out, evidence encoded once per answer) in fp32 against faster numeric paths.

    PYTHONPATH=src python benchmarks/precision.py --cases 4 --repeats 3 --threads 1 --out benchmarks/precision.json

Candidates, each a copy of the default scorer's model in one process:

- ``fp32``: the default;
- ``int8``: what ``precision="int8"`` loads (``groundsense.scorer.loading.at_precision``):
  every ``nn.Linear``, the vocabulary head included, dynamically quantised, per-tensor weight scales;
- ``int8-per-channel``: the same with a weight scale per output channel;
- ``int8-decoder``: the decoder's linear layers only, the vocabulary head left in fp32;
- ``bf16``: what ``precision="bf16"`` loads: the model's weights, activations and KV cache in
  bfloat16 (fast where the CPU has AVX-512 BF16 or AMX; on one without, torch emulates it).

Every round runs each candidate on the same answers in turn (the order rotating between
rounds), each run starting with an empty evidence cache, so that the machine's load, which
may be shared, hits them alike: read the ratios (median over rounds of fp32 time / candidate
time), not the absolute times. Also reported: each candidate's largest absolute difference
from fp32 in token log-probability and in the detector's sentence features, and the Pearson
correlation of its features with fp32's.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from speed import Encoder, emit_json, features, load_test_cases, pick_cases, results_machine, table

from groundsense.scorer import Scorer
from groundsense.scorer.loading import at_precision


def dynamic_int8(model, per_channel: bool = False, head: bool = True):
    """``model`` with its linear layers quantised as ``at_precision(model, "int8")`` does, with
    per-channel weight scales or without the vocabulary head."""
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig, quantize_dynamic

    qconfig = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    spec = {name: qconfig for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and (head or m is not model.get_output_embeddings())}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)


CANDIDATES = {
    "fp32": lambda model: model,
    "int8": lambda model: at_precision(model, "int8"),
    "int8-per-channel": lambda model: dynamic_int8(model, per_channel=True),
    "int8-decoder": lambda model: dynamic_int8(model, head=False),
    "bf16": lambda model: at_precision(model, "bf16"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=4, help="RAGTruth test answers, one per source")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="rounds over every candidate")
    parser.add_argument("--candidates", default=",".join(CANDIDATES), help=f"of {','.join(CANDIDATES)}")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    names = args.candidates.split(",")
    unknown = set(names) - set(CANDIDATES)
    if unknown or "fp32" not in names:
        sys.exit(f"candidates must include fp32 and be among {', '.join(CANDIDATES)}")
    load_before, started = os.getloadavg(), time.perf_counter()
    base = Scorer(device="cpu", precision="fp32")  # the candidates are made from fp32 weights
    scorers = {name: Scorer.from_model(CANDIDATES[name](copy.deepcopy(base.model)), base.tokenizer, base.name)
               for name in names}
    items = [Encoder(base, args.k).item(case) for case in pick_cases(load_test_cases(), args.cases, 1, args.seed)]
    times = {name: [] for name in names}
    scores = {}
    with torch.inference_mode():
        for name, scorer in scorers.items():  # warm-up, and the scores compared
            scores[name] = [scorer.score(item.prompt) for item in items]
        for repeat in range(args.repeats):
            order = names[repeat % len(names):] + names[: repeat % len(names)]
            for name in order:
                scorer = scorers[name]
                scorer.forget_evidence()
                start = time.perf_counter()
                for item in items:
                    scorer.score(item.prompt)
                times[name].append(time.perf_counter() - start)
            print(f"round {repeat + 1}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    tokens = sum(s.tokens_processed for s in scores["fp32"])
    reference = np.concatenate([features(i, s) for i, s in zip(items, scores["fp32"])])
    results, rows = {}, []
    for name in names:
        mine = np.concatenate([features(i, s) for i, s in zip(items, scores[name])])
        both = np.isfinite(reference) & np.isfinite(mine)
        logp = max(float(np.abs(a.logp - b.logp).max()) for a, b in zip(scores[name], scores["fp32"]))
        results[name] = {
            "seconds": times[name], "ms_per_token": 1000 * statistics.median(times[name]) / tokens,
            "seconds_per_answer": statistics.median(times[name]) / len(items),
            "speedup_vs_fp32": statistics.median(f / t for f, t in zip(times["fp32"], times[name])),
            "max_abs_logp_diff": logp,
            "max_abs_feature_diff": float(np.abs(reference[both] - mine[both]).max()),
            "feature_pearson": float(np.corrcoef(reference[both], mine[both])[0, 1]),
        }
        r = results[name]
        rows.append([name, f"{r['seconds_per_answer']:.2f}", f"{r['ms_per_token']:.2f}",
                     f"**{r['speedup_vs_fp32']:.2f}×**", f"{logp:.3f}", f"{r['max_abs_feature_diff']:.3f}",
                     f"{r['feature_pearson']:.4f}"])
    load_after = os.getloadavg()
    tasks = ", ".join(i.task for i in items)
    print(f"\n{len(items)} RAGTruth test answers ({tasks}; seed {args.seed}), {tokens:,} tokens processed each run, "
          f"K={args.k} (K+2 conditions, exact leave-one-out), default scorer; {args.repeats} rounds, candidates "
          "interleaved in one process, each run from an empty evidence cache.\n")
    print(table(["precision", "s / answer (median)", "ms / token", "fp32 / it (median of rounds)",
                 "max |Δ log p|", "max |Δ feature|", "feature Pearson"], rows))
    print(f"\nLoad average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; "
          f"after: {', '.join(f'{x:.2f}' for x in load_after)}. Wall time {time.perf_counter() - started:.0f} s.")
    machine = results_machine(args.threads)
    print(f"\n{machine}")
    emit_json({"args": {k: str(v) for k, v in vars(args).items()}, "machine": machine,
               "cases": [i.case_id for i in items], "tokens_processed": tokens,
               "load_average": {"before": load_before, "after": load_after}, "candidates": results}, args.out)


if __name__ == "__main__":
    main()
