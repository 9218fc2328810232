"""The detector-selection protocol of docs/detector-selection.md.

A trained sentence detector (a regularised logistic regression over the grounding, baseline,
signed and answer-relative features: candidate A; candidate B adds the token-level ones, at
thresholds each fit tunes on its own dev partitions) is fitted on the dev partitions of two
benchmarks and scored on the third's test partition, against the training-free sentence gap
on the same sentences; the adoption rule is applied to the result. Single features are ranked,
and the fits' transfer is also read, on the dev partitions only (the place to tune).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from groundsense.calibration import REGULARISATION

from ..caches.detector_inputs import (
    SENTENCE_INPUTS,
    TOKEN_FEATURES,
    detector_table,
    has_token_rows,
    suspicion,
    token_threshold_sweep,
    tuned_thresholds,
    uses_token_features,
    with_token_features,
)
from ..caches.extract import FeatureSet
from ..caches.lexical import lexical_columns
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import source_bootstrap
from ..statistics.methods import lightgbm_scores
from .answers import answer_table
from .tables import cell, interval_at, markdown_table

CANDIDATES = {"A": SENTENCE_INPUTS, "B": [*SENTENCE_INPUTS, *TOKEN_FEATURES]}


def fit_logistic(devs: Sequence[pd.DataFrame], features: Sequence[str]) -> Pipeline:
    """The candidate detector fitted on pooled dev partitions, each benchmark weighted to the
    same total so that none dominates."""
    pooled = pd.concat(devs, ignore_index=True)
    weights = np.concatenate([np.full(len(d), 1.0 / len(d)) for d in devs]) * len(pooled) / len(devs)
    model = make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(C=REGULARISATION, max_iter=2000))
    model.fit(pooled[list(features)].to_numpy(dtype=float), pooled["label"].to_numpy(),
              logisticregression__sample_weight=weights)
    return model


def candidate_scores(devs: Sequence[pd.DataFrame], test: pd.DataFrame, features: Sequence[str], seed: int = 0
                     ) -> dict[str, np.ndarray]:
    """The candidate's, the LightGBM reference's and the sentence gap's scores on ``test``, and
    word overlap's (the baseline) where ``test`` carries the lexical signals."""
    model = fit_logistic(devs, features)
    pooled = pd.concat(devs, ignore_index=True)
    return {
        "candidate": model.predict_proba(test[list(features)].to_numpy(dtype=float))[:, 1],
        "LightGBM (reference)": lightgbm_scores(pooled, test, features, seed),
        "sentence gap": -test["gap"].to_numpy(),
        **({"word overlap": test["overlap_chunk"].to_numpy(dtype=float)} if "overlap_chunk" in test else {}),
    }


@dataclass
class Transfer:
    """One held-out benchmark's scored partition (its test partition; its dev partition for the
    report's dev-only transfer): AUCs and differences against the gap."""

    benchmark: str
    sentences: int
    unsupported: int
    intervals: pd.DataFrame  # auc, lo, hi per method
    against_gap: pd.DataFrame  # diff, lo, hi, significant per method
    answers: pd.DataFrame = field(default_factory=pd.DataFrame)  # answer-level AUC per aggregation
    thresholds: tuple[float, float] | None = None  # token thresholds tuned on the fit's dev partitions


def fit_inputs(
    devs: Mapping[str, pd.DataFrame], test: pd.DataFrame, features: Sequence[str], sweep: pd.DataFrame | None = None,
) -> tuple[list[pd.DataFrame], pd.DataFrame, tuple[float, float] | None]:
    """The fit's dev partitions and the rows to score, with the token features added when
    ``features`` use them, at the pair that ``sweep`` (:func:`token_threshold_sweep`) rates
    best on those dev partitions only."""
    if not uses_token_features(features):
        return list(devs.values()), test, None
    if sweep is None:
        raise ValueError("token features need the dev partitions' threshold sweep "
                         "(detector_inputs.token_threshold_sweep)")
    thresholds = tuned_thresholds(sweep[list(devs)])
    return ([with_token_features(d, thresholds) for d in devs.values()], with_token_features(test, thresholds),
            thresholds)


