"""Profile ``Scorer.score`` (K+2) with pyinstrument on a few seeded RAGTruth test answers.

    PYTHONPATH=src python benchmarks/profile_library.py --cases 2 --threads 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from pyinstrument import Profiler
from pyinstrument.renderers import ConsoleRenderer

from groundsense.scorer import Scorer

sys.path.insert(0, str(Path(__file__).parent))
from speed import Encoder, load_test_cases, pick_cases  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=2)
    parser.add_argument("--tasks", default="Data2txt,QA,Summary")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    scorer = Scorer()
    cases = pick_cases(load_test_cases(), args.cases, 1, args.seed, set(args.tasks.split(",")))
    prompts = [Encoder(scorer, 5).item(c).prompt for c in cases]
    scorer.score(prompts[0], leave_one_out=False)  # warm-up
    profiler = Profiler(interval=0.005)
    with profiler:
        for prompt in prompts:
            scorer.score(prompt)
    print(profiler.output_text(unicode=True, color=False, show_all=False))
    flat = profiler.output(ConsoleRenderer(unicode=True, flat=True, show_all=True))  # self time per function
    print("\n".join(flat.splitlines()[:40]))


if __name__ == "__main__":
    main()
