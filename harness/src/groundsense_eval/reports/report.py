"""The evaluation report from the feature cache alone: Markdown tables mirroring the paper's
Tables 3, 4, 5, 6 and 9, a JSON file of every number, and PNG figures.

Each full-mode feature set (benchmark x scorer x configuration) is evaluated with
:func:`metrics.evaluate` on its seeded source-level 60/40 split; two-pass sets (no
leave-one-out features) contribute their cost and their gap methods' place on the cost
frontier. With more than one benchmark under one configuration, a transfer matrix trains
LightGBM (the six grounding features) on one benchmark's dev partition and scores another's
test partition. Each set's partitions and cost come from :mod:`..statistics.benchmark_result`, the sections
beyond the paper's tables (signed sensitivity, verifiers, cascade, attribution, cost frontier)
from :mod:`.analyses`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from groundsense.features import GROUNDING

from ..caches.extract import FeatureSet
from ..caches.layout import cache_folder
from ..statistics.benchmark_result import BenchmarkResult, evaluate_set, partitioned
from ..statistics.methods import lightgbm_scores, method_scores
from ..statistics.metrics import MEAN, auc_or_nan
from . import analyses, figures
from .tables import bracketed, frame_numbers, interval_cells, json_safe, markdown_table


def transfer_matrix(sets: list[FeatureSet], seed: int = 0) -> pd.DataFrame:
    """Span AUC of LightGBM (the six grounding features) trained on the row benchmark's dev,
    tested on the column's test."""
    parts = {s.benchmark: partitioned(s.table, seed) for s in sets}
    return pd.DataFrame(
        {
            target: {
                source: auc_or_nan(test["label"].to_numpy(), lightgbm_scores(dev, test, GROUNDING, seed))
                for source, (dev, _) in parts.items()
            }
            for target, (_, test) in parts.items()
        }
    )


def write_report(
    sets: list[FeatureSet],
    out: str | Path,
    seed: int = 0,
    n_resamples: int = 2000,
    verifiers: str | Path | None = None,
    attribution: str | Path | None = None,
) -> Path:
    """Write ``report.md``, ``report.json`` and ``figures/*.png`` under ``out``; return the Markdown path.

    ``verifiers`` is the root of the verifier score cache and ``attribution`` of the
    attribution pairs and ratings (see :mod:`analyses`; by default those of ``runs/``,
    :func:`..caches.layout.cache_folder`); where they hold nothing for a set, its sections say where
    they looked.
    """
    out = Path(out)
    folder = out / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    verifiers = Path(verifiers or cache_folder("verifiers"))
    attribution = Path(attribution or cache_folder("attribution"))
    results = [evaluate_set(s, seed, n_resamples) for s in sets]
    sections = ["# groundsense evaluation", ""]
    numbers: dict[str, Any] = {"seed": seed, "n_resamples": n_resamples, "sets": {}}  # report.json, any JSON
    comparisons: dict[str, list] = {}
    for result in results:
        name = f"{result.features.benchmark}-{result.features.key}"
        sections += _set_markdown(result)
        numbers["sets"][name] = _set_numbers(result)
        if result.evaluation is not None:
            sections += _figures_markdown(_set_figures(result, folder, name, seed))
            comparisons[name] = analyses.verifier_comparisons(result, verifiers, seed, n_resamples)
            for key, section in {
                "signed": analyses.signed_section(result, seed, n_resamples),
                "verifiers": analyses.verifier_section(result, comparisons[name], verifiers, folder, name, seed,
                                                       n_resamples),
                "attribution": analyses.attribution_section(result, attribution),
            }.items():
                sections += section.lines
                numbers["sets"][name][key] = section.numbers
    frontier = analyses.frontier_section(results, comparisons, folder)
    sections += frontier.lines
    numbers.update(frontier.numbers)
    for key, group in _transfer_groups(sets).items():
        matrix = transfer_matrix(group, seed)
        path = figures.transfer_heatmap(matrix, out / "figures" / f"transfer-{key}.png")
        sections += [f"## Transfer across benchmarks ({key})", "",
                     "LightGBM trained on the row benchmark's dev partition, span AUC on the column's test partition.",
                     "", markdown_table(matrix), "", f"![transfer](figures/{path.name})", ""]
        numbers.setdefault("transfer", {})[key] = frame_numbers(matrix)
    (out / "report.json").write_text(json.dumps(json_safe(numbers), indent=2) + "\n")
    markdown = out / "report.md"
    markdown.write_text("\n".join(sections) + "\n")
    return markdown


def _transfer_groups(sets: list[FeatureSet]) -> dict[str, list[FeatureSet]]:
    """Full-mode sets sharing a configuration, where more than one benchmark has it."""
    groups: dict[str, list[FeatureSet]] = {}
    for s in sets:
        if s.config["mode"] == "full":
            groups.setdefault(s.key, []).append(s)
    return {k: v for k, v in groups.items() if len({s.benchmark for s in v}) > 1}


