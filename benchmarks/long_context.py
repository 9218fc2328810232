"""Evidence as long as retrieval returns it: sentence AUC, seconds per answer and peak memory of
RAGTruth QA answers whose passages are padded with other sources' passages (distractors) to
about 2k, 4k and 7.5k scorer tokens (the default scorer's window is 8,192, and the prompt,
question and answer need the rest), in two-pass and K+2 (full) mode, each with a context budget
that keeps all the evidence and with the default budget (1,800 tokens), which cuts it.

    PYTHONPATH=src python benchmarks/long_context.py --threads 2 --answers 60 \
        --cache results/long-context --out benchmarks/long_context.json

The answers are drawn (seeded) from the RAGTruth test split's seeded *dev* partition, the one
every tuning choice reads (docs/detector-selection.md); the distractors are other dev QA
sources' passages, inserted at seeded random positions (``groundsense_eval/data/distractors.py``). Each
configuration runs in its own process (its peak RSS is that process's) through ``groundsense
eval extract``'s resumable cache under ``--cache/<evidence tokens>/``, so a stopped run resumes
where it stopped, and growing ``--answers`` only scores the new ones. ``--report`` renders the
JSON from the caches without scoring.

The sentence score is the product's: the gap in two-pass mode, ``sensitivity`` (the shipped
calibration) in full mode.
"""

from __future__ import annotations

import argparse
import json
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from speed import emit_json, load_test_cases, results_machine  # noqa: E402

SIZES = (2000, 4000, 7500)  # evidence tokens
DEFAULT_BUDGET = 1800  # DetectorConfig.max_context_tokens
MODES = ("two_pass", "full")
K = 5


def dev_qa_cases(seed: int) -> list:
    """The RAGTruth test split's QA answers in the seeded dev partition (as the reports cut it)."""
    import pandas as pd

    from groundsense_eval.data.split import DEV, assign_partition

    cases = load_test_cases()
    table = pd.DataFrame({"source_id": [c.source_id for c in cases], "task": [c.task for c in cases]})
    partition = assign_partition(table, seed=seed)
    return [c for c, p in zip(cases, partition) if p == DEV and c.task == "QA"]


def padded_cases(answers: int, seed: int) -> dict[int, list]:
    """For each size, the first ``answers`` of a seeded order of the dev QA answers, padded."""
    import random

    from groundsense.scorer import Scorer
    from groundsense_eval.data.distractors import with_distractors

    cases = dev_qa_cases(seed)
    pool = [(c.source_id, p) for c in {c.source_id: c for c in cases}.values() for p in c.passages]
    random.Random(seed).shuffle(cases)
    tokenizer = Scorer().tokenizer
    lengths: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in lengths:
            lengths[text] = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        return lengths[text]

    return {size: [with_distractors(c, pool, count, size, seed) for c in cases[:answers]] for size in SIZES}


def configurations() -> list[dict]:
    """Every (size, mode, budget): all the evidence kept (size + 300 tokens for the separators'
    slack) and the default budget; two-pass first, being the cheaper."""
    return [{"size": size, "mode": mode, "budget": budget}
            for mode in MODES for size in SIZES for budget in (size + 300, DEFAULT_BUDGET)]


def cache_of(root: Path, size: int) -> Path:
    return root / f"evidence-{size}"


def run_one(spec: dict, cases_file: Path, root: Path) -> None:
    """One configuration, in this process: extract into the cache, then record peak RSS."""
    from groundsense.config import DetectorConfig
    from groundsense.pipeline.detector import Detector
    from groundsense_eval.caches.extract import extract

    cases = pickle.loads(cases_file.read_bytes())[spec["size"]]
    detector = Detector.from_config(DetectorConfig(mode=spec["mode"], k=K, max_context_tokens=spec["budget"],
                                                   calibration=False))
    summary = extract(detector, cases, cache_of(root, spec["size"]), progress=True)
    import torch

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
    memory = summary.folder / "peak_rss.json"
    if summary.written:  # a run that scored nothing says nothing of the peak
        known = json.loads(memory.read_text())["peak_rss_mib"] if memory.exists() else 0
        memory.write_text(json.dumps({"peak_rss_mib": round(max(known, peak), 1),
                                      "threads": torch.get_num_threads()}) + "\n")
    print(f"{summary.folder}: {summary.written} scored, {summary.skipped} cached, {summary.errors} errors")


def product_score(table, mode: str):
    """The sentence score the product ranks by: ``sensitivity`` (the shipped calibration) in full
    mode, the gap (negated: higher is less supported) in two-pass mode."""
    from groundsense.calibration.calibration import shipped_calibration

    if mode == "full":
        calibration = shipped_calibration("smollm2-135m-instruct", K)
        return calibration.score("sensitivity", {f: table[f].to_numpy(float) for f in calibration.inputs})
    return -table["gap"].to_numpy(float)


