"""The evaluation report from the feature cache alone: Markdown tables mirroring the paper's
Tables 3, 4, 5, 6 and 9, a JSON file of every number, and PNG figures.

Each full-mode feature set (benchmark x scorer x configuration) is evaluated with
:func:`metrics.evaluate` on its seeded source-level 60/40 split; two-pass sets (no
leave-one-out features) contribute their cost and their gap methods' place on the cost
frontier. With more than one benchmark under one configuration, a transfer matrix trains
Sensitivity on one benchmark's dev partition and scores another's test partition. The
sections beyond the paper's tables (signed sensitivity, verifiers, cascade, attribution,
cost frontier) come from :mod:`analyses`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..features import GROUNDING
from . import analyses, figures
from .extract import FeatureSet
from .methods import add_answer_columns, lightgbm_scores, method_scores
from .metrics import MEAN, Evaluation, auc_or_nan, evaluate
from .split import DEV, TEST, assign_partition

# Scoring passes each method needs per answer ("K+2": every leave-one-out condition).
PASSES = {
    "perplexity": "1",
    "length": "1",
    "answer gap": "2",
    "sentence gap": "2",
    "standardised sum": "K+2",
    "sensitivity": "K+2",
    "sensitivity + baselines": "K+2",
}
MODE_PASSES = {"two_pass": "2", "full": "K+2"}


@dataclass
class BenchmarkResult:
    """One feature set's cost and, for full-mode sets, its partitions and evaluation."""

    features: FeatureSet
    cost: pd.DataFrame
    dev: pd.DataFrame | None = None
    test: pd.DataFrame | None = None
    evaluation: Evaluation | None = None
    skipped: str | None = None  # why there is no evaluation

    @property
    def title(self) -> str:
        c = self.features.config
        mode = c["mode"] + (" (masked leave-one-out)" if c.get("leave_one_out") == "masked" else "")
        return f"{self.features.benchmark} — {c['scorer']}, {mode}, K={c['k']} ({self.features.key})"


def partitioned(table: pd.DataFrame, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Development and test rows of the seeded source-level 60/40 split (by task), answer columns added."""
    table = add_answer_columns(table)
    if "partition" not in table.columns:
        table = table.assign(partition=assign_partition(table, seed=seed))
    return (
        table[table["partition"] == DEV].reset_index(drop=True),
        table[table["partition"] == TEST].reset_index(drop=True),
    )


def cost_table(features: FeatureSet) -> pd.DataFrame:
    """Cost per sentence of each method: passes, tokens, GFLOPs and seconds.

    Tokens = passes x the tokens of one full-context pass, summed over answers and divided by
    their labelled sentences; GFLOPs = 2 x parameters x tokens. Seconds are measured for the
    methods the extraction's mode runs (``full``: the K+2 methods; ``two_pass``: the gap
    methods) and scaled by GFLOPs for the others. The "as run" row counts the tokens the
    scorer actually processed (the shared prefix is reused across conditions).
    """
    rows = features.sentences
    answers = rows.drop_duplicates("case_id")
    n_sentences = len(rows)
    flops_per_token = 2 * features.config["n_parameters"] / 1e9
    prompt, chunks = answers["prompt_tokens"].astype(float), answers["n_chunks"].astype(float)

    def tokens(passes: str) -> float:
        per_answer = prompt * (chunks + 2) if passes == "K+2" else prompt * int(passes)
        return float(per_answer.sum() / n_sentences)

    measured_passes = MODE_PASSES[features.config["mode"]]
    seconds = float(answers["seconds"].sum() / n_sentences)
    measured_tokens = tokens(measured_passes)
    table = pd.DataFrame(
        {
            "passes": PASSES,
            "tokens": {m: tokens(p) for m, p in PASSES.items()},
        }
    )
    table["gflops"] = table["tokens"] * flops_per_token
    table["seconds"] = seconds * table["tokens"] / measured_tokens
    table["seconds_measured"] = table["passes"] == measured_passes
    as_run = float(answers["tokens_processed"].astype(float).sum() / n_sentences)
    table.loc[f"extraction as run ({features.config['mode']})"] = [
        measured_passes, as_run, as_run * flops_per_token, seconds, True
    ]
    return table


def transfer_matrix(sets: list[FeatureSet], seed: int = 0) -> pd.DataFrame:
    """Span AUC of Sensitivity trained on the row benchmark's dev, tested on the column's test."""
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


def evaluate_set(features: FeatureSet, seed: int = 0, n_resamples: int = 2000) -> BenchmarkResult:
    """Cost, and for a full-mode set with both labels in both partitions, the evaluation."""
    result = BenchmarkResult(features, cost_table(features))
    result.dev, result.test = partitioned(features.table, seed)
    if features.config["mode"] != "full":
        result.skipped = "two-pass extraction: no leave-one-out features; cost and the cost frontier only"
        return result
    if not all(set(part["label"]) == {0, 1} for part in (result.dev, result.test)):
        result.skipped = "too few answers: the dev or test partition lacks grounded or unsupported sentences"
        return result
    result.evaluation = evaluate(pd.concat([result.dev, result.test], ignore_index=True), seed, n_resamples)
    return result


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
    attribution pairs and ratings (see :mod:`analyses`; default ``results/verifiers`` and
    ``results/attribution`` under the working directory); where they hold nothing for a
    set, its sections say where they looked.
    """
    out = Path(out)
    folder = out / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    verifiers, attribution = Path(verifiers or "results/verifiers"), Path(attribution or "results/attribution")
    results = [evaluate_set(s, seed, n_resamples) for s in sets]
    sections, numbers = ["# groundsense evaluation", ""], {"seed": seed, "n_resamples": n_resamples, "sets": {}}
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
                "verifiers": analyses.verifier_section(result, comparisons[name], verifiers, folder, name, seed, n_resamples),
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
                     "Sensitivity trained on the row benchmark's dev partition, span AUC on the column's test partition.",
                     "", markdown_table(matrix), "", f"![transfer](figures/{path.name})", ""]
        numbers.setdefault("transfer", {})[key] = _frame_numbers(matrix)
    (out / "report.json").write_text(json.dumps(_clean(numbers), indent=2) + "\n")
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
    scores = method_scores(result.dev, result.test, seed)  # evaluate() keeps only the AUCs
    ablation = result.evaluation.ablation.intervals().loc[list(GROUNDING)]
    return [
        figures.roc_curves(result.test["label"].to_numpy(), scores, folder / f"{name}-roc.png"),
        figures.feature_bars(ablation, folder / f"{name}-features.png"),
        figures.drop_distribution(result.features.table, folder / f"{name}-drop-max.png"),
    ]


