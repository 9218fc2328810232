"""Answers per second of ``Scorer.score`` (K+2 mode) with a randomly initialised
Qwen2.5-1.5B-shaped model on RAGTruth-length inputs, and the projected time for the
whole 2,700-answer test split.

    python benchmarks/gpu_throughput.py              # CUDA, bf16, the 1.5B-class config
    python benchmarks/gpu_throughput.py --tiny       # CPU, fp32, tiny config: checks the
                                                     # library path against the naive one

For speed, random weights are as good as trained ones. Inputs are random token ids with
the token lengths of the real test split (``ragtruth_test_lengths.json``, written by
``speed.py --sections split --lengths-out``; counted with the default scorer's tokenizer,
which splits English text into a similar number of tokens as Qwen's). Answers over the
same source share their evidence ids, as in the data.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, Qwen2Config

from groundsense.scorer import EncodedAnswer, EncodedPrompt, Scorer

sys.path.insert(0, str(Path(__file__).parent))
from groundsense.scorer.reference import independent_token_scores as naive_scores

LENGTHS = Path(__file__).with_name("ragtruth_test_lengths.json")
TOLERANCE = 1e-4

# Qwen/Qwen2.5-1.5B(-Instruct) config.json
QWEN25_1_5B = dict(
    hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
    num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rms_norm_eps=1e-6,
    rope_parameters={"rope_type": "default", "rope_theta": 1e6}, tie_word_embeddings=True,
)
TINY = QWEN25_1_5B | dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                          vocab_size=1024)


def random_model(config: dict, device: torch.device, dtype: torch.dtype, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    with torch.device(device):
        return AutoModelForCausalLM.from_config(Qwen2Config(**config), dtype=dtype).eval()


def scorer_around(model: torch.nn.Module, device: torch.device, block_size: int = 64) -> Scorer:
    """A :class:`Scorer` holding ``model`` (the prompts come pre-encoded: no tokenizer)."""
    return Scorer.from_model(model.to(device), None, "random-qwen2", block_size=block_size)


def random_prompts(rows: list[dict], vocab: int, seed: int) -> list[EncodedPrompt]:
    """Random ids with each answer's token lengths; answers over one source share evidence."""
    rng = np.random.default_rng(seed)
    ids = lambda n: rng.integers(0, vocab, n).tolist()  # noqa: E731
    evidence: dict[str, tuple] = {}
    prompts = []
    for row in rows:
        if row["source"] not in evidence:
            evidence[row["source"]] = (ids(row["prefix"]), [ids(n) for n in row["chunks"]])
        prefix, chunks = evidence[row["source"]]
        n = row["answer"]
        answer = EncodedAnswer(ids(n), np.zeros((n, 2), dtype=np.int64), 0)
        prompts.append(EncodedPrompt(prefix, chunks, ids(row["middle"]), answer))
    return prompts


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def max_difference(scorer: Scorer, prompts: list[EncodedPrompt]) -> float:
    """Largest absolute difference of token log-probs and JSDs, library vs naive."""
    worst = 0.0
    for prompt in prompts:
        fast, slow = scorer.score(prompt), naive_scores(scorer, prompt)
        worst = max(worst, float(np.abs(fast.logp - slow.logp).max()), float(np.abs(fast.jsd - slow.jsd).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true",
                        help="tiny config on CPU in fp32, checked against the naive path")
    parser.add_argument("--answers", type=int, default=300, help="answers timed (a seeded sample of the split)")
    parser.add_argument("--check", type=int, default=3, help="answers compared with the naive path")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lengths", type=Path, default=LENGTHS)
    args = parser.parse_args()

    device = torch.device("cpu" if args.tiny or not torch.cuda.is_available() else "cuda")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    config = TINY if args.tiny else QWEN25_1_5B
    rows = json.loads(args.lengths.read_text())["answers"]
    sample = random.Random(args.seed).sample(rows, min(args.answers, len(rows)))
    prompts = random_prompts(sample, config["vocab_size"], args.seed)
    scorer = scorer_around(random_model(config, device, dtype, args.seed), device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"{name}, {dtype}, {scorer.n_parameters / 1e6:,.1f}M parameters, torch {torch.__version__}")

    difference = max_difference(scorer, prompts[: args.check])
    print(f"max abs difference vs naive (token logp, JSD) on {args.check} answers: {difference:.2e}")
    if dtype == torch.float32 and difference > TOLERANCE:
        sys.exit(f"FAIL: the library path differs from the naive path by more than {TOLERANCE}")

    for prompt in prompts[: args.warmup]:
        scorer.score(prompt)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    synchronize(device)
    start = time.perf_counter()
    tokens = sum(scorer.score(prompt).tokens_processed for prompt in prompts)
    synchronize(device)
    seconds = time.perf_counter() - start

    rate = len(prompts) / seconds
    projected = len(rows) / rate
    print(f"K+2 mode (K<=5): {len(prompts)} answers in {seconds:.1f} s: {rate:.1f} answers/s, "
          f"{tokens / seconds:,.0f} tokens/s")
    print(f"projected for all {len(rows):,} test answers: {projected:.0f} s ({projected / 60:.1f} min; target < 3 min)")
    if device.type == "cuda":
        print(f"peak GPU memory: {torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB")


if __name__ == "__main__":
    main()
