"""Does the question in the scoring prompt help the gap? An exploratory ablation on the dev
partitions only (docs/results.md, "The question in the scoring prompt").

The scorer reads ``Context: ... Question: ...`` and the answer; the no-context condition keeps
the question, so the gap measures what the evidence adds beyond it. Here each dev-partition
answer is scored again in two-pass mode (default scorer, K=5) with the question left out of
both conditions, and its sentences' gap is compared, paired, with the gap the committed full-mode
cache holds (two-pass and full mode compute the gap from the same two passes).

    .venv/bin/python scripts/question_ablation.py score ragtruth            # resumable
    .venv/bin/python scripts/question_ablation.py report -o docs/results/question-ablation.md

``score`` appends one JSON line per answer to results/question-ablation/<benchmark>.jsonl,
scoring with the cached set's own scorer, K and token caps. RAGBench's dev partition is scored
on a random 600 answers (seed 0, :data:`DRAWN`), so that the three take comparable time.
``report`` needs no scorer.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "question-ablation"
FEATURES = ROOT / "results" / "features"
SCORER = "smollm2-135m-instruct"
COMMAND = ".venv/bin/python scripts/question_ablation.py report -o docs/results/question-ablation.md"
DRAWN = {"ragbench": 600}  # dev answers scored, drawn at random; the others: every dev answer


def cached_set(benchmark: str):
    """The benchmark's full-mode feature set of the default scorer in the committed cache."""
    from groundsense.eval.extract import load_cache

    features = next((s for s in load_cache(FEATURES, SCORER) if s.benchmark == benchmark and s.full_exact), None)
    if features is None:
        sys.exit(f"no full-mode {SCORER} features of {benchmark} under {FEATURES}")
    return features


def dev_partition(benchmark: str) -> pd.DataFrame:
    """The scored sentences of the benchmark's dev partition in the committed feature cache."""
    from groundsense.eval.benchmark_result import partitioned

    return partitioned(cached_set(benchmark).table)[0]


def dev_answers(benchmark: str) -> list[str]:
    """The dev answers the ablation scores, in scoring order."""
    ids = list(dict.fromkeys(dev_partition(benchmark)["case_id"]))
    if benchmark in DRAWN:
        ids = [str(i) for i in np.random.default_rng(0).permutation(ids)[:DRAWN[benchmark]]]
    return ids


def scored(benchmark: str) -> list[dict]:
    """The lines scored so far; a last line cut short by a killed run is dropped (and rescored)."""
    path = OUT / f"{benchmark}.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    try:
        return [json.loads(line) for line in lines]
    except json.JSONDecodeError:
        kept = [json.loads(line) for line in lines[:-1]]
        path.write_text("".join(json.dumps(r) + "\n" for r in kept))
        return kept


def load_cases(benchmark: str, ids: set[str]) -> dict:
    from groundsense.eval.ragbench import load_ragbench
    from groundsense.eval.ragtruth import load_ragtruth
    from groundsense.eval.tofueval import load_tofueval

    if benchmark == "ragtruth":
        cases, _ = load_ragtruth(ids=ids)
    elif benchmark == "tofueval":
        cases, _ = load_tofueval()
    else:
        cases, _ = load_ragbench(splits=["test"])  # the cache holds RAGBench's test sets
    return {c.id: c for c in cases if c.id in ids}


def score(benchmark: str) -> None:
    from groundsense import Detector
    from groundsense.eval.rows import case_row

    ids = dev_answers(benchmark)
    done = {r["case_id"] for r in scored(benchmark)}
    todo = [i for i in ids if i not in done]
    print(f"{benchmark}: {len(todo)} of {len(ids)} dev answers to score", file=sys.stderr)
    if not todo:
        return
    cases = load_cases(benchmark, set(todo))
    missing = [i for i in todo if i not in cases]
    if missing:
        sys.exit(f"{len(missing)} cached answers not found in the benchmark data, e.g. {missing[:3]}")
    config = cached_set(benchmark).config
    detector = Detector(scorer=config["scorer"], k=config["k"], mode="two_pass", calibration=False,
                        max_context_tokens=config["max_context_tokens"], max_answer_tokens=config["max_answer_tokens"])
    path = OUT / f"{benchmark}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        for n, case_id in enumerate(todo, 1):
            row = case_row(cases[case_id])
            result = detector.detect(answer=row["answer"], context=row.get("context"), passages=row.get("passages"),
                                     question="", sentences=row["sentences"])
            out.write(json.dumps({"case_id": case_id, "gap": [s.features.get("gap") for s in result.sentences]}) + "\n")
            out.flush()
            if n % 20 == 0 or n == len(todo):
                print(f"{benchmark}: {n}/{len(todo)}", file=sys.stderr, flush=True)


