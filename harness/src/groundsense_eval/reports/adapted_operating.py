"""The adaptation protocol of docs/detector-selection.md ("Adapting the operating point"), run
on cached features: each benchmark in turn is the target domain; the adaptation reads its dev
partition without labels and is measured on its test partition, beside the unadapted shipped
calibration, today's unlabelled ``--flag-rate`` fit and a labelled oracle fitted on the same
dev partition (`groundsense eval adaptation`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import numpy as np
import pandas as pd

from groundsense.calibration import (
    DEFAULT_METHOD,
    METHODS,
    Calibration,
    DomainSentences,
    adapt,
    fit_calibration,
    flag_intervals,
    flag_metrics,
    paired_f1,
)
from groundsense.errors import InputError
from groundsense.features import FEATURES, SENTENCE_VALUES

from ..data.split import DEV, TEST, assign_partition
from ..statistics.signed import with_signed
from .operating import OperatingPoint, answer_outcomes, judged, no_test_partition
from .tables import interval_text, markdown_table

LETTERS = {"restandardise": "R", "quantile": "Q", "mixture": "M"}
BASELINE_FLAG_RATE = 0.1  # `groundsense calibrate` without labels, at its default
FEW_ANSWERS, FEW_DRAWS = 200, 20  # the secondary row: the chosen rule fitted on this many dev answers
GOAL_TOFUEVAL_F1, GOAL_BLOCK, GOAL_RECALL = 0.35, 0.45, 0.75  # issue #31's goals, checked beside the rule


def partitioned(sentences: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The dev and test partitions of a feature set's sentences (seeded, by source)."""
    partition = assign_partition(sentences)
    return {name: sentences[partition == name] for name in (DEV, TEST)}


def domain(sentences: pd.DataFrame) -> DomainSentences:
    """What an adaptation reads: the scored sentences' features (the signed ones computed from
    their drops; the lexical signals where they were joined on), answers and chunk counts (no labels)."""
    scored = with_signed(sentences[sentences["status"] == "scored"])
    return DomainSentences({f: scored[f].to_numpy(dtype=float) for f in SENTENCE_VALUES if f in scored},
                           scored["case_id"].to_numpy(),
                           scored["n_chunks"].to_numpy())


def _dev_fit(base: Calibration, dev: pd.DataFrame, labelled: bool) -> Calibration:
    """`groundsense calibrate` on the dev answers: with their labels (the oracle) or without
    them at the default flag rate."""
    scored = dev[dev["status"] == "scored"]
    return fit_calibration(
        {f: scored[f].to_numpy(dtype=float) for f in FEATURES}, base.scorer, base.k,
        labels=scored["label"].to_numpy() if labelled else None, flag_rate=BASELINE_FLAG_RATE,
        answers=scored["case_id"].to_numpy(),
        made_with={"chunk_counts": sorted(int(n) for n in scored["n_chunks"].dropna().unique())})


def calibrations(base: Calibration, dev: pd.DataFrame) -> dict[str, Calibration]:
    """Every row of the protocol, fitted on one benchmark's dev partition."""
    rows = {"unadapted (shipped)": base, f"flag rate {BASELINE_FLAG_RATE}": _dev_fit(base, dev, False)}
    rows.update({f"{LETTERS[m]}: {m}": adapt(base, domain(dev), m) for m in METHODS})
    rows["oracle (dev labels)"] = _dev_fit(base, dev, True)
    return rows


