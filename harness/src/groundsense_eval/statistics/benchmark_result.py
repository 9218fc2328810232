"""One feature set evaluated: its seeded dev/test partitions, its cost per sentence (the
paper's Table 9) and, for a full-mode set, :func:`metrics.evaluate`'s tables."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..caches.extract import FeatureSet
from ..caches.lexical import lexical_columns
from ..data.split import DEV, TEST, assign_partition
from .methods import add_answer_columns
from .metrics import Evaluation, evaluate

# Scoring passes each method needs per answer ("K+2": every leave-one-out condition).
PASSES = {
    "word overlap": "0",  # no model pass: the evidence's words only
    "perplexity": "1",
    "length": "1",
    "answer gap": "2",
    "sentence gap": "2",
    "standardised sum": "K+2",
    "LightGBM": "K+2",
    "LightGBM + baselines": "K+2",
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

    def partitions(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The dev and test partitions, which :func:`evaluate_set` always sets."""
        assert self.dev is not None and self.test is not None, "evaluate_set sets both partitions"
        return self.dev, self.test

    @property
    def title(self) -> str:
        c = self.features.config
        mode = c["mode"] + (" (masked leave-one-out)" if c.get("leave_one_out") == "masked" else "")
        mode += f", {c['precision']}" if c.get("precision", "fp32") != "fp32" else ""
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


def evaluate_set(features: FeatureSet, seed: int = 0, n_resamples: int = 2000) -> BenchmarkResult:
    """Cost, and for a full-mode set with both labels in both partitions, the evaluation."""
    result = BenchmarkResult(features, cost_table(features))
    result.dev, result.test = partitioned(lexical_columns(features, features.table), seed)
    if features.config["mode"] != "full":
        result.skipped = "two-pass extraction: no leave-one-out features; cost and the cost frontier only"
        return result
    if not all(set(part["label"]) == {0, 1} for part in (result.dev, result.test)):
        result.skipped = "too few answers: the dev or test partition lacks grounded or unsupported sentences"
        return result
    result.evaluation = evaluate(pd.concat([result.dev, result.test], ignore_index=True), seed, n_resamples)
    return result