def leave_one_benchmark_out(
    parts: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]], features: Sequence[str],
    n_resamples: int = 2000, seed: int = 0, sweep: pd.DataFrame | None = None,
) -> list[Transfer]:
    """Fit on the other benchmarks' dev partitions, score each benchmark's test partition
    (``sweep`` is needed when ``features`` use token features)."""
    transfers = []
    for held_out, (_, held_out_test) in parts.items():
        devs = {name: dev for name, (dev, _) in parts.items() if name != held_out}
        fit_devs, test, thresholds = fit_inputs(devs, held_out_test, features, sweep)
        scores = candidate_scores(fit_devs, test, features, seed)
        y = test["label"].to_numpy()
        boot = source_bootstrap(y, scores, test["source_id"].to_numpy(), n_resamples, seed)
        transfers.append(Transfer(held_out, len(test), int(y.sum()), boot.intervals(), boot.differences("sentence gap"),
                                  answer_level(test, scores["candidate"], n_resamples, seed), thresholds))
    return transfers


def transfer_table(transfers: Sequence[Transfer]) -> pd.DataFrame:
    """One row per held-out benchmark: the candidate's AUC, the gap's, and their difference."""
    return pd.DataFrame({
        t.benchmark: {"candidate": t.intervals.loc["candidate", "auc"],
                      "sentence gap": t.intervals.loc["sentence gap", "auc"],
                      "candidate − gap": interval_at(t.against_gap, "candidate", sign="+")}
        for t in transfers}).T