def summarise(root: Path) -> list[dict]:
    """Per cached configuration: answers, sentence AUC of the product's score, seconds per
    answer, evidence tokens scored, chunks, peak RSS and the threads it ran on."""
    from sklearn.metrics import roc_auc_score

    from groundsense_eval.caches.extract import load_cache

    rows = []
    for size in SIZES:
        for features in load_cache(cache_of(root, size)):
            table, config = features.table, features.config
            score = product_score(table, config["mode"])
            per_answer = table.drop_duplicates("case_id")
            memory = json.loads((features.folder / "peak_rss.json").read_text()) \
                if (features.folder / "peak_rss.json").exists() else {}
            rows.append({
                "evidence_tokens": size, "mode": config["mode"], "budget": config["max_context_tokens"],
                "answers": int(table["case_id"].nunique()), "sentences": len(table),
                "unsupported": int(table["label"].sum()),
                "sentence_auc": round(float(roc_auc_score(table["label"], score)), 3),
                "seconds_per_answer": round(float(per_answer["seconds"].mean()), 2),
                "prompt_tokens": round(float(per_answer["prompt_tokens"].mean())),
                "chunks": round(float(per_answer["n_chunks"].mean()), 1),
                "peak_rss_mib": memory.get("peak_rss_mib"), "threads": memory.get("threads"),
            })
    return rows


def cut_against_kept(root: Path) -> list[dict]:
    """Per size and mode, on the answers both budgets scored: the sentence AUC with the evidence
    cut at the default budget minus the AUC with all of it kept, with a source-level paired
    bootstrap interval (95%, 2,000 resamples)."""
    from groundsense_eval.caches.extract import load_cache
    from groundsense_eval.statistics.bootstrap import source_bootstrap

    rows = []
    key = ["case_id", "sentence_index"]
    for size in SIZES:
        by_budget: dict[tuple[str, int], object] = {}
        for features in load_cache(cache_of(root, size)):
            by_budget[features.config["mode"], features.config["max_context_tokens"]] = features.table
        for mode in MODES:
            kept, cut = by_budget.get((mode, size + 300)), by_budget.get((mode, DEFAULT_BUDGET))
            if kept is None or cut is None:
                continue
            common = kept.set_index(key).index.intersection(cut.set_index(key).index)
            kept, cut = (t.set_index(key).loc[common].reset_index() for t in (kept, cut))
            scores = {"kept": product_score(kept, mode), "cut": product_score(cut, mode)}
            result = source_bootstrap(kept["label"].to_numpy(), scores, kept["source_id"].to_numpy())
            diff = result.difference("cut", "kept")
            rows.append({"evidence_tokens": size, "mode": mode, "sentences": len(kept),
                         "unsupported": int(kept["label"].sum()), "sources": int(kept["source_id"].nunique()),
                         "auc_cut_minus_kept": round(diff["diff"], 3),
                         "interval": [round(diff["lo"], 3), round(diff["hi"], 3)]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=60)
    parser.add_argument("--cache", type=Path, default=Path("results/long-context"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=None, help="run only configurations whose mode is this (two_pass or full)")
    parser.add_argument("--report", action="store_true", help="render the JSON from the caches; score nothing")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a configuration, in a child process
    parser.add_argument("--cases-file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.one:
        run_one(json.loads(args.one), args.cases_file, args.cache)
        return
    if not args.report:
        with tempfile.TemporaryDirectory() as folder:  # the padded cases, built once for every child
            cases_file = Path(folder) / "cases.pickle"
            cases_file.write_bytes(pickle.dumps(padded_cases(args.answers, args.seed)))
            for spec in configurations():
                if args.only and spec["mode"] != args.only:
                    continue
                start = time.time()
                print(f"== {spec}", flush=True)
                subprocess.run([sys.executable, __file__, "--one", json.dumps(spec), "--cases-file", str(cases_file),
                                "--cache", str(args.cache), "--threads", str(args.threads)], check=True)
                print(f"   {time.time() - start:.0f} s", flush=True)
    rows = summarise(args.cache)
    threads = {row["threads"] for row in rows}  # the runs' own, when the report is rendered later
    emit_json({"machine": results_machine(threads.pop() if len(threads) == 1 else args.threads),
               "answers_asked": args.answers, "configurations": rows,
               "cut_against_kept": cut_against_kept(args.cache)}, args.out)


if __name__ == "__main__":
    main()