def outcomes(calibration: Calibration, sentences: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(labels, flags, sources) per level at the calibration's fitted thresholds."""
    frame = judged(calibration, sentences, OperatingPoint())
    scored = frame[frame["score"].notna()]
    answers = answer_outcomes(frame)
    return {"sentence": (scored["label"].to_numpy(), (scored["score"] >= scored["threshold"]).to_numpy(),
                         scored["source_id"].to_numpy()),
            "answer": (answers["label"].to_numpy(), answers["flagged"].to_numpy(), answers["source_id"].to_numpy())}


def flag_table(fitted: Mapping[str, Calibration], test: pd.DataFrame, n_resamples: int,
               seed: int) -> tuple[pd.DataFrame, dict]:
    """Each calibration's flags on ``test`` per level, as ``value [lo, hi]`` cells (one row per
    calibration and level), and the :func:`outcomes` behind them."""
    rows, judged_by = [], {}
    for row, calibration in fitted.items():
        judged_by[row] = outcomes(calibration, test)
        for level, (y, flagged, groups) in judged_by[row].items():
            cells = flag_intervals(y, flagged, groups, n_resamples, seed)
            rows.append({"rule": row, "level": level, **{m: interval_text(*v) for m, v in cells.items()}})
    return pd.DataFrame(rows).set_index("rule"), judged_by


def adapted_section(sets: Mapping[str, pd.DataFrame], base: Calibration, n_resamples: int = 2000,
                    seed: int = 0) -> str:
    """What `eval operating --score sensitivity` adds on adaptation: per benchmark's test partition, the shipped
    flag against the default adaptation fitted on its dev partition (docs/results/adaptation.md
    has the protocol and the other rules)."""
    lines = ["## Adapted to each benchmark (test partitions)", "",
             f"`groundsense calibrate --adapt` with its default rule ({DEFAULT_METHOD}), fitted on the benchmark's dev "
             "partition without labels, against the shipped calibration, on the test partition "
             "([adaptation.md](adaptation.md): the protocol, the other rules and the oracle).", ""]
    for name, sentences in sets.items():
        p = partitioned(sentences)
        if p[TEST].empty:
            lines += no_test_partition(f"### {name}", p[DEV])
            continue
        fitted = {"unadapted (shipped)": base, f"adapted ({DEFAULT_METHOD})": adapt(base, domain(p[DEV]))}
        lines += [f"### {name}", "", markdown_table(flag_table(fitted, p[TEST], n_resamples, seed)[0]), ""]
    return "\n".join(lines)


class _Goal(TypedDict):
    """One benchmark's line under "The issue's goals"."""

    f1: float
    difference: tuple[float, float, float]
    block: float
    recall: float
    floor: float


def point_f1(calibration: Calibration, sentences: pd.DataFrame) -> float:
    y, flagged, _ = outcomes(calibration, sentences)["sentence"]
    y, flagged = y.astype(bool), flagged.astype(bool)
    return float(flag_metrics(*(float(np.sum(m)) for m in (y & flagged, ~y & flagged, y & ~flagged, y)))["f1"])


def chosen_method(dev_f1: pd.DataFrame) -> str:
    """The candidate with the highest mean dev F1 (ties: the order of :data:`METHODS`)."""
    means = dev_f1.mean(axis=1)
    return max(METHODS, key=lambda m: (round(means[m], 12), -METHODS.index(m)))


def few_answer_f1(base: Calibration, dev: pd.DataFrame, test: pd.DataFrame, method: str) -> tuple[float, float, float]:
    """Test F1 of ``method`` fitted on :data:`FEW_ANSWERS` dev answers, over :data:`FEW_DRAWS` seeded draws:
    the mean and the 2.5 and 97.5 percentiles."""
    cases = dev["case_id"].unique()
    if len(cases) <= FEW_ANSWERS:
        return float("nan"), float("nan"), float("nan")
    rng, scores = np.random.default_rng(0), []
    for _ in range(FEW_DRAWS):
        drawn = dev[dev["case_id"].isin(rng.choice(cases, FEW_ANSWERS, replace=False))]
        scores.append(point_f1(adapt(base, domain(drawn), method), test))
    lo, hi = np.percentile(scores, [2.5, 97.5])
    return float(np.mean(scores)), float(lo), float(hi)


def adaptation_report(sets: Mapping[str, pd.DataFrame], base: Calibration, command: str,
                      n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report of `groundsense eval adaptation`."""
    parts = {name: partitioned(sentences) for name, sentences in sets.items()}
    fitted = {}
    for name, p in parts.items():  # a --limit run's partitions can be too small to fit on or to measure
        sizes = (f"its dev and test partitions hold {p[DEV]['case_id'].nunique()} and "
                 f"{p[TEST]['case_id'].nunique()} answers: score more of its answers")
        try:
            fitted[name] = calibrations(base, p[DEV])
        except InputError as exc:
            raise InputError(f"{name}: no adaptation can be fitted ({exc}); {sizes}") from exc
        if p[TEST].empty:
            raise InputError(f"{name}: nothing to measure the adaptations on; {sizes}")
    dev_f1 = pd.DataFrame({name: {m: point_f1(fitted[name][f"{LETTERS[m]}: {m}"], p[DEV]) for m in METHODS}
                           for name, p in parts.items()})
    chosen = chosen_method(dev_f1)
    chosen_row = f"{LETTERS[chosen]}: {chosen}"
    lines = [
        "# The operating point adapted to each benchmark without its labels", "", f"`{command}`", "",
        "The protocol is in [docs/detector-selection.md](../detector-selection.md#adapting-the-operating-point-to-a-"
        "domain-without-labels), committed before this report first read a test partition. Each benchmark in turn "
        "is the target domain: the rows are fitted on its dev partition (60% of its sources; the adaptations and "
        f"the flag-rate fit without labels, the oracle with them) and measured on its test partition. Base: the "
        f"shipped calibration ({base.made_with.get('source', '?')}).", "",
        "## Choosing the rule (dev partitions only)", "",
        "Sentence F1 of each candidate fitted on a dev partition without labels and scored there with them; the "
        "highest mean is chosen (ties: R, Q, M).", "",
        markdown_table(dev_f1.assign(mean=dev_f1.mean(axis=1)).rename(index=lambda m: f"{LETTERS[m]}: {m}")), "",
        f"Chosen: **{chosen_row}**.", "",
    ]
    verdicts: dict[str, tuple[float, float, float]] = {}
    goals: dict[str, _Goal] = {}
    for name, p in parts.items():
        test = p[TEST]
        lines += [f"## {name}: test partition, {test['case_id'].nunique()} answers, "
                  f"{int((test['status'] == 'scored').sum())} scored sentences "
                  f"(dev: {p[DEV]['case_id'].nunique()} answers)", "",
                  f"95% source-level bootstrap intervals ({n_resamples:,} resamples). At answer level the flag "
                  "rate is the block rate of the fail-closed verdict.", ""]
        table, judged_by = flag_table(fitted[name], test, n_resamples, seed)
        lines += [markdown_table(table), ""]
        y, adapted, groups = judged_by[chosen_row]["sentence"]
        difference = paired_f1(y, adapted, judged_by["unadapted (shipped)"]["sentence"][1], groups, n_resamples,
                               seed)[2]
        verdicts[name] = difference
        mean, lo, hi = few_answer_f1(base, p[DEV], test, chosen)
        lines += [f"Sentence F1, {chosen_row} − unadapted (paired): {interval_text(*difference, sign='+')}.",
                  f"{chosen_row} fitted on {FEW_ANSWERS} dev answers ({FEW_DRAWS} draws): test F1 "
                  f"{interval_text(mean, lo, hi)} (mean [2.5th, 97.5th percentile]).", ""]
        answer = judged_by[chosen_row]["answer"]
        goals[name] = {"f1": point_f1(fitted[name][chosen_row], test), "difference": difference,
                       "block": float(answer[1].mean()), "recall": float(answer[1][answer[0].astype(bool)].mean()),
                       "floor": lowest_block_rate(fitted[name][chosen_row], p[DEV], GOAL_RECALL)}
    above = [n for n, (_, lo, _) in verdicts.items() if lo > 0]
    below = [n for n, (_, _, hi) in verdicts.items() if hi < 0]
    adopted = len(above) >= 2 and not below
    lines += ["## The rule", "",
              f"Significantly above the unadapted F1 on: {', '.join(above) or 'none'}; significantly below on: "
              f"{', '.join(below) or 'none'}. **Adaptation is {'' if adopted else 'not '}adopted** as the "
              "recommended path.", "", "## The issue's goals", "",
              f"Goals: TofuEval sentence F1 ≥ {GOAL_TOFUEVAL_F1} with RAGTruth and RAGBench not worse; RAGTruth "
              f"answers blocked ≤ {GOAL_BLOCK:.0%} at answer recall ≥ {GOAL_RECALL}. *Floor*: on the dev "
              f"partition, the lowest block rate of any answer threshold on the chosen rule's scores that keeps "
              f"answer recall ≥ {GOAL_RECALL} (labels read): no threshold rule can block fewer answers at that recall "
              "unless the ranking itself improves.", ""]
    for name, goal in goals.items():
        lines.append(f"- {name}: sentence F1 {goal['f1']:.3f}, {interval_text(*goal['difference'], sign='+')} "
                     f"against unadapted; answers blocked {goal['block']:.1%} at answer recall {goal['recall']:.3f} "
                     f"(floor {goal['floor']:.1%}).")
    return "\n".join(lines) + "\n"


def lowest_block_rate(calibration: Calibration, sentences: pd.DataFrame, min_recall: float) -> float:
    """The lowest share of answers any threshold on their most suspicious sentence's score blocks
    while catching ``min_recall`` of the answers with an unsupported sentence (unscored blocks)."""
    from sklearn.metrics import roc_curve

    frame = judged(calibration, sentences, OperatingPoint())
    answers = frame.assign(score=frame["score"].fillna(np.inf)).groupby("case_id").agg(
        label=("label", "max"), score=("score", "max"))
    fpr, tpr, _ = roc_curve(answers["label"], answers["score"].clip(upper=np.finfo(float).max))
    share = answers["label"].mean()
    return float((tpr * share + fpr * (1 - share))[tpr >= min_recall].min())
