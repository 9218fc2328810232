"""Report sections beyond Tables 3-9: signed sensitivity, verifiers (Tables 7 and 8, the
cascade), attribution quality and the cost frontier. Each returns Markdown lines and a
JSON-ready dict; a section whose inputs are missing says which command produces them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..caches.attribution import attribution_summary
from ..caches.verifier_scores import load_verifier_cache
from ..statistics.benchmark_result import BenchmarkResult
from ..statistics.compare import REFERENCE_COLUMNS, VerifierComparison, compare_verifier, flagging_table, table7, table8
from ..statistics.escalation import cascade_table
from ..statistics.frontier import frontier_table
from ..statistics.signed import CANDIDATE, KIND_MIN_AUC, kind_separation
from . import figures
from .tables import bracketed, frame_numbers, interval_cells, markdown_table

VERIFIER_HINT = ("a verifier writes its scores there (one folder per verifier: config.json and part-*.parquet, "
                 "format in docs/evaluation.md, \"Verifier scores\")")
ATTRIBUTION_HINT = ("`groundsense eval attribution-pairs` writes the chunk pairs to rate, then `groundsense eval "
                    "rate-attribution --judge SCORER` writes a judge's ratings beside them as ratings-<judge>.parquet "
                    "(docs/evaluation.md, \"Attribution quality\")")


@dataclass
class Section:
    lines: list[str] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)


def signed_section(result: BenchmarkResult, seed: int, n_resamples: int) -> Section:
    section = Section(["### Signed sensitivity: conflict vs baseless (test)", ""])
    dev, test = result.partitions()
    if "drops" not in test.columns:
        section.lines += ["Not computed: the feature set has no per-chunk drops.", ""]
        return section
    separation = kind_separation(dev, test, seed, n_resamples)
    if separation is None:
        section.lines += ["Not computed: the development or test partition lacks conflicting or baseless "
                          "unsupported sentences (the benchmark has no types, or too few).", ""]
        return section
    table = separation.table()
    shown = table.assign(**{"AUC [95% CI]": interval_cells(table)})[["AUC [95% CI]", "higher means"]]
    added = separation.added
    verdict = "met: a `kind` hint would be justified" if separation.reliable else "not met: no `kind` hint"
    section.lines += [
        f"Unsupported test sentences: {separation.n_conflict} conflict, {separation.n_baseless} baseless, "
        f"from {separation.n_sources} sources; AUC of telling conflict (positive) from baseless.", "",
        markdown_table(shown), "",
        f"Signed features added to the grounding logistic: Δ AUC {added['diff']:.3f} "
        f"[{added['lo']:.3f}, {added['hi']:.3f}].",
        f"Rule for a `kind` hint ({CANDIDATE} AUC ≥ {KIND_MIN_AUC} with its interval excluding 0.5): {verdict}.", "",
    ]
    section.numbers = {"auc": table.to_dict("index"), "added_to_grounding": added, "reliable": separation.reliable,
                       "n_conflict": separation.n_conflict, "n_baseless": separation.n_baseless}
    return section


def verifier_comparisons(result: BenchmarkResult, root: Path, seed: int, n_resamples: int) -> list[VerifierComparison]:
    caches = load_verifier_cache(root, result.features.benchmark)
    dev, test = result.partitions()
    comparisons = [compare_verifier(dev, test, rows, key, seed, n_resamples)
                   for key, rows in caches.items()]
    return [c for c in comparisons if c is not None]


def verifier_section(
    result: BenchmarkResult, comparisons: list[VerifierComparison], root: Path, folder: Path, name: str,
    seed: int, n_resamples: int,
) -> Section:
    where = root / result.features.benchmark
    if not comparisons:
        return Section(["### Verifiers (Tables 7 and 8, cascade)", "",
                        f"No verifier scores under `{where}`: {VERIFIER_HINT}.", ""])
    t7, t8, flags = table7(comparisons), table8(comparisons), flagging_table(comparisons)
    section = Section(
        ["### Table 7: verifiers against the detector (span AUC, test)", "",
         "On the test sentences each verifier scored, against the detector and word overlap (the baseline, where "
         "the sentences carry their lexical signals) on the same sentences; `beats`: a method the verifier beats "
         "with a source-level paired interval excluding zero.", "", markdown_table(bracketed(t7)), "",
         "### Table 8: complementarity (logistic regressions fit on dev, span AUC on test)", "",
         "Δ1 = verifier + grounding − verifier alone; Δ2 = verifier + grounding − verifier + perplexity, length; "
         "ρ: Spearman correlation of the verifier's score with each detector's.", "",
         markdown_table(bracketed(t8)), "",
         "### Flagging and calibration (thresholds chosen on dev, test)", "",
         "Each verifier and the sentence gap on the verifier's test sentences, flagged at the threshold that "
         "maximises F1 on dev (`verifier threshold`: the verifier's, on its raw score, what "
         "`groundsense detect --verifier-threshold` takes). Brier: of the verifier's raw score where it is a "
         "probability (the judge's "
         "1 − P(supported)), of a logistic calibration fit on dev, and of predicting dev's base rate.", "",
         markdown_table(flags), ""],
        {"table7": frame_numbers(t7), "table8": frame_numbers(t8), "flagging": frame_numbers(flags), "cascade": {}},
    )
    for c in comparisons:
        for detector in REFERENCE_COLUMNS:
            table = cascade_table(c, detector, result.cost, seed=seed, n_resamples=n_resamples)
            path = figures.cascade_curve(table, folder / f"{name}-cascade-{c.name}-{detector.replace(' ', '-')}.png")
            section.lines += [f"### Cascade: {detector} → {c.name}", "",
                              markdown_table(bracketed(table.rename(columns={
                                  "auc": "AUC", "lo": "AUC lo", "hi": "AUC hi",
                                  "Δ lo": "Δ vs verifier lo", "Δ hi": "Δ vs verifier hi"}))),
                              "", f"![cascade](figures/{path.name})", ""]
            section.numbers["cascade"][f"{c.name} | {detector}"] = frame_numbers(table)
    return section


def attribution_section(result: BenchmarkResult, root: Path) -> Section:
    folder = root / result.features.benchmark / result.features.key
    files = sorted(folder.glob("ratings-*.parquet"))
    section = Section(["### Attribution quality (grounded sentences, judge ratings)", ""])
    if not files:
        section.lines += [f"No ratings under `{folder}`: {ATTRIBUTION_HINT}.", ""]
        return section
    for path in files:
        summary = attribution_summary(pd.read_parquet(path))
        section.lines += [f"`{path.name}`: supported = rated full or partial; Wilcoxon signed-rank on the paired "
                          "four-level ratings.", "", markdown_table(summary.rates), "",
                          markdown_table(summary.tests), ""]
        section.numbers[path.stem] = {"rates": frame_numbers(summary.rates), "tests": frame_numbers(summary.tests)}
    return section


def frontier_section(results: list[BenchmarkResult], comparisons: dict[str, list[VerifierComparison]],
                     folder: Path) -> Section:
    frame = frontier_table(results, comparisons)
    section = Section(["## Figure 4: cost and accuracy", "",
                       "Span AUC (test) against GFLOPs per sentence (2 × parameters × tokens); seconds measured "
                       "where `seconds_measured`, else scaled by GFLOPs (Table 9). `n`: the test sentences an AUC "
                       "rests on; a verifier's are only those it scored, and `gap_same_sentences` is the sentence gap "
                       "on exactly them (scored by `gap_scorer`).",
                       ""])
    for benchmark, group in frame.groupby("benchmark", sort=True):
        path = figures.cost_frontier(group, folder / f"frontier-{benchmark}.png")
        section.lines += [f"### {benchmark}", "", markdown_table(group.drop(columns="benchmark").set_index("method")),
                          "", f"![frontier](figures/{path.name})", ""]
    section.numbers = {"frontier": frame.to_dict("records")}
    return section
