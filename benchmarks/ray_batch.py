"""Answers per second of `groundsense batch` with the local engine and with the Ray engine
at 1 and 2 CPU actors, on the same RAGTruth test answers.

    PYTHONPATH=src python benchmarks/ray_batch.py --cases 12 --threads 1 --out ray.md

Each configuration runs as the command a user types, in a fresh process (Ray: a fresh
local runtime on this machine's cores), into a fresh output: the wall time includes
start-up (Python, torch, the scorer; for Ray also the runtime, the sort and the actors).
The same command is then run again on its complete output, which scores nothing: that
wall time is the fixed start-up cost, and the last column is the answers per second
once started. The outputs are checked to hold the same records as the local engine's.
With ``--repeats 2`` the configurations run in the order A B C C B A, so that a load that
drifts during the benchmark weighs on each alike; the table gives each run and the mean.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).parent))
from speed import load_test_cases, pick_cases, results_machine, table  # noqa: E402

from groundsense_eval.data.rows import case_row  # noqa: E402


def run(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--per-source", type=int, default=2, help="answers per source (they share evidence)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process / per actor")
    parser.add_argument("--actors", default="1,2", help="Ray actor counts to measure")
    parser.add_argument("--rows-per-batch", type=int, default=2, help="answers per actor call")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each configuration (order A B C C B A ...)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()

    cases = pick_cases(load_test_cases(), args.cases, args.per_source, args.seed)
    base = [sys.executable, "-m", "groundsense.cli", "--threads", str(args.threads), "batch"]
    configs = [("local", "-", [])] + [
        ("ray", n, ["--engine", "ray", "--actors", n, "--rows-per-batch", str(args.rows_per_batch)])
        for n in args.actors.split(",")
    ]
    rows, outputs, runs = [], {}, {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.jsonl"
        source.write_text("".join(json.dumps(case_row(c)) + "\n" for c in cases))
        order = [c if r % 2 == 0 else configs[len(configs) - 1 - i]
                 for r in range(args.repeats) for i, c in enumerate(configs)]
        for repeat, (engine, actors, options) in enumerate(order):
            out = Path(folder) / f"{engine}-{actors}-{repeat}.jsonl"
            command = base + [str(source), "-o", str(out), "--no-progress", *options]
            wall = run(command)
            fixed = run(command)  # the output is complete: start-up only
            outputs[(engine, actors, repeat)] = sorted(out.read_text().splitlines())
            runs.setdefault((engine, actors), []).append((wall, fixed))
            print(engine, actors, f"{wall:.1f}", f"{fixed:.1f}", file=sys.stderr)
    for engine, actors, _ in configs:
        measured = runs[(engine, actors)]
        walls, fixeds = [w for w, _ in measured], [f for _, f in measured]
        rows.append([engine, actors, " / ".join(f"{w:.1f}" for w in walls), f"{len(cases) / mean(walls):.3f}",
                     " / ".join(f"{f:.1f}" for f in fixeds), f"{len(cases) / (mean(walls) - mean(fixeds)):.3f}"])
    reference = outputs[next(iter(outputs))]
    same = all(lines == reference for lines in outputs.values())
    errors = sum('"error"' in line for line in reference)
    tasks = sorted({c.task for c in cases})
    report = "\n\n".join([
        f"Machine: {results_machine(args.threads)}",
        f"Cases: {len(cases)} RAGTruth test answers (seed {args.seed}; tasks {', '.join(tasks)}; up to "
        f"{args.per_source} per source), {errors} error records, K=5, default scorer, fp32; "
        f"{args.threads} torch thread(s) per process or actor, {args.rows_per_batch} answers per actor call; "
        f"{args.repeats} run(s) of each, in the order {' '.join(e if a == '-' else f'{e}:{a}' for e, a, _ in order)}.",
        table(["engine", "actors", "wall s (each run)", "answers/s (mean wall)", "start-up s (rerun, nothing to score)",
               "answers/s after start-up (means)"], rows),
        f"Records identical to the local engine's (sorted lines): {'yes' if same else 'NO'}.",
        f"Benchmark wall time: {time.perf_counter() - started:.0f} s.",
    ])
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