def _set_figures(result: BenchmarkResult, folder: Path, name: str, seed: int) -> list[Path]:
    dev, test = result.partitions()
    assert result.evaluation is not None, "figures are drawn for evaluated sets only"
    scores = method_scores(dev, test, seed)  # evaluate() keeps only the AUCs
    ablation = result.evaluation.ablation.intervals().loc[list(GROUNDING)]
    return [
        figures.roc_curves(test["label"].to_numpy(), scores, folder / f"{name}-roc.png"),
        figures.feature_bars(ablation, folder / f"{name}-features.png"),
        figures.drop_distribution(result.features.table, folder / f"{name}-drop-max.png"),
    ]


def _figures_markdown(paths: list[Path]) -> list[str]:
    return [f"![{p.stem}](figures/{p.name})" for p in paths] + [""]


def _scoring_seconds(sentences: pd.DataFrame) -> float:
    return float(sentences.drop_duplicates("case_id")["seconds"].astype(float).sum())


def _set_markdown(result: BenchmarkResult) -> list[str]:
    f = result.features
    lines = [f"## {result.title}", "",
             f"{f.sentences['case_id'].nunique()} answers, {len(f.sentences)} sentences "
             f"({_left_out(f)}), {len(f.errors)} answers failed; "
             f"scoring took {_scoring_seconds(f.sentences):,.0f} s in all (sum over answers).", ""]
    e = result.evaluation
    if e is None:
        lines += [f"Not evaluated: {result.skipped}.", ""]
    else:
        span = pd.DataFrame({"AUC [95% CI]": interval_cells(e.span.intervals())})
        diff = e.span.differences("sentence gap")
        span["Δ vs sentence gap [95% CI]"] = interval_cells(diff, "diff")
        span["significant"] = diff["significant"]
        ablation = pd.DataFrame({"AUC [95% CI]": interval_cells(e.ablation.intervals())})
        ablation["Δ vs all six [95% CI]"] = interval_cells(e.ablation.differences("all six"), "diff")
        t = e.threshold
        lines += [
            "### Table 3: span-level AUC (test)", "", markdown_table(span.fillna("—")), "",
            f"Gap threshold chosen on dev (max F1): t = {t['threshold']:.3f}; on test precision "
            f"{t['precision']:.3f}, recall {t['recall']:.3f}, F1 {t['f1']:.3f}.", "",
            "### Table 4: sentence level against answer level (test)", "",
            *_levels_note(result.partitions()[1]), "", markdown_table(bracketed(e.levels())), "",
            "### Table 5: by hallucination type and by task (span AUC, test)", "",
            markdown_table(e.by_type), "", markdown_table(e.by_task), "",
            "### Table 6: feature ablation (LightGBM fit on dev, span AUC on test)", "",
            markdown_table(ablation.fillna("—")), "",
        ]
    lines += ["### Table 9: cost per sentence", "",
              "Tokens: passes × one full-context pass; GFLOPs = 2 × parameters × tokens; seconds measured "
              "where `seconds_measured`, else scaled by GFLOPs.", "", markdown_table(result.cost), ""]
    return lines


def _left_out(f: FeatureSet) -> str:
    """How many sentences went unscored and, where any did, how many of them are unsupported
    against the scored ones (sentences past the answer cap may not be like the rest)."""
    left_out = len(f.sentences) - len(f.table)
    text = f"{left_out} unscored and left out"
    if not left_out:
        return text
    unsupported = int(f.sentences["label"].astype(int).sum()) - int(f.table["label"].sum())
    return (f"{text}: {unsupported / left_out:.1%} of them unsupported, against "
            f"{f.table['label'].mean():.1%} of the scored")


def _levels_note(test: pd.DataFrame) -> list[str]:
    answers = test.groupby("case_id")["label"].max()
    return [f"{len(answers)} test answers, {int(answers.sum())} with an unsupported scored sentence. Sentence level: "
            "span AUC (Table 3). Answer level: answers ranked by the score of their most suspicious sentence (for "
            f"the gap, the lowest sentence gap) or by the {MEAN} of their sentences' scores (for the gap, the "
            "answer's mean gap). Δ: an answer level minus the sentence level, with a source-level paired interval "
            "(significant where it excludes zero)."]


def _set_numbers(result: BenchmarkResult) -> dict:
    f = result.features
    numbers = {
        "config": f.config,
        "answers": int(f.sentences["case_id"].nunique()),
        "sentences": len(f.sentences),
        "scored_sentences": len(f.table),
        "unsupported_sentences": int(f.table["label"].sum()),
        "unsupported_unscored_sentences": int(f.sentences["label"].astype(int).sum()) - int(f.table["label"].sum()),
        "errors": f.errors.to_dict("records"),
        "cost": frame_numbers(result.cost),
        "skipped": result.skipped,
    }
    e = result.evaluation
    if e is not None:
        numbers.update(
            span=frame_numbers(e.span.intervals()),
            span_vs_sentence_gap=frame_numbers(e.span.differences("sentence gap")),
            span_vs_perplexity=frame_numbers(e.span.differences("perplexity")),
            threshold=e.threshold,
            response=frame_numbers(e.response.intervals()),
            levels=frame_numbers(e.levels()),
            by_type=frame_numbers(e.by_type),
            by_task=frame_numbers(e.by_task),
            ablation=frame_numbers(e.ablation.intervals()),
            ablation_vs_all_six=frame_numbers(e.ablation.differences("all six")),
        )
    return numbers
