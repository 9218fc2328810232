"""Profile ``Scorer.score`` (K+2) with pyinstrument on a few seeded RAGTruth test answers.

    PYTHONPATH=src python benchmarks/profile_library.py --cases 2 --threads 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyinstrument import Profiler
from pyinstrument.renderers import ConsoleRenderer

from groundsense.scorer import Scorer

sys.path.insert(0, str(Path(__file__).parent))
from speed import parse_run_arguments, ragtruth_prompts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=2)
    parser.add_argument("--tasks", default="Data2txt,QA,Summary")
    args = parse_run_arguments(parser)
    scorer = Scorer()
    prompts = ragtruth_prompts(scorer, args.cases, args.seed, tasks=set(args.tasks.split(",")))
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
