"""Does bf16 flag what fp32 flags? Issue #41's rule for making bf16 the default, read off two
cached feature sets of the same answers, one scored in fp32 and one in bf16:

- flag agreement at the shipped calibration's thresholds, per sentence and per answer
  (goal: at least 99% each);
- paired AUC differences of the product's score (``sensitivity``, as the detector serves it),
  per sentence (span) and per answer (its most suspicious sentence), each with a 95%
  source-level bootstrap interval (goal: every interval within ±0.01).

    PYTHONPATH=src python benchmarks/precision_agreement.py --cache results/precision/test \\
        --out benchmarks/precision_agreement.json

The caches come from ``scripts/precision_caches.sh`` (RAGTruth test answers scored in both
precisions on one device). Every answer both hold counts, dev and test partitions alike: the
rule compares two numeric paths of one score and chooses nothing from the data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from speed import emit_json  # noqa: E402

from groundsense.eval.caches.extract import load_cache
from groundsense.eval.reports.operating import OperatingPoint, answer_outcomes, judged
from groundsense.eval.statistics.bootstrap import source_bootstrap
from groundsense.judging.calibration import shipped_calibration

GOAL_AGREEMENT, GOAL_AUC = 0.99, 0.01
KEY = ["case_id", "sentence_index"]


def by_precision(cache: Path, scorer: str) -> dict[str, pd.DataFrame]:
    """The full-mode feature tables of ``scorer`` under ``cache``, by precision, on the
    sentences every precision holds, in one order."""
    tables = {s.config.get("precision", "fp32"): s.rows for s in load_cache(cache, scorer)
              if s.config["mode"] == "full" and s.benchmark == "ragtruth"}
    if not {"fp32", "bf16"} <= set(tables):
        sys.exit(f"{cache} needs full-mode RAGTruth caches of {scorer} in fp32 and bf16; it has {sorted(tables)}")
    common = tables["fp32"].set_index(KEY).index.intersection(tables["bf16"].set_index(KEY).index)
    return {p: t.set_index(KEY).loc[common].reset_index() for p, t in tables.items() if p in ("fp32", "bf16")}


def agreement(a: np.ndarray, b: np.ndarray) -> dict:
    return {"agreement": round(float(np.mean(a == b)), 4), "flagged_fp32": int(a.sum()),
            "flagged_bf16": int(b.sum()), "fp32_only": int((a & ~b).sum()), "bf16_only": int((b & ~a).sum()),
            "n": len(a)}


def auc_difference(y: np.ndarray, fp32: np.ndarray, bf16: np.ndarray, sources: np.ndarray, seed: int) -> dict:
    result = source_bootstrap(y, {"fp32": fp32, "bf16": bf16}, sources, seed=seed)
    diff = result.difference("bf16", "fp32")
    return {"auc_fp32": round(result.point["fp32"], 4), "auc_bf16": round(result.point["bf16"], 4),
            "bf16_minus_fp32": round(diff["diff"], 4), "interval": [round(diff["lo"], 4), round(diff["hi"], 4)],
            "within_goal": bool(-GOAL_AUC <= diff["lo"] and diff["hi"] <= GOAL_AUC)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path("results/precision/test"))
    parser.add_argument("--scorer", default="smollm2-135m-instruct")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    args = parser.parse_args()
    calibration = shipped_calibration(args.scorer, args.k)
    if calibration is None:
        sys.exit(f"no shipped calibration for {args.scorer} at K={args.k}")
    tables = by_precision(args.cache, args.scorer)
    judgements = {p: judged(calibration, t, OperatingPoint()) for p, t in tables.items()}
    scored = {p: j[j["score"].notna()] for p, j in judgements.items()}
    if not scored["fp32"][KEY].equals(scored["bf16"][KEY]):
        sys.exit("the two precisions scored different sentences; compare them with `groundsense eval compare`")
    sentence = {p: (s["score"] >= s["threshold"]).to_numpy() for p, s in scored.items()}
    answers = {p: answer_outcomes(j) for p, j in judgements.items()}
    top = {p: s.groupby("case_id", sort=False).agg(label=("label", "max"), score=("score", "max"),
                                                    source_id=("source_id", "first"))
           for p, s in scored.items()}  # an answer's most suspicious scored sentence
    first = scored["fp32"]
    report = {
        "command": "PYTHONPATH=src python benchmarks/precision_agreement.py " + " ".join(sys.argv[1:]),
        "cache": str(args.cache), "scorer": args.scorer, "k": args.k,
        "answers": int(first["case_id"].nunique()), "sources": int(first["source_id"].nunique()),
        "sentences": len(first), "unsupported_sentences": int(first["label"].sum()),
        "flag_agreement": {
            "sentence": agreement(sentence["fp32"], sentence["bf16"]),
            "answer": agreement(answers["fp32"]["flagged"].to_numpy(), answers["bf16"]["flagged"].to_numpy()),
        },
        "auc": {
            "span": auc_difference(first["label"].to_numpy(), first["score"].to_numpy(),
                                   scored["bf16"]["score"].to_numpy(), first["source_id"].to_numpy(), args.seed),
            "answer": auc_difference(top["fp32"]["label"].to_numpy(), top["fp32"]["score"].to_numpy(),
                                     top["bf16"]["score"].loc[top["fp32"].index].to_numpy(),
                                     top["fp32"]["source_id"].to_numpy(), args.seed),
        },
        "max_abs_score_difference": round(float(np.abs(first["score"].to_numpy()
                                                       - scored["bf16"]["score"].to_numpy()).max()), 4),
    }
    report["goals_met"] = bool(
        all(level["agreement"] >= GOAL_AGREEMENT for level in report["flag_agreement"].values())
        and all(level["within_goal"] for level in report["auc"].values()))
    emit_json(report, args.out)


if __name__ == "__main__":
    main()