def answer_level(test: pd.DataFrame, probability: np.ndarray, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Answer-level AUC (label: any unsupported scored sentence) of the gap's aggregations
    (:func:`.answers.answer_table`) and the candidate's."""
    answers = answer_table(test)
    by_answer = test.assign(p=probability, log_q=np.log1p(-np.clip(probability, 0, 1 - 1e-9))
                            ).groupby("case_id", sort=False)
    scores = {
        "lowest sentence gap": answers["lowest sentence gap"].to_numpy(),
        "mean gap": answers["mean gap"].to_numpy(),
        "candidate, most suspicious sentence": by_answer["p"].max().to_numpy(),
        "candidate, mean": by_answer["p"].mean().to_numpy(),
        "candidate, any sentence (noisy-OR)": -by_answer["log_q"].sum().to_numpy(),
    }
    return source_bootstrap(answers["label"].to_numpy(), scores, answers["source_id"].to_numpy(), n_resamples, seed
                            ).intervals()


def single_features_on_dev(devs: Mapping[str, pd.DataFrame], features: Sequence[str],
                           n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Each feature's AUC (oriented as :func:`suspicion`) minus the gap's on each dev partition."""
    rows: dict[str, dict[str, str]] = {}
    for name, dev in devs.items():
        scores = {f: suspicion(dev, f) for f in features}
        boot = source_bootstrap(dev["label"].to_numpy(), scores, dev["source_id"].to_numpy(), n_resamples, seed)
        point, diff = boot.intervals(), boot.differences("gap")
        for f in features:
            text = f"{cell(point, f, 'auc'):.3f}" if f == "gap" else (
                f"{cell(point, f, 'auc'):.3f} ({interval_at(diff, f, sign='+')})")
            rows.setdefault(f, {})[name] = text
    return pd.DataFrame.from_dict(rows, orient="index")


@dataclass
class Verdict:
    better: list[str]
    worse: list[str]
    split_difference: float | None
    adopted: bool

    def text(self) -> str:
        split = "not measured" if self.split_difference is None else f"{self.split_difference:+.3f}"
        return (f"significantly better than the gap on {len(self.better)} benchmark(s) "
                f"({', '.join(self.better) or 'none'}); "
                f"significantly worse on {len(self.worse)} ({', '.join(self.worse) or 'none'}); "
                f"whole-split difference {split}: {'adopt' if self.adopted else 'do not adopt'}")


def apply_rule(transfers: Sequence[Transfer], split_difference: float | None) -> Verdict:
    """The adoption rule of docs/detector-selection.md."""
    better = [t.benchmark for t in transfers if cell(t.against_gap, "candidate", "lo") > 0]
    worse = [t.benchmark for t in transfers if cell(t.against_gap, "candidate", "hi") < 0]
    adopted = len(better) >= 2 and not worse and split_difference is not None and split_difference >= 0
    return Verdict(better, worse, split_difference, adopted)


def split_difference(parts: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]], split: pd.DataFrame,
                     features: Sequence[str], seed: int = 0, sweep: pd.DataFrame | None = None
                     ) -> tuple[float, float, float]:
    """Rule 3: the candidate fitted on every dev partition (token thresholds tuned on all of
    them, from ``sweep``), on the whole split's test partition less the sources it saw:
    (candidate AUC, gap AUC, difference)."""
    from sklearn.metrics import roc_auc_score

    seen = set(pd.concat([dev for dev, _ in parts.values()])["source_id"])
    _, test = partitioned(split, seed)
    test = test[~test["source_id"].isin(seen)].reset_index(drop=True)
    devs, test, _ = fit_inputs({name: dev for name, (dev, _) in parts.items()}, test, features, sweep)
    p = fit_logistic(devs, features).predict_proba(test[list(features)].to_numpy(dtype=float))[:, 1]
    a, g = roc_auc_score(test["label"], p), roc_auc_score(test["label"], -test["gap"])
    return float(a), float(g), float(a - g)


def with_overlap(features: FeatureSet) -> pd.DataFrame:
    """A feature set's detector table with its lexical signals where they are stored, for the
    word-overlap row; as it is where they are not, or are stale (the row is then left out)."""
    table = detector_table(features)
    try:
        return lexical_columns(features, table)
    except ValueError:
        return table


def selection_report(sets: Mapping[str, FeatureSet], split: FeatureSet | None, candidate: str, command: str,
                     n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report: token thresholds and single features on dev, leave-one-benchmark-out,
    the rule's verdict."""
    features = CANDIDATES[candidate]
    parts = {name: partitioned(with_overlap(fs), seed) for name, fs in sets.items()}
    if uses_token_features(features):
        lacking = [name for name, (dev, _) in parts.items() if not has_token_rows(dev)]
        if split is not None and not has_token_rows(split.table):
            lacking.append("the whole split")
        if lacking:
            raise ValueError(f"candidate {candidate} needs token rows for {', '.join(lacking)}: "
                             "extract with --token-rows (scripts/token_rows.sh)")
    scored = "; ".join(f"{n}: {fs.key}, {fs.table['case_id'].nunique()} answers scored" for n, fs in sets.items())
    lines = [f"# Detector selection: candidate {candidate}", "", f"`{command}`", "",
             f"Protocol and rule: docs/detector-selection.md. Scorer and configuration: {scored}.", ""]
    devs = {name: dev for name, (dev, _) in parts.items()}
    sweep = None
    if uses_token_features(features):
        sweep = token_threshold_sweep(devs)
        thresholds = tuned_thresholds(sweep)
        devs = {name: with_token_features(dev, thresholds) for name, dev in devs.items()}
        lines += ["## Token thresholds on the dev partitions", "",
                  "For each (dependent, unresolved) pair in nats, each dev partition's mean AUC of `gap_dep` and "
                  "`unresolved_share`. A fit uses the pair with the best mean over its own dev partitions: each "
                  "leave-one-benchmark-out fit over the two benchmarks it is fitted on, the single features below "
                  f"and rule 3 over all {len(devs)} ({thresholds[0]:g}, {thresholds[1]:g}).", "",
                  markdown_table(sweep.set_axis([f"{d:g}, {u:g}" for d, u in sweep.index])), ""]
    lines += ["## Single features on the dev partitions", "",
              "AUC of each feature as a suspicion score (orientation fixed in advance), and its paired "
              "difference from the gap with a 95% source-level interval. Tuning reads these, never the test "
              "partitions.", "",
              markdown_table(single_features_on_dev(devs, features, n_resamples, seed)), "",
              "## Leave-one-benchmark-out within the dev partitions", "",
              "The same fits scored on the held-out benchmark's dev partition instead of its test partition: "
              "how well the candidate transfers, read before any test partition (AUC, and its difference from "
              "the gap with a 95% source-level interval).", "",
              markdown_table(transfer_table(leave_one_benchmark_out({n: (dev, dev) for n, (dev, _) in parts.items()},
                                                                    features, n_resamples, seed, sweep))), "",
              "## Leave-one-benchmark-out (test partitions)", ""]
    transfers = leave_one_benchmark_out(parts, features, n_resamples, seed, sweep)
    for t in transfers:
        table = t.intervals.join(t.against_gap[["diff", "lo", "hi"]].add_prefix("vs gap "))
        tuned = "" if t.thresholds is None else f", token thresholds {t.thresholds[0]:g}, {t.thresholds[1]:g}"
        lines += [f"### Held out: {t.benchmark} ({t.sentences} test sentences, {t.unsupported} unsupported{tuned})", "",
                  markdown_table(table), "", "Answer level:", "", markdown_table(t.answers), ""]
    difference = None
    if split is not None:
        a, g, difference = split_difference(parts, detector_table(split), features, seed, sweep)
        lines += ["## Whole RAGTruth test split (rule 3)", "",
                  f"Fitted on every dev partition; on the test partition of the split ({split.key}, "
                  f"{split.table['case_id'].nunique()} answers scored) less the sources the fit saw: "
                  f"candidate {a:.3f}, gap {g:.3f}, difference {difference:+.3f}.", ""]
    lines += ["## Verdict", "", apply_rule(transfers, difference).text() + ".", ""]
    return "\n".join(lines)
