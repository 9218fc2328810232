"""ContextCite's ablation passes: the library against one plain forward pass per mask.

    PYTHONPATH=src python benchmarks/contextcite.py --cases 6 --repeats 2 --threads 2

On RAGTruth test answers (one per source, drawn in turn from each task as in speed.py),
each with a cold scorer (nothing kept from an earlier answer), the verifier's distinct masks
(64 draws, K chunks) are scored twice: by the verifier's ``subset_logprobs`` and by the naive method
the ``context-cite`` package uses, one forward pass over the whole ablated prompt per mask,
no cache. Both score identical token ids and must agree to 1e-4. Reported: wall time (the
ratio is the median over (naive, library) pairs run back to back), tokens through the model,
and the tokens the previous scheme encoded (each mask from the full context cut back to its
first left-out chunk; counted, not run).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from speed import parse_run_arguments, ragtruth_prompts, results_machine, table

from groundsense.scorer import EncodedPrompt, Scorer, reference
from groundsense.verification.contextcite import ablation_masks, subset_logprobs


def from_full_tokens(prompt: EncodedPrompt, masks: np.ndarray) -> int:
    """Tokens the previous scheme ran: the full evidence once, each ablated mask's kept chunks
    after its first left-out one, and every mask's question and answer."""
    lead, tail = len(prompt.middle) - 1, len(prompt.answer.ids)  # as subset_logprobs splits them
    ablated = [list(mask) for mask in masks if not mask.all()]
    rest = sum(len(c) for mask in ablated for j, c in enumerate(prompt.chunks) if mask[j] and j > mask.index(False))
    evidence = len(prompt.prefix) + sum(map(len, prompt.chunks))
    return evidence + rest + lead * (1 + len(ablated)) + tail * len(masks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--ablations", type=int, default=64)
    args = parse_run_arguments(parser)
    scorer = Scorer(precision="fp32")  # its 1e-4 agreement is fp32's
    prompts = ragtruth_prompts(scorer, args.cases, args.seed, args.k)
    masks = [np.unique(ablation_masks(len(p.chunks), args.ablations, 0.5), axis=0) for p in prompts]
    reference.subset_logprobs(scorer, prompts[0], masks[0][:1])  # warm-up
    times: dict[str, list[float]] = {"naive": [], "library": []}
    tokens, worst = {"naive": 0, "library": 0}, 0.0
    for _ in range(args.repeats):
        for method in ("naive", "library"):
            start, run_tokens, results = time.perf_counter(), 0, []
            for prompt, mask in zip(prompts, masks):
                if method == "naive":
                    logp, used = reference.subset_logprobs(scorer, prompt, mask)
                else:
                    scorer.forget_evidence()
                    logp, used = subset_logprobs(scorer, prompt, mask)
                results.append(logp)
                run_tokens += used
            times[method].append(time.perf_counter() - start)
            tokens[method] = run_tokens
            if method == "naive":
                expected = results
            else:
                worst = max(worst, max(float(np.abs(a - b).max()) for a, b in zip(results, expected)))
    if worst > 1e-4:
        raise SystemExit(f"library and naive log-probs differ by {worst:.2e} (> 1e-4)")
    ratio = statistics.median(n / m for n, m in zip(times["naive"], times["library"]))
    previous = sum(from_full_tokens(p, m) for p, m in zip(prompts, masks))
    context = statistics.mean(len(p.prefix) + sum(map(len, p.chunks)) for p in prompts)
    print(f"{len(prompts)} RAGTruth test answers (mean prompt before the question {context:.0f} tokens), "
          f"{statistics.mean(map(len, masks)):.1f} distinct masks each (K={args.k}, {args.ablations} draws); "
          f"max |library - naive| log-prob {worst:.1e}.\n")
    print(table(["method", "seconds (median)", "tokens through the model", "speed-up vs naive"], [
        ["naive: one uncached pass per mask", f"{statistics.median(times['naive']):.1f}", f"{tokens['naive']:,}",
         "1.0×"],
        ["previous scheme: each mask from the full context (counted)", "—", f"{previous:,}", "—"],
        ["library: prefix tree over the masks", f"{statistics.median(times['library']):.1f}", f"{tokens['library']:,}",
         f"{ratio:.1f}×"],
    ]))
    print(f"\n{results_machine(args.threads)}")


if __name__ == "__main__":
    main()
