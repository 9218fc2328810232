"""The few-label fit's learning curve on each benchmark's dev partition (`groundsense eval
learning-curve`): how many labelled answers a team needs before the fit pays off, judged as
`groundsense fit` judges it (:mod:`groundsense.calibration.cross_validation`) on answers of sources
it never saw.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from groundsense.calibration import (
    LOGISTIC_SIGNALS,
    SIDES,
    Calibration,
    LexicalFusions,
    fitted_rows,
    flag_metrics,
    logistic_sides,
    score_fold,
)

from ..caches.detector_inputs import detector_table
from ..caches.extract import FeatureSet
from ..caches.lexical import lexical_path, with_lexical
from ..statistics.benchmark_result import partitioned
from .tables import interval_text, markdown_table

OVERLAP = "overlap_chunk"  # word overlap, the baseline every table that ranks detectors shows
SIZES = (50, 100, 200, 500)  # labelled answers drawn per fit in the learning curve
DRAWS = 20
MIN_EVALUATED = 100  # answers left to judge on below which a size's row is marked unreadable
GOAL = (200, 0.03, 2)  # the goal: +0.03 mean AUC at 200 answers on at least two benchmarks

# The learning curve on cached benchmark features.

def cached_features(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """A :func:`detector_table`'s sentence features as the detector hands them to a score."""
    names = {"n_tokens" if n == "log_n_tokens" else n for n in LOGISTIC_SIGNALS} | {"gap"}
    return {name: table[name].to_numpy(dtype=float) for name in sorted(names)}


def draw_answers(by_source: Mapping[str, list], n: int, rng: np.random.Generator) -> tuple[set, set]:
    """``n`` answers drawn source by source (``by_source``: each source's answers) in a seeded
    order, the last source cut to make ``n``: (answers drawn, sources touched)."""
    sources = list(by_source)
    drawn: list[str] = []  # answer ids
    touched = set()
    for i in rng.permutation(len(sources)):
        touched.add(sources[i])
        drawn += by_source[sources[i]][: n - len(drawn)]
        if len(drawn) == n:
            break
    return set(drawn), touched


def curve(dev: pd.DataFrame, default: Calibration, seed: int = 0, fusions: LexicalFusions | None = None
          ) -> pd.DataFrame:
    """One row per (size, draw): the answers evaluated, and the detector fit's and the default's
    span AUC and F1 on the dev answers of the sources not drawn. The default is the fused score
    of ``fusions`` (as the detector scores it, by ``default``'s chunk counts), or without them
    ``default``'s ``sensitivity``. A size that leaves no evaluation answers with both labels, or a
    draw whose training sentences hold one label only, gives no row."""
    from sklearn.metrics import roc_auc_score

    dev = dev[fitted_rows(cached_features(dev))].reset_index(drop=True)
    features, labels = cached_features(dev), dev["label"].to_numpy(dtype=int)
    if fusions is None:
        default_score = default.score("sensitivity", features)
    else:
        default_score = fusions.score(features, np.array([default.serves(int(n)) for n in dev["n_chunks"]]))
    sides = logistic_sides(features, labels, default_score)
    answers = dev[["case_id", "source_id"]].drop_duplicates("case_id")
    by_source = {source: list(group) for source, group in answers.groupby("source_id", sort=True)["case_id"]}
    rng, rows = np.random.default_rng(seed), []
    for n in SIZES:
        if n >= len(answers):
            continue
        for draw in range(DRAWS):
            drawn, touched = draw_answers(by_source, n, rng)
            train = dev["case_id"].isin(drawn).to_numpy()
            test = ~dev["source_id"].isin(touched).to_numpy()
            if len(set(labels[train])) < 2 or len(set(labels[test])) < 2:
                continue
            scores, flags = score_fold(sides, labels, np.flatnonzero(train), np.flatnonzero(test))
            row = {"n": n, "draw": draw, "answers evaluated": dev.loc[test, "case_id"].nunique(),
                   "word overlap AUC": roc_auc_score(labels[test], features[OVERLAP][test])}
            y = labels[test] == 1
            for side in SIDES:
                tp, fp, fn = ((y & flags[side]).sum(), (~y & flags[side]).sum(), (y & ~flags[side]).sum())
                row[f"{side} AUC"] = roc_auc_score(labels[test], scores[side])
                row[f"{side} F1"] = flag_metrics(tp, fp, fn, len(y))["f1"]
            rows.append(row)
    columns = ["n", "draw", "answers evaluated", "word overlap AUC",
               *(f"{side} {metric}" for side in SIDES for metric in ("AUC", "F1"))]
    return pd.DataFrame(rows, columns=columns)