def _figures_markdown(paths: list[Path]) -> list[str]:
    return [f"![{p.stem}](figures/{p.name})" for p in paths] + [""]


def _interval(frame: pd.DataFrame, value: str = "auc") -> pd.Series:
    return frame.apply(lambda r: f"{r[value]:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]", axis=1)


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
        span = pd.DataFrame({"AUC [95% CI]": _interval(e.span.intervals())})
        diff = e.span.differences("sentence gap")
        span["Δ vs sentence gap [95% CI]"] = _interval(diff, "diff")
        span["significant"] = diff["significant"]
        ablation = pd.DataFrame({"AUC [95% CI]": _interval(e.ablation.intervals())})
        ablation["Δ vs all six [95% CI]"] = _interval(e.ablation.differences("all six"), "diff")
        t = e.threshold
        lines += [
            "### Table 3: span-level AUC (test)", "", markdown_table(span.fillna("—")), "",
            f"Gap threshold chosen on dev (max F1): t = {t['threshold']:.3f}; on test precision "
            f"{t['precision']:.3f}, recall {t['recall']:.3f}, F1 {t['f1']:.3f}.", "",
            "### Table 4: sentence level against answer level (test)", "",
            *_levels_note(result.test), "", markdown_table(analyses.bracketed(e.levels())), "",
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
        "cost": _frame_numbers(result.cost),
        "skipped": result.skipped,
    }
    e = result.evaluation
    if e is not None:
        numbers.update(
            span=_frame_numbers(e.span.intervals()),
            span_vs_sentence_gap=_frame_numbers(e.span.differences("sentence gap")),
            span_vs_perplexity=_frame_numbers(e.span.differences("perplexity")),
            threshold=e.threshold,
            response=_frame_numbers(e.response.intervals()),
            levels=_frame_numbers(e.levels()),
            by_type=_frame_numbers(e.by_type),
            by_task=_frame_numbers(e.by_task),
            ablation=_frame_numbers(e.ablation.intervals()),
            ablation_vs_all_six=_frame_numbers(e.ablation.differences("all six")),
        )
    return numbers


def _frame_numbers(frame: pd.DataFrame) -> dict:
    return {str(index): {str(k): _scalar(v) for k, v in row.items()} for index, row in frame.to_dict("index").items()}


def _scalar(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _clean(value: object) -> object:
    """JSON-safe: NaN and infinities become null."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return _scalar(value)


def markdown_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub Markdown table of ``frame`` (index as the first column), floats rounded."""

    def cell(value: object) -> str:
        if isinstance(value, (float, np.floating)):
            return "—" if not math.isfinite(value) else f"{value:.{digits}f}"
        return str(value)

    header = ["", *map(str, frame.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in frame.itertuples(name=None):  # keeps each column's type (iterrows would upcast ints)
        lines.append("| " + " | ".join([str(row[0]), *map(cell, row[1:])]) + " |")
    return "\n".join(lines)
