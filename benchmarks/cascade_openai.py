"""The cascade's cost with a judge behind an OpenAI-compatible server: the detector on every
sentence, the most suspicious 10/20/50% escalated to llama-cpp-python's server running the
default scorer's GGUF (benchmarks/llamacpp_server.py), on the same RAGTruth test answers.

    PYTHONPATH=src python benchmarks/cascade_openai.py --cases 6 --out benchmarks/cascade_openai.json

The server and the detector share the machine. The detector scores the answers once to warm
up (its evidence cache then holds every answer's evidence), then the cascade runs once per
escalated fraction, each time with a fresh verifier (no reply cached from another fraction).
Per fraction: seconds per answer of the whole cascade, the seconds spent waiting on the judge
(its calls timed), the requests and the tokens the server reported (``usage``). The server
reuses the encoding of the prompt's start shared with its previous request (the same answer's
evidence), as llama.cpp does. A measure of cost, not of accuracy: a handful of answers and a
135M judge.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from llamacpp_server import LlamaCppServer  # noqa: E402
from speed import emit_json, load_test_cases, pick_cases, results_machine  # noqa: E402

from groundsense.pipeline.detector import Detector
from groundsense.verification import make_verifier  # noqa: E402
from groundsense.verification.cascade import Cascade
from groundsense_eval.data.rows import case_row  # noqa: E402


def time_calls(judge) -> list[float]:
    """The seconds of each of ``judge``'s ``score_sentences`` calls from now on (the cascade's
    calls to the server), appended to the list returned."""
    seconds, score = [], judge.score_sentences

    def timed(*args):
        start = time.perf_counter()
        try:
            return score(*args)
        finally:
            seconds.append(time.perf_counter() - start)

    judge.score_sentences = timed
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=6)
    parser.add_argument("--per-source", type=int, default=2, help="answers per source (they share evidence)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the detector")
    parser.add_argument("--server-threads", type=int, default=1, help="threads of the llama.cpp server")
    parser.add_argument("--escalate", default="0.1,0.2,0.5", help="comma-separated escalated fractions")
    parser.add_argument("--concurrency", type=int, default=2, help="the verifier's parallel requests")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here (also printed)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = [case_row(c) for c in pick_cases(load_test_cases(), args.cases, args.per_source, args.seed)]
    detector = Detector(k=5)
    n_sentences = sum(len(r.sentences) for r in detector.detect_many(rows, progress=False))  # warm-up
    runs = []
    with LlamaCppServer(threads=args.server_threads) as server:
        for fraction in map(float, args.escalate.split(",")):
            judge = make_verifier(f"openai:{server.model}", {"url": server.url, "concurrency": str(args.concurrency)})
            judge_seconds = time_calls(judge)
            start = time.perf_counter()
            results = Cascade(detector, judge, escalate=fraction).detect_many(rows, progress=False)
            seconds = time.perf_counter() - start
            escalated = sum(r.cascade["n_escalated"] for r in results)
            runs.append({
                "escalate": fraction, "sentences_escalated": escalated,
                "seconds_per_answer": seconds / len(rows),
                "judge_seconds_per_answer": sum(judge_seconds) / len(rows),
                "judge_seconds_per_request": sum(judge_seconds) / judge.usage["requests"],
                **judge.usage,
                "tokens_per_answer": (judge.usage["prompt_tokens"] + judge.usage["completion_tokens"]) / len(rows),
                "flagged_by_the_judge": sum(s.flagged is True for r in results for s in r.sentences
                                            if s.verifier_score is not None),
            })
            print(f"escalate {fraction}: {seconds / len(rows):.2f} s per answer, {judge.usage}", file=sys.stderr,
                  flush=True)
    report = {
        "command": " ".join(["python", "benchmarks/cascade_openai.py", *sys.argv[1:]]),
        "machine": results_machine(args.threads) + f" llama.cpp server: {args.server_threads} thread(s).",
        "judge": "openai:smollm2 (llama-cpp-python's server on SmolLM2-135M-Instruct Q4_1)",
        "answers": len(rows), "sentences": n_sentences, "seed": args.seed, "concurrency": args.concurrency,
        "runs": runs,
    }
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
