"""F as the default score, on answers it never saw (docs/detector-selection.md, "F as the
default: its held-out figures"; issue #52): the shipped lexical fusion, computed as the product
computes it, against ``sensitivity`` and word overlap on every benchmark's test partition, for
ranking and for the flags at the shipped thresholds, and the issue's goals read off them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from groundsense.calibration import Calibration, LexicalFusions, RankFusion, flag_intervals, paired_f1

from ..caches.extract import FeatureSet
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import source_bootstrap
from .fusion import Domain, answer_labels, fusion_table, test_sets
from .operating import OperatingPoint, answer_outcomes, judged
from .tables import interval_text, markdown_table

DEFAULT, SENSITIVITY, OVERLAP = "F", "sensitivity", "word overlap"
# F's sentence AUC on each test partition in its protocol (docs/results/selection-F.md), the first goal's bar.
PROTOCOL_AUC = {"ragtruth": 0.751, "tofueval": 0.667, "ragbench": 0.759}


def product_judgements(rows: pd.DataFrame, calibration: Calibration, fusions: Mapping[str, RankFusion],
                       two_pass: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The product's judgement of ``rows`` (:func:`.fusion.fusion_table` sentences) under each
    score: per sentence, F (``f``, by full mode's fusion where ``calibration`` serves the
    answer's chunk count, else two-pass mode's; ``two_pass``: two-pass mode's everywhere) and its
    flag, and the baseline's score and flag (``base_score``, ``base_flag``: ``sensitivity`` as
    :func:`.operating.judged` gives them; ``two_pass``: the gap score at the calibration's gap
    thresholds); per answer (in order of first appearance), its label and source, F's
    length-aware noisy-OR and verdict (a sentence flagged, or the noisy-OR at the answer
    threshold), and the baseline's score and verdict (its most suspicious sentence, at its answer
    threshold)."""
    served = np.zeros(len(rows), dtype=bool) if two_pass else \
        np.array([calibration.serves(int(n)) for n in rows["n_chunks"]], dtype=bool)
    inputs = set(fusions["full"].inputs) | set(fusions["two_pass"].inputs)
    features = {name: rows[name].to_numpy(float) for name in inputs}
    f = LexicalFusions(fusions["full"], fusions["two_pass"]).score(features, served)
    f_threshold = np.where(served, fusions["full"].threshold, fusions["two_pass"].threshold)
    if two_pass:
        base = rows.assign(score=calibration.score("gap", {"gap": rows["gap"].to_numpy(float)}),
                           threshold=calibration.threshold("gap"),
                           answer_threshold=calibration.threshold("gap", "answer"))
    else:
        base = judged(calibration, rows, OperatingPoint())
    sentences = rows.assign(f=f, f_flag=f >= f_threshold, served=served, base_score=base["score"].to_numpy(),
                            base_flag=(base["score"] >= base["threshold"]).to_numpy())

    def verdict(group: pd.DataFrame) -> pd.Series:
        fusion = fusions["full" if group["served"].iloc[0] else "two_pass"]
        noisy_or = fusion.answer_score(group["f"].to_numpy())
        return pd.Series({"f": noisy_or, "served": bool(group["served"].iloc[0]),
                          "f_flag": bool(group["f_flag"].any() or noisy_or >= fusion.answer_threshold)})

    answers = answer_labels(sentences).join(sentences.groupby("case_id", sort=False)[["f", "f_flag", "served"]]
                                            .apply(verdict))
    answers["base_flag"] = answer_outcomes(base)["flagged"].reindex(answers.index).astype(bool)
    answers["base_score"] = sentences.groupby("case_id", sort=False)["base_score"].max().reindex(answers.index)
    return sentences, answers


def _ranking_row(y: np.ndarray, scores: Mapping[str, np.ndarray], sources: np.ndarray, n_resamples: int,
                 seed: int) -> dict[str, Any]:
    """Each score's AUC and F's (the first's) paired differences with the others, with 95%
    source-level intervals."""
    boot = source_bootstrap(y, scores, sources, n_resamples, seed)
    intervals = boot.intervals()
    row: dict[str, Any] = {"n (unsupported)": f"{len(y):,} ({int(np.sum(y)):,})"}
    row |= {name: interval_text(*intervals.loc[name, ["auc", "lo", "hi"]].to_numpy(float)) for name in scores}
    row["_auc"] = boot.point[DEFAULT]
    for other in list(scores)[1:]:
        found = boot.difference(DEFAULT, other)
        row[f"F − {other}"] = interval_text(found["diff"], found["lo"], found["hi"], sign="+")
        row[f"_{other}"] = found
    return row


