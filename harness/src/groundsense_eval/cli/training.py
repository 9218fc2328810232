"""`groundsense eval training-data`: the labelled sentences and synthetic hard negatives a trained
verifier learns from (issue #55)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from groundsense.cli.common import CONTEXT_SETTINGS

from .options import data_option, report_command


@click.command("training-data", context_settings=CONTEXT_SETTINGS)
@data_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The Parquet file to write; its manifest (counts, version, seed) goes beside it as .json.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Only the first N answers of each benchmark (by id), for a quick look.")
def training_data(data: Path | None, output: Path, seed: int, limit: int | None) -> None:
    """Write the training set of a trained verifier: the labelled sentences of RAGTruth's train
    split and RAGBench's validation and train splits, with a synthetic hard negative of each
    supported sentence (a negation, or its supporting evidence sentence deleted), balanced by
    benchmark and task. No TofuEval is read, and no answer of a test split, nor of a source that
    has one, is kept (the test splits are loaded only to find those sources). The same data and
    seed give the same file (docs/detector-selection.md, "A trained verifier")."""
    from ..data.benchmarks import load_benchmark
    from ..data.training_set import SPLITS, balanced, manifest, sentence_rows, training_cases

    cases = []
    for benchmark, splits in SPLITS.items():
        loaded, _ = load_benchmark(benchmark, (*splits, "test"), data=data)  # the test split: to leave its sources out
        kept = training_cases(loaded, splits)[:limit]
        click.echo(f"{benchmark} {'+'.join(splits)}: {len(kept)} answers (of sources with none in a test split)",
                   err=True)
        cases += kept
    rows = balanced(sentence_rows(cases, seed), seed)
    output.parent.mkdir(parents=True, exist_ok=True)
    rows.to_parquet(output, index=False, compression="zstd")
    command = report_command("training-data", "-o", output, *(["--seed", seed] if seed else []),
                             *(["--limit", limit] if limit else []))
    made = manifest(rows, seed, command)
    output.with_suffix(".json").write_text(json.dumps(made, indent=1) + "\n")
    click.echo(f"{output}: {made['rows']} rows, {made['unsupported']} unsupported "
               f"({(rows['recipe'] != '').sum()} synthetic)", err=True)
