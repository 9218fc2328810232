"""Prototype of a library change, measured here before it goes into ``src/``: score all
answers over the same evidence together, so every evidence prefix is encoded once.

Conditions are visited in the order ``Scorer.score`` visits them (full, then without chunk
K-1 ... 0, then no context). For each, the evidence part is encoded once into the KV
cache, then every answer's tail (middle + answer) runs on top of it and the cache is
cropped back to the evidence. Tokens processed equal the lower bound of ``speed.py``.

    PYTHONPATH=src python benchmarks/prototype_grouped.py --answers 3 --tasks QA --threads 1
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from itertools import chain
from pathlib import Path

import numpy as np
import torch

from groundsense.scorer import EncodedPrompt, Scorer, TokenScores, _crop

sys.path.insert(0, str(Path(__file__).parent))
from speed import Encoder, load_test_cases, pick_cases  # noqa: E402


@torch.inference_mode()
def grouped_scores(scorer: Scorer, prompts: list[EncodedPrompt]) -> list[TokenScores]:
    """K+2 scores of answers that share ``prefix`` and ``chunks`` (the evidence)."""
    first = prompts[0]
    assert all(p.prefix == first.prefix and p.chunks == first.chunks for p in prompts)
    n_chunks = len(first.chunks)
    ends = np.cumsum([len(first.prefix)] + [len(c) for c in first.chunks])
    targets = [torch.tensor(p.answer.ids, device=scorer.device) for p in prompts]
    logp = [np.zeros((2 + n_chunks, len(p.answer.ids))) for p in prompts]
    jsd = [np.zeros_like(x) for x in logp]
    processed = [0] * len(prompts)  # the shared evidence is charged to the first answer
    full: list[torch.Tensor] = []

    def tails(cache, row: int) -> None:
        evidence = cache.get_seq_length()
        for a, prompt in enumerate(prompts):
            tail = prompt.middle + prompt.answer.ids[:-1]
            logits = scorer._forward(tail, cache, len(prompt.answer.ids)).logits
            if row == 0:
                full.append(torch.log_softmax(logits[0].float(), dim=-1))
                logp[a][0] = full[a].gather(1, targets[a][:, None])[:, 0].double().cpu().numpy()
            else:
                logp[a][row], jsd[a][row] = scorer._compare(full[a], logits, targets[a])
            processed[a] += len(tail)
            _crop(cache, evidence)

    evidence_ids = first.prefix + list(chain.from_iterable(first.chunks))
    cache = scorer.model(input_ids=torch.tensor([evidence_ids], device=scorer.device), use_cache=True, logits_to_keep=1).cache
    processed[0] += len(evidence_ids)
    tails(cache, 0)
    for k in reversed(range(n_chunks)):
        _crop(cache, int(ends[k]))
        suffix = list(chain.from_iterable(first.chunks[k + 1 :]))
        if suffix:
            scorer.model(input_ids=torch.tensor([suffix], device=scorer.device), cache=cache, use_cache=True, logits_to_keep=1)
            processed[0] += len(suffix)
        tails(cache, 2 + k)
    _crop(cache, len(first.prefix))
    tails(cache, 1)
    return [TokenScores(l, j, n) for l, j, n in zip(logp, jsd, processed)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=3, help="answers over one RAGTruth source")
    parser.add_argument("--tasks", default="QA")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    scorer = Scorer()
    cases = pick_cases(load_test_cases(), args.answers, args.answers, args.seed, set(args.tasks.split(",")))
    by_source = defaultdict(list)
    for case in cases:
        by_source[case.source_id].append(Encoder(scorer, 5).item(case).prompt)
    prompts = next(iter(by_source.values()))
    scorer.score(prompts[0], leave_one_out=False)  # warm-up

    start = time.perf_counter()
    single = [scorer.score(p) for p in prompts]
    t_single = time.perf_counter() - start
    start = time.perf_counter()
    grouped = grouped_scores(scorer, prompts)
    t_grouped = time.perf_counter() - start
    diff = max(float(np.abs(a.logp - b.logp).max()) for a, b in zip(single, grouped))
    diff = max(diff, *(float(np.abs(a.jsd - b.jsd).max()) for a, b in zip(single, grouped)))
    print(f"{len(prompts)} answers over one source: Scorer.score {t_single:.2f} s, "
          f"{sum(s.tokens_processed for s in single):,} tokens; grouped {t_grouped:.2f} s, "
          f"{sum(s.tokens_processed for s in grouped):,} tokens; speed-up {t_single / t_grouped:.2f}x; "
          f"max abs difference {diff:.1e}")


if __name__ == "__main__":
    main()
