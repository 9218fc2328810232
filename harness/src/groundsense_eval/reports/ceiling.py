"""How far the product's signals go in a domain with its own labels: on each benchmark's dev
partition, a logistic regression trained on that benchmark's labels over a set of signals,
judged out of fold (five source-grouped folds, as `groundsense fit` judges a team's fit), against
word overlap.

A label-free rule weighs the same signals without seeing the domain's labels, so a fit that
learns the domain's own weights indicates how far such a rule can be expected to go: where even
that fit does not rank sentences :data:`GOAL` better than word overlap (issue #39's goal), a
label-free fusion of those signals is unlikely to, and the gap needs a signal they lack. Not a
strict bound: another rule (ranks, a noisy-OR) is not a linear fit. It also counts the
*covered* sentences, which state no content-word stem and no number the evidence lacks, and how
well each signal ranks them. Dev partitions only: no test sentence is read, so
the report needs no protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from groundsense.calibration import (
    LOGISTIC_FEATURES,
    LOGISTIC_SIGNALS,
    Calibration,
    Comparison,
    compare,
    cross_validate,
    fitted_rows,
    logistic_sides,
)
from groundsense.lexical import LEXICAL

from ..caches.extract import FeatureSet
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import source_bootstrap
from .few_labels import OVERLAP
from .fusion import fusion_table
from .fusion_judge import JUDGE, judge_spec, with_judges
from .tables import interval_cells, interval_text, markdown_table

GOAL = 0.02  # the goal: at least word overlap's sentence AUC + 0.02
# The signal sets, fitted on every dev sentence; the judged sets on the sentences the judges scored.
SETS: dict[str, tuple[str, ...]] = {
    "the scorer's features": LOGISTIC_FEATURES,
    "the lexical signals": LEXICAL,
    "the scorer's features and the lexical signals": LOGISTIC_SIGNALS,  # what `groundsense fit` reads by default
}
# What ranks the sentences that state no content-word stem and no number the evidence lacks (:func:`covered_rows`).
COVERED_SCORES = {"sensitivity": "sensitivity", OVERLAP: "word overlap", "bigram_novel": "word pairs"}
JUDGED_SETS: dict[str, tuple[str, ...]] = {
    "the scorer's features and the lexical signals": SETS["the scorer's features and the lexical signals"],
    f"the same and the judge's score ({JUDGE})": (*SETS["the scorer's features and the lexical signals"], JUDGE),
}


def in_domain_fit(rows: pd.DataFrame, names: Sequence[str], n_resamples: int, seed: int) -> Comparison:
    """The logistic fit over ``names`` on ``rows``' own labels (*fitted*, out of fold) against
    word overlap (*default*), with paired source-level intervals."""
    # as the detector hands features to a score: n_tokens, of which log_n_tokens is the log
    columns = {name: rows[name].to_numpy(float) for name in {*names, "gap", "n_tokens"} - {"log_n_tokens"}}
    complete = fitted_rows(columns, names)  # a fit needs every value; overlap is judged on the same sentences
    rows, columns = rows[complete], {name: values[complete] for name, values in columns.items()}
    labels = rows["label"].to_numpy(int)
    sides = logistic_sides(columns, labels, rows[OVERLAP].to_numpy(float), names)  # as `fit` checks a fit
    return compare(cross_validate(labels, rows["source_id"].to_numpy(), sides), n_resamples, seed)


def ceiling_rows(devs: Mapping[str, pd.DataFrame], sets: Mapping[str, Sequence[str]], n_resamples: int, seed: int
                 ) -> pd.DataFrame:
    """A row per (benchmark, signal set): the fit's and word overlap's sentence AUC, their
    difference, and whether it reaches the goal."""
    rows = {}
    for benchmark, dev in devs.items():
        for label, names in sets.items():
            found = in_domain_fit(dev, names, n_resamples, seed)
            rows[f"{benchmark} · {label}"] = {
                **comparison_row(found), f"≥ +{GOAL}": "yes" if found.auc["fitted − default"][0] >= GOAL else "no"}
    return pd.DataFrame.from_dict(rows, orient="index")


def comparison_row(found: Comparison) -> dict[str, str]:
    """A table row of an in-domain fit against word overlap: the sentences (the unsupported in
    parentheses), the sources, both AUCs and their difference, with intervals."""
    return {"sentences": f"{found.sentences:,} ({found.unsupported:,})", "sources": f"{found.groups:,}",
            "in-domain fit": interval_text(*found.auc["fitted"]), "word overlap": interval_text(*found.auc["default"]),
            "fit − word overlap": interval_text(*found.auc["fitted − default"], sign="+")}


def reached(table: pd.DataFrame, devs: Mapping[str, pd.DataFrame]) -> str:
    """A line on which benchmarks some signal set's fit brings to the goal, and which none does."""
    met = {b: [row.split(" · ", 1)[1] for row in table.index if row.startswith(f"{b} · ") and
               table.loc[row, f"≥ +{GOAL}"] == "yes"] for b in devs}
    return (f"Reaching word overlap + {GOAL} with the domain's own labels: "
            + "; ".join(f"{b}: {', '.join(sets) if sets else 'no set'}" for b, sets in met.items()) + ".")


