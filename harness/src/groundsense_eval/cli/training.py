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


@click.command("train-verifier", context_settings=CONTEXT_SETTINGS)
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The run's folder: manifest.json, checkpoint.pt and, once trained, verifier.safetensors "
                   "(the adapter and head, about 2 MB). Rerun the same command to resume from the checkpoint.")
# HOLD_OUTS' keys (fits.verifier_training), named here: loading the command group imports no training code
@click.option("--hold-out", type=click.Choice(["ragbench", "tofueval"]), required=True,
              help="The benchmark held out: tofueval (train on RAGTruth and RAGBench rows) or ragbench (train on "
                   "RAGTruth rows alone).")
@click.option("--lr", "learning_rate", type=click.FloatRange(min=0, min_open=True), required=True,
              help="The peak learning rate, decaying linearly to 0 (the protocol's grid: 1e-4, 3e-4).")
@click.option("--epochs", type=click.IntRange(min=1), required=True, help="Passes over the rows (the grid: 1, 2).")
@click.option("--training-data", "data_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=Path("results/training/td-2.parquet"), show_default=True,
              help="The rows `eval training-data` wrote (its manifest beside it names its version).")
@data_option
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Train on a seeded draw of N rows (a smaller draw lies inside a larger one: the learning "
                   "curve's 1,000, 2,000, 5,000, 10,000).")
@click.option("--base", default=None, metavar="SCORER",
              help="The model under the adapter [default: the default scorer, SmolLM2-135M-Instruct].")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None,
              help="[default: cuda if available, else cpu]")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="bf16: the passes under bf16 autocast (for a GPU); the weights and optimiser stay fp32.")
@click.option("--micro-batch", type=click.IntRange(min=1, max=16), default=4, show_default=True,
              help="Rows a pass; each batch of 16 is this many at a time, their gradients summed (memory only).")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=50, show_default=True, metavar="STEPS")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Stop after this many steps this time (checkpointed): for runs in short slices.")
@click.option("--no-progress", is_flag=True)
def train_verifier(output: Path, hold_out: str, learning_rate: float, epochs: int, data_file: Path,
                   data: Path | None, limit: int | None, base: str | None, device: str | None, precision: str,
                   micro_batch: int, checkpoint_every: int, steps: int | None, no_progress: bool) -> None:
    """Train a verifier (candidate V-135M of docs/detector-selection.md, "A trained verifier"): LoRA on
    the base's query and value projections and a linear head, trained with binary cross-entropy to give
    P(unsupported) of a claim against its best evidence chunks, in batches of 16 with AdamW (weight
    decay 0.01), seed 0. Resumable: a checkpoint every --checkpoint-every steps, and the same command
    continues from it (Ctrl-C keeps the last one).

    \b
      groundsense eval train-verifier -o runs/v135m-tofueval --hold-out tofueval --lr 1e-4 --epochs 1
      groundsense eval train-verifier -o runs/v135m-curve-1000 --hold-out ragbench --lr 1e-4 --epochs 1 --limit 1000
    """
    import pandas as pd

    from groundsense.cli.interrupts import resumable
    from groundsense.scorer import Scorer

    from ..fits.verifier import TrainedVerifier
    from ..fits.verifier_training import (
        ARTEFACT,
        Hyperparameters,
        begin,
        record_run,
        row_inputs,
        run_manifest,
        total_steps,
        train,
        training_cases,
        training_rows,
    )

    settings = Hyperparameters(learning_rate=learning_rate, epochs=epochs)
    rows = training_rows(pd.read_parquet(data_file), hold_out, limit, settings.seed)
    scorer = Scorer(base, device=device, precision="fp32")
    begin(output, run_manifest(data_file, rows, hold_out, limit, settings, scorer.name))
    if (output / ARTEFACT).exists():
        click.echo(f"{output / ARTEFACT}: trained already", err=True)
        return
    click.echo(f"{len(rows):,} rows of {', '.join(sorted(set(rows['benchmark'])))} ({hold_out} held out); "
               "building their inputs", err=True)
    inputs = row_inputs(rows, training_cases(rows, data), scorer)
    verifier = TrainedVerifier(scorer, output.name, seed=settings.seed)
    with resumable(f"the last checkpoint is in {output} (every {checkpoint_every} steps)"):
        losses = train(verifier, inputs, rows["label"].to_numpy(), settings, output, micro_batch, checkpoint_every,
                       precision, steps, progress=not no_progress, say=lambda line: click.echo(line, err=True))
    finished = len(losses) == total_steps(len(rows), settings)
    if finished:
        verifier.save(output / ARTEFACT)
    record_run(output, {"device": str(scorer.device), "precision": precision, "micro_batch": micro_batch,
                        "steps_done": len(losses)}, losses, finished)
    click.echo(f"{output}: {len(losses):,} steps done" + (f"; wrote {output / ARTEFACT}" if finished else
                                                            "; rerun the same command to continue"), err=True)