def curve_table(draws: pd.DataFrame) -> pd.DataFrame:
    """Per size: the draws, the mean answers evaluated, each side's mean AUC and F1, and the
    mean difference (fitted − default) with the 2.5 and 97.5 percentiles across draws."""
    rows = {}
    for n, group in draws.groupby("n"):
        row = {"draws": len(group), "answers evaluated (mean)": f"{group['answers evaluated'].mean():.0f}"}
        for metric in ("AUC", "F1"):
            difference = group[f"fitted {metric}"] - group[f"default {metric}"]
            row[f"default {metric}"] = group[f"default {metric}"].mean()
            row[f"fitted {metric}"] = group[f"fitted {metric}"].mean()
            lo, hi = np.percentile(difference, [2.5, 97.5])
            row[f"{metric} difference [2.5%, 97.5%]"] = interval_text(difference.mean(), lo, hi, sign="+")
            if metric == "AUC":
                row["word overlap AUC"] = group["word overlap AUC"].mean()
        rows[f"{n} answers"] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def goal_text(draws: Mapping[str, pd.DataFrame]) -> str:
    """Whether the mean AUC difference at :data:`GOAL`'s size reaches its gain on enough benchmarks."""
    size, gain, needed = GOAL
    differences = {name: (d.loc[d["n"] == size, "fitted AUC"] - d.loc[d["n"] == size, "default AUC"])
                   for name, d in draws.items() if (d["n"] == size).any()}
    gains = {name: d.mean() for name, d in differences.items()}
    met = [name for name, g in gains.items() if g >= gain]
    each = "; ".join(f"{name} {d.mean():+.3f} (± {d.std() / np.sqrt(len(d)):.3f}, the standard error over the draws)"
                     for name, d in differences.items()) or "none, no benchmark has draws of that size"
    verdict = "holds" if len(met) >= needed else f"is missed ({len(met)} of the {needed} benchmarks needed)"
    return (f"Goal: the fit beats the default by at least {gain:+.2f} mean AUC at {size} labelled answers on at least "
            f"{needed} benchmarks. Mean AUC differences at {size}: {each}. The goal {verdict}.")


def learning_curve_report(sets: Mapping[str, FeatureSet], default: Calibration, command: str, seed: int = 0,
                          fusions: LexicalFusions | None = None) -> str:
    """The Markdown report of `groundsense eval learning-curve`: the detector fit against the shipped
    fused score (``fusions``), or against ``default``'s ``sensitivity``."""
    against = (f"the shipped calibration's `sensitivity` score (the standardised four-feature sum of {default.scorer}, "
               "fitted on RAGTruth train)" if fusions is None else
               f"the default score, the shipped fused score at {fusions.precision} (full mode's fusion where the "
               "calibration serves the answer's chunk count, two-pass mode's elsewhere)")
    lines = [
        "# The few-label fit: learning curve on the dev partitions", "", f"`{command}`", "",
        "How many labelled answers a team needs before `groundsense fit` pays off, in each benchmark's own domain. "
        "On each benchmark's dev partition only (the seeded source-level 60/40 split; no test partition is "
        f"read): for each size, {DRAWS} seeded draws of that many answers, taken source by source (the last "
        "source cut to make the size). The logistic fit (`groundsense.calibration.fitting`: C = 0.1 over the "
        "standardised per-sentence features and lexical signals, as `groundsense fit`) is fitted on the drawn "
        "answers and judged on the dev answers of every source not drawn, against the training-free default on the "
        f"same sentences: {against}; and word overlap (`overlap_chunk`, no fit) on the same sentences, the "
        "baseline. F1 is at each side's best-F1 threshold on the drawn answers. The difference is fitted − "
        "default, as its mean over the draws and the 2.5 and 97.5 percentiles across them (the spread a team "
        "drawing that many answers meets; not a confidence interval of the mean).", "",
    ]
    draws = {}
    for name, features in sets.items():
        dev, _ = partitioned(with_lexical(detector_table(features), lexical_path(features)))
        draws[name] = curve(dev, default, seed, fusions)
        lines += [f"## {name}: dev partition of {dev['case_id'].nunique()} answers, {dev['source_id'].nunique()} "
                  f"sources, {len(dev)} sentences ({dev['label'].mean():.1%} unsupported)", ""]
        if draws[name].empty:
            lines += [f"No curve: no size could be drawn (it takes more than {SIZES[0]} dev answers, and both labels "
                      "among the drawn answers and among those judged on).", ""]
            continue
        lines += [markdown_table(curve_table(draws[name])), ""]
        few = draws[name].groupby("n")["answers evaluated"].mean()
        lines += [f"At {n} answers the draws leave {m:.0f} answers on average to judge on: too few to read." for n, m in
                  few[few < MIN_EVALUATED].items()] + ([""] if (few < MIN_EVALUATED).any() else [])
    lines += ["## Goal", "", goal_text(draws), ""]
    return "\n".join(lines)
