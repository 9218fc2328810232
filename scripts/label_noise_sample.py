"""The label-noise sample of a trained verifier's data (docs/detector-selection.md, "A trained
verifier"): 200 synthetic rows of a training set drawn with seed 0, written for reading, each with
the supported sentence it was made from and the evidence sentences nearest the claim (for a
``delete`` row, nearest among those left). A developer reads the first 50 and records, per row,
whether the claim is in fact unsupported by its evidence; the 1.5B judge scores all 200.

    .venv/bin/python scripts/label_noise_sample.py results/training/td-2.parquet \\
        -o results/training/td-2-noise-sample.md
    .venv/bin/python scripts/label_noise_sample.py results/training/td-2.parquet \\
        --judge judge:qwen2.5-coder-1.5b-instruct -o results/training/td-2-noise-judge.csv

With ``--judge``, the same 200 rows are scored by that verifier instead, one CSV line per row as it
is scored (rerun to resume), and each recipe's error rate is printed: the share of its rows the
judge calls supported (P(unsupported) below 0.5), against their synthetic label, unsupported. The
verifier runs in fp32 (``--precision`` for another).

td-1's sample (results/training/td-1-noise-sample.md) came from a build at commit eb863a6, whose
swap recipe this code no longer has: check that commit out to draw it again.
"""

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from groundsense.lexical import overlap
from groundsense_eval.data.hard_negatives import evidence_sentences
from groundsense_eval.data.training_set import row_evidence
from groundsense_eval.fits.verifier_training import training_cases

SAMPLE, READ = 200, 50


def nearest(claim: str, evidence: tuple[str, ...], n: int = 2) -> list[str]:
    pieces = [piece for text in evidence for piece in evidence_sentences(text)]
    shares = overlap(claim, pieces)
    return [pieces[i] for i in np.argsort(-shares, kind="stable")[:n]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("training_set", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--judge", help="a verifier spec: score the sample with it into OUTPUT (CSV)")
    parser.add_argument("--precision", default="fp32", help="the judge's scorer's precision (default: fp32)")
    args = parser.parse_args()
    rows = pd.read_parquet(args.training_set)
    sample = rows[rows["recipe"] != ""].sample(SAMPLE, random_state=0).reset_index(drop=True)
    cases = training_cases(sample)
    if args.judge:
        judge_sample(sample, cases, args.judge, args.precision, args.output)
        return
    lines = [f"# Label-noise sample of {args.training_set.name}", "",
             f"`.venv/bin/python scripts/label_noise_sample.py {args.training_set} -o {args.output}`", "",
             f"{SAMPLE} synthetic rows drawn with seed 0; the first {READ} are read by a developer "
             "(results/training/ holds the reading).", ""]
    for i, row in sample.iterrows():
        case = cases[row["case_id"]]
        original = case.sentence_text(case.sentences[int(row["sentence_index"])])
        evidence = row_evidence(case, row)
        lines += [f"## {i}. {row['case_id']} sentence {row['sentence_index']} ({row['detail']})", "",
                  f"- claim: {row['sentence']}", f"- made from: {original}",
                  f"- replaced: {row['replaced']!r} by {row['by']!r}",
                  *[f"- nearest evidence: {piece}" for piece in nearest(row["sentence"], evidence)], ""]
    args.output.write_text("\n".join(lines))


def judge_sample(sample: pd.DataFrame, cases: dict, spec: str, precision: str, output: Path) -> None:
    """Each row's P(unsupported) by the verifier ``spec``, appended to ``output`` as it is scored
    (the rows already there are kept); then each recipe's error rate."""
    from groundsense.verification import make_verifier

    done = set(pd.read_csv(output)["row"]) if output.exists() else set()
    verifier = make_verifier(spec, precision=precision)
    for i, row in sample.iterrows():
        if i in done:
            continue
        case = cases[row["case_id"]]
        evidence = row_evidence(case, row)
        passages = list(evidence) if case.passages is not None else [evidence[0]]
        [score] = verifier.score_sentences(case.question, passages, [row["sentence"]])
        line = pd.DataFrame([{"row": i, "case_id": row["case_id"], "sentence_index": row["sentence_index"],
                              "recipe": row["recipe"], "detail": row["detail"], "p_unsupported": round(score, 6)}])
        line.to_csv(output, mode="a", header=not output.exists(), index=False)
        print(f"row {i}: {row['recipe']} p_unsupported {score:.3f}", flush=True)
    scored = pd.read_csv(output)
    errors = scored.assign(wrong=scored["p_unsupported"] < 0.5).groupby("recipe")["wrong"].agg(["size", "sum", "mean"])
    print(errors.rename(columns={"size": "rows", "sum": "judged supported", "mean": "error rate"}).to_string())


if __name__ == "__main__":
    main()
