"""Does the question in the scoring prompt help the gap? The dev-only ablation (docs/results.md,
"The question in the scoring prompt") and the test of candidate Q (docs/detector-selection.md,
"A prompt change: scoring without the question").

The scorer reads ``Context: ... Question: ...`` and the answer; the no-context condition keeps
the question, so the gap measures what the evidence adds beyond it. Here each answer is scored
again in two-pass mode with the question left out of both conditions (with the cached set's own
scorer, K and token caps), and its sentences' gap is compared, paired, with the gap the
committed full-mode cache holds (two-pass and full mode compute the gap from the same two passes).

    .venv/bin/python scripts/question_ablation.py score ragtruth                    # dev, resumable
    .venv/bin/python scripts/question_ablation.py report -o docs/results/question-ablation.md
    .venv/bin/python scripts/question_ablation.py score ragtruth-split --partition test
    .venv/bin/python scripts/question_ablation.py verdict -o docs/results/selection-Q.md

``score`` appends one JSON line per answer to results/question-ablation/<set>.jsonl (dev) or
results/question-ablation/test/<set>.jsonl (test). The sets: the three benchmarks' evaluation
sets (results/features) and the whole RAGTruth test split (``ragtruth-split``,
results/split-features). RAGBench's dev partition is scored on a random 600 answers (seed 0,
:data:`DRAWN`); every other partition whole. ``report`` and ``verdict`` need no scorer.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "question-ablation"
SCORER = "smollm2-135m-instruct"
# set name -> (cache, benchmark)
SETS = {"ragtruth": ("features", "ragtruth"), "tofueval": ("features", "tofueval"),
        "ragbench": ("features", "ragbench"), "ragtruth-split": ("split-features", "ragtruth")}
BENCHMARKS = ["ragtruth", "tofueval", "ragbench"]
DRAWN = {("ragbench", "dev"): 600}  # answers scored, drawn at random; elsewhere: every answer of the partition
COMMAND = ".venv/bin/python scripts/question_ablation.py report -o docs/results/question-ablation.md"
VERDICT_COMMAND = ".venv/bin/python scripts/question_ablation.py verdict -o docs/results/selection-Q.md"


@functools.cache
def cached_set(name: str):
    """The set's full-mode feature set of the default scorer in the committed cache (read once)."""
    from groundsense_eval.caches.extract import load_cache

    cache, benchmark = SETS[name]
    folder = ROOT / "results" / cache
    features = next((s for s in load_cache(folder, SCORER) if s.benchmark == benchmark and s.full_exact), None)
    if features is None:
        sys.exit(f"no full-mode {SCORER} features of {benchmark} under {folder}")
    return features


def partition(name: str, which: str) -> pd.DataFrame:
    """The scored sentences of a set's dev or test partition in the committed feature cache."""
    from groundsense_eval.statistics.benchmark_result import partitioned

    dev, test = partitioned(cached_set(name).table)
    return dev if which == "dev" else test


def answers_to_score(name: str, which: str) -> list[str]:
    """The answers of a partition the ablation scores, in scoring order."""
    ids = list(dict.fromkeys(partition(name, which)["case_id"]))
    if (name, which) in DRAWN:
        ids = [str(i) for i in np.random.default_rng(0).permutation(ids)[:DRAWN[name, which]]]
    return ids


def scored_path(name: str, which: str) -> Path:
    return OUT / f"{name}.jsonl" if which == "dev" else OUT / which / f"{name}.jsonl"


def scored(name: str, which: str) -> list[dict]:
    """The lines scored so far; a last line cut short by a killed run is dropped (and rescored)."""
    path = scored_path(name, which)
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
    """The benchmark's cases with these ids, from the splits `groundsense eval extract` scored."""
    from groundsense_eval.data.benchmarks import DEFAULT_SPLITS, load_benchmark

    cases, _ = load_benchmark(benchmark, DEFAULT_SPLITS[benchmark])
    return {c.id: c for c in cases if c.id in ids}


