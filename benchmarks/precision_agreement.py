"""Does bf16 flag what fp32 flags? Issue #41's rule for making bf16 the default, read off two
cached feature sets of the same answers, one scored in fp32 and one in bf16:

- flag agreement at the shipped calibration's thresholds, per sentence and per answer
  (goal: at least 99% each);
- paired AUC differences of the product's score (``sensitivity``, as the detector serves it),
  per sentence (span) and per answer (its most suspicious sentence), each with a 95%
  source-level bootstrap interval (goal: every interval within ±0.01).

    PYTHONPATH=src python benchmarks/precision_agreement.py --cache results/precision/test \\
        --out benchmarks/precision_agreement.json

The rule's figures judge both precisions by the fp32 calibration. What ships pairs each
precision with its own calibration and fusion, so ``shipped_pairings`` reports the same
agreement for those pairings, and each pairing's flags against the labels (precision, recall,
F1 and flag rate, and the paired F1 difference): ``sensitivity`` under each precision's calibration, and the fused
score, the default (issue #52), under each precision's lexical fusion (it needs the lexical
signals: ``groundsense eval lexical ragtruth --cache CACHE``).

The caches come from ``scripts/precision_caches.sh`` (RAGTruth test answers scored in both
precisions on one device). Every answer both hold counts, dev and test partitions alike: the
rule compares two numeric paths of one score and chooses nothing from the data.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from groundsense.calibration import flag_intervals, paired_f1, shipped_calibration, shipped_lexical_fusion
from groundsense_eval.caches.extract import FeatureSet, load_cache
from groundsense_eval.reports.default_score import product_judgements
from groundsense_eval.reports.fusion import fusion_table
from groundsense_eval.reports.operating import OperatingPoint, answer_outcomes, judged
from groundsense_eval.statistics.bootstrap import source_bootstrap

GOAL_AGREEMENT, GOAL_AUC = 0.99, 0.01
KEY = ["case_id", "sentence_index"]


def feature_sets(cache: Path, scorer: str, fp32_cache: Path | None = None,
                 benchmark: str = "ragtruth") -> dict[str, FeatureSet]:
    """The full-mode feature sets of ``benchmark`` and ``scorer`` by precision: bf16's under
    ``cache``, fp32's under ``fp32_cache`` (default: ``cache``)."""
    def full(folder: Path, precision: str) -> FeatureSet:
        found = [s for s in load_cache(folder, scorer) if s.config["mode"] == "full" and s.benchmark == benchmark
                 and s.config.get("precision", "fp32") == precision]
        if not found:
            sys.exit(f"{folder} needs a full-mode {benchmark} cache of {scorer} in {precision}")
        return found[0]

    return {"fp32": full(fp32_cache or cache, "fp32"), "bf16": full(cache, "bf16")}