def paired(benchmark: str) -> pd.DataFrame | None:
    """The dev sentences scored both ways: cached ``gap`` and ``gap_without``."""
    lines = scored(benchmark)
    if not lines:
        return None
    without = {(r["case_id"], i): g for r in lines for i, g in enumerate(r["gap"])}
    dev = dev_partition(benchmark)
    dev = dev.assign(gap_without=[without.get(key) for key in zip(dev["case_id"], dev["sentence_index"])])
    return dev[dev["gap_without"].notna()].astype({"gap_without": float})


def compared(labels: np.ndarray, with_question: np.ndarray, without: np.ndarray, sources: np.ndarray,
             n_resamples: int, seed: int) -> dict[str, str]:
    """AUCs of two suspicion scores and their paired difference (without − with), as cells."""
    from groundsense.eval.bootstrap import source_bootstrap
    from groundsense.eval.tables import interval_text

    boot = source_bootstrap(labels, {"with": with_question, "without": without}, sources, n_resamples, seed)
    auc, diff = boot.intervals()["auc"], boot.difference("without", "with")
    return {"with the question": f"{auc['with']:.3f}", "without": f"{auc['without']:.3f}",
            "without − with": interval_text(diff["diff"], diff["lo"], diff["hi"], sign="+")}


def report(n_resamples: int = 2000, seed: int = 0) -> str:
    from groundsense.eval.methods import answer_mean
    from groundsense.eval.tables import markdown_table

    sentences, answers, coverage = {}, {}, []
    for benchmark in ("ragtruth", "tofueval", "ragbench"):
        both = paired(benchmark)
        if both is None:
            continue
        coverage.append(f"{benchmark} {both['case_id'].nunique()} of {dev_partition(benchmark)['case_id'].nunique()}")
        groups = [(benchmark, both)] + [(f"{benchmark}, {task}", t) for task, t in both.groupby("task")
                                        if both["task"].nunique() > 1 and t["label"].nunique() == 2]
        for name, t in groups:
            sentences[name] = {"answers": t["case_id"].nunique(), "sentences": len(t), "unsupported": int(t["label"].sum()),
                               **compared(t["label"].to_numpy(), -t["gap"].to_numpy(), -t["gap_without"].to_numpy(),
                                          t["source_id"].to_numpy(), n_resamples, seed)}
        by = both.groupby("case_id", sort=False)
        label, source = by["label"].max().to_numpy(), by["source_id"].first().to_numpy()
        for aggregation, of in (("lowest sentence gap", lambda c: by[c].min()), ("mean gap", lambda c: answer_mean(both[c], both))):
            answers[f"{benchmark}, {aggregation}"] = {
                "answers": len(label), "with an unsupported sentence": int(label.sum()),
                **compared(label, -of("gap").to_numpy(), -of("gap_without").to_numpy(), source, n_resamples, seed)}
    return "\n".join([
        "# The question in the scoring prompt (dev partitions)", "", f"`{COMMAND}`", "",
        "AUC of the gap scored with the question in both conditions (the committed feature cache) and without it "
        "(two-pass, default scorer, K=5), on the same dev-partition sentences, with the paired difference and its "
        "95% source-level interval. Dev answers scored: " + ", ".join(coverage) + ". Exploratory: no test "
        "partition is read.", "",
        "## Sentence level", "", markdown_table(pd.DataFrame(sentences).T), "",
        "## Answer level (label: the answer has an unsupported scored sentence)", "",
        markdown_table(pd.DataFrame(answers).T), ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    scoring = sub.add_parser("score", help="score a benchmark's dev answers without the question (resumable)")
    scoring.add_argument("benchmark", choices=["ragtruth", "tofueval", "ragbench"])
    rendering = sub.add_parser("report", help="the paired comparison as Markdown")
    rendering.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    if args.command == "score":
        score(args.benchmark)
    else:
        text = report()
        if args.output is None:
            print(text)
        else:
            args.output.write_text(text)
            print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