def _share(part: np.ndarray, whole: np.ndarray) -> str:
    return f"{part.sum():,} of {whole.sum():,}" + (f" ({part.sum() / whole.sum():.0%})" if whole.any() else "")


def covered_rows(devs: Mapping[str, pd.DataFrame], scores: Mapping[str, str], n_resamples: int, seed: int
                 ) -> pd.DataFrame:
    """Per benchmark: how many of its unsupported (and supported) sentences are *covered*, stating
    no content-word stem and no number the evidence lacks (``stem_novel`` and ``novel_numbers``
    0), and how well each of ``scores`` (column -> label) ranks the covered sentences."""
    rows = {}
    for name, dev in devs.items():
        covered = (dev["stem_novel"].to_numpy(float) == 0) & (dev["novel_numbers"].to_numpy(float) == 0)
        unsupported = dev["label"].to_numpy(int) == 1
        row = {"unsupported, covered": _share(covered & unsupported, unsupported),
               "supported, covered": _share(covered & ~unsupported, ~unsupported)}
        found = dev[covered]
        if found["label"].nunique() == 2:
            values = {label: found[column].to_numpy(float) for column, label in scores.items()}
            boot = source_bootstrap(found["label"].to_numpy(int), values, found["source_id"].to_numpy(),
                                    n_resamples, seed)
            row |= {str(label): text for label, text in interval_cells(boot.intervals()).items()}
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def covered_section(heading: str, devs: Mapping[str, pd.DataFrame], scores: Mapping[str, str], n_resamples: int,
                    seed: int) -> list[str]:
    """A report's lines on the covered sentences (:func:`covered_rows`)."""
    return [heading, "",
            "Sentences that state no content-word stem and no number the evidence lacks (*covered*: `stem_novel` "
            "and `novel_numbers` 0). Stop words are not content words, and among them are *not*, *no*, *never* "
            "and *all*: a covered sentence may still add a negation or a quantifier. Stem novelty and novel numbers "
            "score every covered sentence 0; the other lexical signals and the models' can still set an unsupported "
            "one apart. AUC among the covered sentences (95% intervals over sources):", "",
            markdown_table(covered_rows(devs, scores, n_resamples, seed)), ""]


def ceiling_report(sets: Mapping[str, FeatureSet], calibration: Calibration, verifiers: Path | None, command: str,
                   n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report: every benchmark's dev partition with :data:`SETS`, then (with
    ``verifiers``, the judges' cache) its judged dev sentences with :data:`JUDGED_SETS`."""
    devs = {name: partitioned(fusion_table(features, calibration), seed)[0] for name, features in sets.items()}
    every = ceiling_rows(devs, SETS, n_resamples, seed)
    lines = ["# How far the signals go: a fit on each domain's own labels", "", f"`{command}`", "",
             "Sentence AUC on each benchmark's dev partition (the seeded source-level 60%; no test sentence is "
             "read) of a logistic regression (C = 0.1, standardised, as `groundsense fit`) trained on that "
             "benchmark's own labels over a set of signals, each sentence scored by a fit that never saw its "
             "source (five source-grouped folds), against word overlap (`overlap_chunk`) on the same sentences; "
             f"95% intervals over sources ({n_resamples:,} paired resamples). *sentences* counts them (the unsupported "
             "in parentheses). A label-free rule (candidates F and J, docs/detector-selection.md) weighs the same "
             "signals without the domain's labels: where this fit does not reach word overlap "
             f"+ {GOAL}, such a rule is unlikely to, and the gap needs a signal these lack. *≥ +{GOAL}*: whether "
             "the difference's point estimate reaches the goal, as the selection reports read the issue's goals "
             "(its interval is beside it).", "",
             "The scorer's features: " + ", ".join(f"`{n}`" for n in LOGISTIC_FEATURES) + ". The lexical signals: "
             + ", ".join(f"`{n}`" for n in LEXICAL) + " (`groundsense.lexical`).", "",
             "## Every dev sentence", "", markdown_table(every), "", reached(every, devs), "",
             *covered_section("### Covered sentences", devs, COVERED_SCORES, n_resamples, seed)]
    if verifiers is not None:
        judged = {name: with_judges(dev, verifiers, name) for name, dev in devs.items()}
        lines += ["## The judged dev sentences", "",
                  "The dev sentences the cached judges scored (`groundsense eval verify`), with the score "
                  f"(P(unsupported)) of the judge candidate J fuses ({JUDGE}: {judge_spec()}) as one more signal.", "",
                  markdown_table(table := ceiling_rows(judged, JUDGED_SETS, n_resamples, seed)), "",
                  reached(table, judged), "",
                  *covered_section("### Covered judged sentences", judged, {**COVERED_SCORES, JUDGE: JUDGE},
                                   n_resamples, seed)]
    return "\n".join(lines)