def on_common_sentences(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each precision's table on the sentences both hold, in one order."""
    common = tables["fp32"].set_index(KEY).index.intersection(tables["bf16"].set_index(KEY).index)
    return {p: t.set_index(KEY).loc[common].reset_index() for p, t in tables.items()}


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
    parser.add_argument("--fp32-cache", type=Path, default=None,
                        help="where the fp32 features are, when not under --cache (fp32 agrees across devices "
                             "to 1e-4, so a CPU's bf16 features can be judged against a GPU's fp32 ones)")
    parser.add_argument("--benchmark", default="ragtruth", choices=["ragtruth", "tofueval", "ragbench"],
                        help="whose answers both caches hold (the rule was decided on RAGTruth's)")
    parser.add_argument("--scorer", default="smollm2-135m-instruct")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    args = parser.parse_args()
    calibration = shipped_calibration(args.scorer, args.k)
    if calibration is None:
        sys.exit(f"no shipped calibration for {args.scorer} at K={args.k}")
    sets = feature_sets(args.cache, args.scorer, args.fp32_cache, args.benchmark)
    tables = on_common_sentences({p: fs.rows for p, fs in sets.items()})
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
        "cache": str(args.cache), **({"fp32_cache": str(args.fp32_cache)} if args.fp32_cache else {}),
        "benchmark": args.benchmark, "scorer": args.scorer, "k": args.k,
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
    report["shipped_pairings"] = shipped_pairings(sets, args.scorer, args.k, args.seed)
    text = json.dumps(report, indent=2)  # as speed.emit_json writes it (the harness loads only public modules)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


def paired(sentences: dict[str, pd.DataFrame], answers: dict[str, pd.DataFrame], score: str, flag: str,
           answer_score: str, seed: int) -> dict:
    """Flag agreement, the largest score difference and paired AUC differences of one score, each
    precision judged as it ships (``sentences``/``answers``: per precision, in one order)."""
    first, second = sentences["fp32"], sentences["bf16"]
    return {
        "flag_agreement": {"sentence": agreement(first[flag].to_numpy(bool), second[flag].to_numpy(bool)),
                           "answer": agreement(answers["fp32"][flag].to_numpy(bool),
                                               answers["bf16"][flag].to_numpy(bool))},
        "max_abs_score_difference": round(float(np.nanmax(np.abs(first[score].to_numpy(float)
                                                                 - second[score].to_numpy(float)))), 4),
        "auc": {"span": auc_difference(first["label"].to_numpy(), first[score].to_numpy(float),
                                       second[score].to_numpy(float), first["source_id"].to_numpy(), seed),
                "answer": auc_difference(answers["fp32"]["label"].to_numpy(),
                                         answers["fp32"][answer_score].to_numpy(float),
                                         answers["bf16"][answer_score].to_numpy(float),
                                         answers["fp32"]["source_id"].to_numpy(), seed)},
        "held_out_flags": {level: flags_of(frames, flag, seed)
                           for level, frames in (("sentence", sentences), ("answer", answers))},
    }


def flags_of(frames: dict[str, pd.DataFrame], flag: str, seed: int) -> dict:
    """Each precision's flags against the labels (none of these answers was fitted on): precision,
    recall, F1 and flag rate with 95% source-level intervals, and the paired interval of F1,
    bf16 − fp32."""
    y, sources = frames["fp32"]["label"].to_numpy(int), frames["fp32"]["source_id"].to_numpy()
    flagged = {p: frame[flag].to_numpy(bool) for p, frame in frames.items()}
    f1 = paired_f1(y, flagged["bf16"], flagged["fp32"], sources, seed=seed)[2]
    return {**{p: {metric: [round(v, 4) for v in values]
                   for metric, values in flag_intervals(y, flagged[p], sources, seed=seed).items()}
               for p in ("fp32", "bf16")},
            "f1_bf16_minus_fp32": [round(v, 4) for v in f1]}


def shipped_pairings(sets: dict[str, FeatureSet], scorer: str, k: int, seed: int) -> dict:
    """The agreement of the pairings that ship: each precision with its own calibration
    (``sensitivity``) and with its own lexical fusion (the fused score, the default), each as
    the product judges it (:func:`groundsense_eval.reports.default_score.product_judgements`)."""
    judged_by: dict[str, dict[str, tuple[pd.DataFrame, pd.DataFrame]]] = {}
    for precision, features in sets.items():
        calibration = shipped_calibration(scorer, k, precision)
        fusions = {mode: shipped_lexical_fusion(scorer, precision, mode) for mode in ("full", "two_pass")}
        judged_by[precision] = product_judgements(fusion_table(features, calibration), calibration, fusions)
    sentences = on_common_sentences({p: judged[0] for p, judged in judged_by.items()})
    answers = {p: judged[1].loc[judged_by["fp32"][1].index] for p, judged in judged_by.items()}
    return {"sensitivity, each precision with its own calibration": paired(sentences, answers, "base_score",
                                                                          "base_flag", "base_score", seed),
            "fused (the default), each precision with its own fusion": paired(sentences, answers, "f", "f_flag",
                                                                             "f", seed)}


if __name__ == "__main__":
    main()