def score(name: str, which: str) -> None:
    from groundsense import Detector
    from groundsense_eval.data.rows import case_row

    ids = answers_to_score(name, which)
    done = {r["case_id"] for r in scored(name, which)}
    path = scored_path(name, which)
    path.parent.mkdir(parents=True, exist_ok=True)
    # An answer already scored for another set of the benchmark (the split holds the sample's) is copied.
    elsewhere = {r["case_id"]: r for other in SETS for part in ("dev", "test") if SETS[other][1] == SETS[name][1]
                 and (other, part) != (name, which) for r in scored(other, part)}
    copied = [elsewhere[i] for i in ids if i not in done and i in elsewhere]
    with path.open("a") as out:
        out.write("".join(json.dumps(r) + "\n" for r in copied))
    todo = [i for i in ids if i not in done and i not in elsewhere]
    print(f"{name} {which}: {len(todo)} of {len(ids)} answers to score ({len(copied)} copied)", file=sys.stderr)
    if not todo:
        return
    cases = load_cases(SETS[name][1], set(todo))
    missing = [i for i in todo if i not in cases]
    if missing:
        sys.exit(f"{len(missing)} cached answers not found in the benchmark data, e.g. {missing[:3]}")
    config = cached_set(name).config
    detector = Detector(scorer=config["scorer"], k=config["k"], mode="two_pass", calibration=False,
                        max_context_tokens=config["max_context_tokens"], max_answer_tokens=config["max_answer_tokens"])
    with path.open("a") as out:
        for n, case_id in enumerate(todo, 1):
            row = case_row(cases[case_id])
            result = detector.detect(answer=row["answer"], context=row.get("context"), passages=row.get("passages"),
                                     question="", sentences=row["sentences"])
            out.write(json.dumps({"case_id": case_id, "gap": [s.features.get("gap") for s in result.sentences]}) + "\n")
            out.flush()
            if n % 20 == 0 or n == len(todo):
                print(f"{name} {which}: {n}/{len(todo)}", file=sys.stderr, flush=True)


def paired(name: str, which: str) -> pd.DataFrame | None:
    """A partition's sentences scored both ways: cached ``gap`` and ``gap_without``."""
    lines = scored(name, which)
    if not lines:
        return None
    without = {(r["case_id"], i): g for r in lines for i, g in enumerate(r["gap"])}
    sentences = partition(name, which)
    keys = zip(sentences["case_id"], sentences["sentence_index"])
    sentences = sentences.assign(gap_without=[without.get(key) for key in keys])
    return sentences[sentences["gap_without"].notna()].astype({"gap_without": float})


def compared(labels: np.ndarray, with_question: np.ndarray, without: np.ndarray, sources: np.ndarray,
             n_resamples: int, seed: int) -> dict:
    """AUCs of two suspicion scores and their paired difference (without − with)."""
    from groundsense_eval.statistics.bootstrap import source_bootstrap

    boot = source_bootstrap(labels, {"with": with_question, "without": without}, sources, n_resamples, seed)
    auc = boot.intervals()["auc"]
    return {"with the question": auc["with"], "without": auc["without"], **boot.difference("without", "with")}


def cells(result: dict) -> dict[str, str]:
    from groundsense_eval.reports.tables import interval_text

    return {"with the question": f"{result['with the question']:.3f}", "without": f"{result['without']:.3f}",
            "without − with": interval_text(result["diff"], result["lo"], result["hi"], sign="+")}


def tables(names: list[str], which: str, by_task: bool, n_resamples: int, seed: int
           ) -> tuple[dict, dict, dict, dict[str, tuple[int, int]]]:
    """Sentence-level results per set (and task), their table rows, the answer-level rows, and
    each set's answers (scored, in the partition)."""
    from groundsense_eval.statistics.methods import answer_mean

    results, sentences, answers, coverage = {}, {}, {}, {}
    for name in names:
        both = paired(name, which)
        if both is None:
            continue
        coverage[name] = (both["case_id"].nunique(), partition(name, which)["case_id"].nunique())
        groups = [(name, both)] + [(f"{name}, {task}", t) for task, t in both.groupby("task")
                                   if by_task and both["task"].nunique() > 1 and t["label"].nunique() == 2]
        for label, t in groups:
            result = compared(t["label"].to_numpy(), -t["gap"].to_numpy(), -t["gap_without"].to_numpy(),
                              t["source_id"].to_numpy(), n_resamples, seed)
            results[label] = result
            sentences[label] = {"answers": t["case_id"].nunique(), "sentences": len(t),
                                "unsupported": int(t["label"].sum()), **cells(result)}
        by = both.groupby("case_id", sort=False)
        label, source = by["label"].max().to_numpy(), by["source_id"].first().to_numpy()
        for aggregation, of in (("lowest sentence gap", lambda c, by=by: by[c].min()),
                                ("mean gap", lambda c, both=both: answer_mean(both[c], both))):
            answers[f"{name}, {aggregation}"] = {
                "answers": len(label), "with an unsupported sentence": int(label.sum()),
                **cells(compared(label, -of("gap").to_numpy(), -of("gap_without").to_numpy(), source,
                                 n_resamples, seed))}
    return results, sentences, answers, coverage


