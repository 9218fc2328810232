"""Batched conditions: the K+2 conditions' answer tails run one condition at a time against
all conditions in one forward call, per answer token, on real RAGTruth answers.

    PYTHONPATH=src python benchmarks/batched_conditions.py --cases 2 --repeats 3 --answer-tokens 64 --stream-tokens 8

For each K and each answer (one per source, drawn in turn from each task as in speed.py) the
conditions' caches up to the question are built once (``Scorer.open_conditions``); then, in
one process, with torch set to each thread count in turn, the two ways are timed back to back
(their order alternating between repeats) on the same caches:

- **answer**: the answer's tails (its first ``--answer-tokens``), as ``Scorer.score`` runs them after the evidence:
  separate = one forward call per condition over its own cache; batched = the caches stacked
  (the copy included in the time) and one call for every condition (``score_next``);
- **stream step**: the first ``--stream-tokens`` answer tokens fed ``--step`` at a time, as a
  stream scores them: separate = one call per condition per step; batched = one call per
  step over caches stacked when the stream opened.

Reported: ms per answer token (all conditions; median over repeats, summed over the
answers) and the median over repeats of separate / batched. The machine may be shared, so
only the ratios of pairs run back to back are meant to be read; the load average is printed.
Both ways must agree within 1e-4 (log-probabilities and JSDs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
from speed import Encoder, load_test_cases, pick_cases, results_machine, table

from groundsense.scorer import Scorer
from groundsense.scorer.conditions import OpenConditions, score_next
from groundsense.scorer.kv import crop

TOLERANCE = 1e-4


def run(scorer: Scorer, caches: list, first: int, ids: list[int], step: int, batched: bool) -> tuple[float, np.ndarray]:
    """Seconds to score ``ids`` in steps of ``step`` after ``caches``, which are left as they
    were, and the scores (logp and jsd rows stacked). The answer section (one step) stacks
    the caches inside the timed call, as ``Scorer.score`` does; a stream stacks them once, when
    it opens, so for smaller steps the stacking is done before the clock starts."""
    lengths = [c.get_seq_length() for c in caches]
    whole = step >= len(ids)
    stacked = scorer.passes.stack(caches) if batched and not whole else None
    start = time.perf_counter()
    if batched and whole:
        stacked = scorer.passes.stack(caches)
    conditions = OpenConditions(stacked if batched else caches, first)
    parts = [score_next(scorer.passes, conditions, ids[i : i + step], scorer.block_size)
             for i in range(0, len(ids), step)]
    seconds = time.perf_counter() - start
    for cache, length in zip(caches, lengths):
        crop(cache, length)
    return seconds, np.vstack([np.hstack([p.logp for p in parts]), np.hstack([p.jsd for p in parts])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=3, help="RAGTruth test answers, one per source")
    parser.add_argument("--ks", default="2,5,8", help="chunks K (conditions K+2)")
    parser.add_argument("--threads", default="1,2", help="torch thread counts, each timed in turn")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--answer-tokens", type=int, default=None,
                        help="answer tokens in the answer section (default: all)")
    parser.add_argument("--stream-tokens", type=int, default=16, help="answer tokens in the stream-step section")
    parser.add_argument("--step", type=int, default=1, help="tokens per stream step")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    load_before = os.getloadavg()
    started = time.perf_counter()
    # each condition's cache of its own (the batched runs stack them); fp32, as the report says
    scorer = Scorer(batch_conditions=False, precision="fp32")
    picked = pick_cases(load_test_cases(), args.cases, 1, args.seed)
    sections = {"answer": None, f"stream, {args.step} token(s) a step": args.step}
    cap = {None: args.answer_tokens, args.step: args.stream_tokens}
    times = {(s, k, t, way): [] for s in sections for k in args.ks.split(",") for t in threads for way in (0, 1)}
    tokens = {}
    worst = 0.0
    for k in args.ks.split(","):
        prompts = [Encoder(scorer, int(k)).item(case).prompt for case in picked]
        with torch.inference_mode():
            opened = [scorer.open_conditions(p.prefix, p.chunks, p.middle) for p in prompts]
            for repeat in range(args.repeats):
                for t in threads:
                    torch.set_num_threads(t)
                    for section, step in sections.items():
                        spent = [0.0, 0.0]
                        for prompt, conditions in zip(prompts, opened):
                            ids = prompt.answer.ids[: cap[step]]
                            rows = {}
                            for way in (0, 1) if repeat % 2 == 0 else (1, 0):  # 0 separate, 1 batched
                                seconds, rows[way] = run(scorer, conditions.caches, conditions.next_input, ids,
                                                         step or len(ids), bool(way))
                                spent[way] += seconds
                            worst = max(worst, float(np.abs(rows[0] - rows[1]).max()))
                        tokens[section, k] = sum(len(p.answer.ids[: cap[step]]) for p in prompts)
                        for way in (0, 1):
                            times[section, k, t, way].append(spent[way])
        print(f"K={k} done: {time.perf_counter() - started:.0f} s", flush=True)
    load_after = os.getloadavg()
    rows = []
    for section in sections:
        for k in args.ks.split(","):
            for t in threads:
                separate, batched = times[section, k, t, 0], times[section, k, t, 1]
                per_token = [1000 * statistics.median(x) / tokens[section, k] for x in (separate, batched)]
                ratio = statistics.median(a / b for a, b in zip(separate, batched))
                rows.append([section, k, int(k) + 2, t, tokens[section, k], f"{per_token[0]:.1f}",
                             f"{per_token[1]:.1f}",
                             f"**{ratio:.2f}×**"])
    print(f"\n{len(picked)} RAGTruth test answers ({', '.join(c.task for c in picked)}; seed {args.seed}), "
          "default scorer, "
          f"fp32; {args.repeats} interleaved repeats; answer section: "
          f"{'whole answers' if args.answer_tokens is None else f'the first {args.answer_tokens} answer tokens'}; "
          f"stream step section: the first {args.stream_tokens} answer tokens.\n")
    print(table(["section", "K", "conditions", "threads", "answer tokens", "separate ms/token", "batched ms/token",
                 "separate / batched (median)"], rows))
    print(f"\nLargest |separate - batched| over log-probabilities and JSDs: {worst:.1e} "
          f"({'within' if worst <= TOLERANCE else '**NOT** within'} {TOLERANCE:g}).")
    print(f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; "
          f"after: {', '.join(f'{x:.2f}' for x in load_after)}. Wall time {time.perf_counter() - started:.0f} s.")
    print(f"\n{results_machine(args.threads)}")
    if worst > TOLERANCE:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