def ranking_rows(sentences: pd.DataFrame, answers: pd.DataFrame, baseline: str, n_resamples: int, seed: int
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sentence and answer rows of the ranking tables: F, the ``baseline`` and word overlap (an
    answer: F's noisy-OR, the others' most suspicious sentence)."""
    sentence_scores = {DEFAULT: sentences["f"].to_numpy(float), baseline: sentences["base_score"].to_numpy(float),
                       OVERLAP: sentences["overlap_chunk"].to_numpy(float)}
    by = sentences.groupby("case_id", sort=False)
    answer_scores = {DEFAULT: answers["f"].to_numpy(float), baseline: answers["base_score"].to_numpy(float),
                     OVERLAP: by["overlap_chunk"].max().reindex(answers.index).to_numpy(float)}
    return (_ranking_row(sentences["label"].to_numpy(int), sentence_scores, sentences["source_id"].to_numpy(),
                         n_resamples, seed),
            _ranking_row(answers["label"].to_numpy(int), answer_scores, answers["source_id"].to_numpy(),
                         n_resamples, seed))


def flag_rows(label: str, sentences: pd.DataFrame, answers: pd.DataFrame, baseline: str, n_resamples: int,
              seed: int) -> list[dict[str, Any]]:
    """Per level: the precision, recall, F1 and flag rate of F's and the ``baseline``'s flags at
    the shipped thresholds, and the paired interval of F's F1 minus the baseline's."""
    rows = []
    for level, frame in (("sentence", sentences), ("answer", answers)):
        y, sources = frame["label"].to_numpy(int), frame["source_id"].to_numpy()
        f1s = paired_f1(y, frame["f_flag"].to_numpy(bool), frame["base_flag"].to_numpy(bool), sources,
                        n_resamples, seed)
        for name, column in ((DEFAULT, "f_flag"), (baseline, "base_flag")):
            metrics = flag_intervals(y, frame[column].to_numpy(bool), sources, n_resamples, seed)
            rows.append({"set": label, "level": level, "score": name,
                         **{m: interval_text(*values) for m, values in metrics.items()},
                         "F1, F − baseline": interval_text(*f1s[2], sign="+") if name == DEFAULT else "",
                         "_f1": f1s})
    return rows


def _public(rows: Sequence[Mapping[str, Any]], index: str | None = None) -> pd.DataFrame:
    """A table of ``rows`` without their private (``_``) entries."""
    frame = pd.DataFrame([{k: v for k, v in row.items() if not k.startswith("_")} for row in rows])
    return frame.set_index(index) if index else frame


def goals(ranking: Mapping[str, tuple[dict, dict]], flags: Sequence[Mapping[str, Any]]) -> list[str]:
    """The issue's goals, each stated met or not met with the figures that decide it."""
    lines = []
    for name, bar in PROTOCOL_AUC.items():
        sentence, answer = ranking[name]
        auc = round(sentence["_auc"], 3)  # as the bar: known to three decimals
        below = [level for level, row in (("sentence", sentence), ("answer", answer)) if row[f"_{OVERLAP}"]["hi"] < 0]
        met = auc >= bar and not below
        lines.append(f"- {name}: F's sentence AUC {auc:.3f} ({sentence['_auc']:.4f}) against its protocol figure "
                     f"{bar:.3f}, compared at the figure's three decimals (a rule set after this page was first "
                     "rendered); significantly "
                     f"below word overlap at {' and '.join(below) if below else 'neither level'}: "
                     f"**{'met' if met else 'not met'}**.")
    worse = [name for name, (_, answer) in ranking.items() if answer[f"_{SENSITIVITY}"]["hi"] < 0]
    lines.append("- At answer level, significantly below `sensitivity` on "
                 f"{', '.join(worse) if worse else 'no benchmark and no RAGTruth task'}: "
                 f"**{'not met' if worse else 'met'}**.")
    tofu = next(row["_f1"] for row in flags if row["set"] == "tofueval" and row["level"] == "sentence")
    (f_f1, *_), (s_f1, *_) = tofu[0], tofu[1]
    lines.append(f"- TofuEval's sentence flag F1: F {f_f1:.3f} against `sensitivity`'s {s_f1:.3f} (shipped "
                 f"thresholds): **{'met' if f_f1 >= s_f1 else 'not met'}**. (Both adapted to TofuEval: "
                 "[below](#adapted-to-each-benchmark).)")
    return lines


GAP = "gap"  # two-pass mode's baseline: the gap score
ADAPTED = {"F shipped": ("shipped", "f_flag"), "F adapted": ("adapted", "f_flag"),
           "sensitivity shipped": ("shipped", "base_flag"), "sensitivity adapted": ("adapted", "base_flag")}


def adapted_to(domain: Domain, calibration: Calibration, fusions: Mapping[str, RankFusion]
               ) -> tuple[Calibration, dict[str, RankFusion]]:
    """What ``calibrate --adapt`` makes of ``domain``'s dev partition, its labels unread: the
    ``sensitivity`` calibration by the default method, and F's lexical fusions."""
    from groundsense.calibration import DEFAULT_METHOD, adapt

    from .adapted_operating import domain as domain_sentences

    dev = domain.dev
    served = np.array([calibration.serves(int(n)) for n in dev["n_chunks"]], dtype=bool)
    names = set(fusions["full"].inputs) | set(fusions["two_pass"].inputs)
    lexical = LexicalFusions(fusions["full"], fusions["two_pass"]).adapted(
        {name: dev[name].to_numpy(float) for name in names}, served)
    return adapt(calibration, domain_sentences(dev), DEFAULT_METHOD), {"full": lexical.full,
                                                                       "two_pass": lexical.two_pass}


def adapted_rows(domains: Sequence[Domain], calibration: Calibration, fusions: Mapping[str, RankFusion],
                 n_resamples: int, seed: int) -> list[dict[str, Any]]:
    """Per test set and level: the flags of F and ``sensitivity``, shipped and adapted to the
    set's benchmark (:func:`adapted_to`), and the paired intervals of F adapted's F1 minus F
    shipped's and minus ``sensitivity`` adapted's."""
    adapted = {domain.name: adapted_to(domain, calibration, fusions) for domain in domains}
    rows: list[dict[str, Any]] = []
    for domain, test, label in test_sets(domains):
        judged_by = {"shipped": product_judgements(test, calibration, fusions),
                     "adapted": product_judgements(test, *adapted[domain.name])}
        for level in ("sentence", "answer"):
            frames = {kind: judged[0 if level == "sentence" else 1] for kind, judged in judged_by.items()}
            y, sources = frames["shipped"]["label"].to_numpy(int), frames["shipped"]["source_id"].to_numpy()
            flags = {name: frames[kind][column].to_numpy(bool) for name, (kind, column) in ADAPTED.items()}
            against = {other: paired_f1(y, flags["F adapted"], flags[other], sources, n_resamples, seed)
                       for other in ("F shipped", "sensitivity adapted")}
            for name, flagged in flags.items():
                metrics = flag_intervals(y, flagged, sources, n_resamples, seed)
                rows.append({"set": label, "level": level, "score": name,
                             **{m: interval_text(*values) for m, values in metrics.items()},
                             **{f"F1, F adapted − {other}": interval_text(*f1s[2], sign="+") if name == "F adapted"
                                else "" for other, f1s in against.items()},
                             "_f1": metrics["f1"][0]})
    return rows


def adapted_goal(rows: Sequence[Mapping[str, Any]]) -> str:
    """The protocol's reading: on TofuEval, F adapted's sentence flag F1 against ``sensitivity``'s."""
    f1 = {row["score"]: row["_f1"] for row in rows if row["set"] == "tofueval" and row["level"] == "sentence"}
    met = f1["F adapted"] >= max(f1["sensitivity shipped"], f1["sensitivity adapted"])
    return (f"- On TofuEval, F adapted's sentence flag F1 is {f1['F adapted']:.3f}, against `sensitivity`'s "
            f"{f1['sensitivity shipped']:.3f} shipped and {f1['sensitivity adapted']:.3f} adapted: "
            f"{'met' if met else 'not met'}.")


def judged_sets(domains: Sequence[Domain], calibration: Calibration, fusions: Mapping[str, RankFusion],
                two_pass: bool, n_resamples: int, seed: int
                ) -> tuple[dict[str, tuple[dict, dict]], list[dict[str, Any]], list[str]]:
    """Per test set (:func:`.fusion.test_sets`): its ranking rows, its flag rows and its size."""
    baseline = GAP if two_pass else SENSITIVITY
    ranking: dict[str, tuple[dict, dict]] = {}
    flags: list[dict[str, Any]] = []
    sizes: list[str] = []
    for _, rows, label in test_sets(domains):
        sentences, answers = product_judgements(rows, calibration, fusions, two_pass)
        ranking[label] = ranking_rows(sentences, answers, baseline, n_resamples, seed)
        flags += flag_rows(label, sentences, answers, baseline, n_resamples, seed)
        sizes.append(f"{label} {len(answers):,} answers" + ("" if two_pass else
                     f" ({int((~answers['served']).sum()):,} by two-pass mode's fusion)"))
    return ranking, flags, sizes


def _tables(ranking: Mapping[str, tuple[dict, dict]], flags: Sequence[Mapping[str, Any]], baseline: str
            ) -> list[str]:
    """The ranking tables and the flag table of one mode."""
    sentence_table = _public([{"set": label, **rows[0]} for label, rows in ranking.items()], "set")
    answer_table = _public([{"set": label, **rows[1]} for label, rows in ranking.items()], "set")
    return [
        "Sentence AUC (scored sentences; label: overlaps an annotated span):", "", markdown_table(sentence_table), "",
        "Answer AUC (label: any unsupported sentence; F: the length-aware noisy-OR of its sentences; the others: "
        "their most suspicious sentence):", "", markdown_table(answer_table), "",
        f"Flags at the shipped thresholds. A sentence is flagged at its score's sentence threshold. The answer "
        f"verdict: F flags an answer when a sentence is flagged or its noisy-OR reaches the answer threshold; "
        f"`{baseline}`, when its most suspicious sentence reaches the answer threshold.", "",
        markdown_table(_public(flags, "set")), "",
    ]


def default_score_report(sets: Mapping[str, FeatureSet], calibration: Calibration,
                         fusions: Mapping[str, RankFusion], command: str, n_resamples: int = 2000,
                         seed: int = 0) -> str:
    """The Markdown report of `groundsense eval default-score`: full mode (the default), its
    goals, and two-pass mode."""
    domains = [Domain(name, *partitioned(fusion_table(features, calibration), seed))
               for name, features in sets.items()]
    ranking, flags, sizes = judged_sets(domains, calibration, fusions, False, n_resamples, seed)
    two_pass_ranking, two_pass_flags, _ = judged_sets(domains, calibration, fusions, True, n_resamples, seed)
    adapted = adapted_rows(domains, calibration, fusions, n_resamples, seed)
    made = fusions["full"].made_with
    return "\n".join([
        "# F as the default score, on answers it never saw", "", f"`{command}`", "",
        "Protocol: docs/detector-selection.md (\"F as the default: its held-out figures\"), written before any "
        "figure here was computed; nothing is chosen on them. F, the default (`fused`) score, is the shipped fp32 "
        "lexical fusion "
        f"({made['fitted_on']}; thresholds: sentence {made['threshold_rule']['sentence']}, answer "
        f"{made['threshold_rule']['answer']}) as the product computes it: full mode's fusion where the shipped "
        "calibration serves the answer's chunk count, two-pass mode's elsewhere. `sensitivity` is the previous "
        "default as the product computes it (the gap score where the calibration does not serve); word overlap is "
        "`1 −` the share of the sentence's words in its best-matching chunk. Each benchmark's test partition (the "
        "seeded source-level 40%), RAGTruth's tasks apart: " + "; ".join(sizes) + ". Intervals: 95%, over "
        f"sources, paired ({n_resamples:,} resamples).", "",
        "## Full mode (the default)", "", *_tables(ranking, flags, SENSITIVITY),
        "## The issue's goals", "", *goals(ranking, flags), "",
        "## Other operating points", "",
        "`--target-recall` and `--target-precision`, and the shipped flag beside word overlap flagging as many, on "
        "the same test partitions: [operating.md](operating.md) (`groundsense eval operating`).", "",
        "## Adapted to each benchmark", "",
        "Protocol: docs/detector-selection.md (\"F adapted to a domain: its held-out flags\"), written before any "
        "figure here was computed. Each benchmark in turn is the domain: `calibrate --adapt` reads its dev "
        "partition without labels, F's references re-estimated (full mode's from the sentences of answers whose "
        "chunk count the calibration serves, two-pass mode's from all; thresholds kept in rank space) and "
        "`sensitivity` by the default adaptation (`restandardise`); the flags are measured on its test partition "
        "(RAGTruth's tasks apart, adapted on RAGTruth's dev partition), at each file's own thresholds.", "",
        markdown_table(_public(adapted, "set")), "",
        adapted_goal(adapted), "",
        "## Two-pass mode", "",
        "`--mode two_pass` (the cheap real-time path): two-pass mode's fusion, the rank average of the gap score "
        "and the same lexical signals, on every answer, against the gap score at the shipped calibration's gap "
        "thresholds, as `--score sensitivity` judges in two-pass mode. Reported as it came out; no goal.", "",
        *_tables(two_pass_ranking, two_pass_flags, GAP),
    ])