def covered(coverage: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{name} {done} of {total}" for name, (done, total) in coverage.items())


def report(n_resamples: int = 2000, seed: int = 0) -> str:
    """The dev-only ablation."""
    from groundsense_eval.reports.tables import markdown_table

    _, sentences, answers, coverage = tables(BENCHMARKS, "dev", True, n_resamples, seed)
    return "\n".join([
        "# The question in the scoring prompt (dev partitions)", "", f"`{COMMAND}`", "",
        "AUC of the gap scored with the question in both conditions (the committed feature cache) and without it "
        "(two-pass, default scorer, K=5), on the same dev-partition sentences, with the paired difference and its "
        "95% source-level interval. Dev answers scored: " + covered(coverage) + ". Exploratory: no test "
        "partition is read.", "",
        "## Sentence level", "", markdown_table(pd.DataFrame(sentences).T), "",
        "## Answer level (label: the answer has an unsupported scored sentence)", "",
        markdown_table(pd.DataFrame(answers).T), ""])


def verdict(n_resamples: int = 2000, seed: int = 0) -> str:
    """Candidate Q on the test partitions, and the rule of docs/detector-selection.md."""
    from groundsense_eval.reports.tables import markdown_table

    results, sentences, answers, coverage = tables([*BENCHMARKS, "ragtruth-split"], "test", False, n_resamples, seed)
    complete = set(coverage) == set(SETS) and all(done == total for done, total in coverage.values())
    better = [b for b in BENCHMARKS if b in results and results[b]["lo"] > 0]
    worse = [b for b in BENCHMARKS if b in results and results[b]["hi"] < 0]
    split = results.get("ragtruth-split", {}).get("diff")
    adopted = complete and len(better) >= 2 and not worse and split is not None and split >= 0
    rule = (f"significantly better on {len(better)} benchmark(s) ({', '.join(better) or 'none'}); significantly worse "
            f"on {len(worse)} ({', '.join(worse) or 'none'}); whole-split difference "
            f"{'not measured' if split is None else f'{split:+.3f}'}: "
            + ("adopt" if adopted else "do not adopt" if complete
               else "no verdict until every test partition is scored"))
    return "\n".join([
        "# Detector selection: candidate Q (scoring without the question)", "", f"`{VERDICT_COMMAND}`", "",
        "Protocol and rule: docs/detector-selection.md, \"A prompt change\". The gap scored without the question "
        "(two-pass, default scorer, K=5) against the committed gap scored with it, on the same test-partition "
        "sentences, paired source-level bootstrap. Test answers scored: " + covered(coverage) + ".", "",
        "## Sentence level (the rule reads these)", "", markdown_table(pd.DataFrame(sentences).T), "",
        "## Answer level (reported, not part of the rule)", "", markdown_table(pd.DataFrame(answers).T), "",
        "## Verdict", "", rule + ".", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    scoring = sub.add_parser("score", help="score a set's answers without the question (resumable)")
    scoring.add_argument("set", choices=list(SETS))
    scoring.add_argument("--partition", choices=["dev", "test"], default="dev")
    for command, what in (("report", "the dev-only ablation"), ("verdict", "candidate Q's test and the rule")):
        sub.add_parser(command, help=f"{what} as Markdown").add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    if args.command == "score":
        score(args.set, args.partition)
        return
    text = report() if args.command == "report" else verdict()
    if args.output is None:
        print(text)
    else:
        args.output.write_text(text)
        print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
