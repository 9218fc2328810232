"""`groundsense eval training-data`: the labelled sentences and synthetic hard negatives a trained
verifier learns from (issue #55)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from groundsense.cli import CONTEXT_SETTINGS

from ..data.benchmarks import BENCHMARKS
from .options import data_option, report_command
from .reports import benchmark_sets_options

TRAINING_DATA = Path("results/training/td-2.parquet")


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
    command = report_command("training-data", "-o", output, *(["--limit", limit] if limit else []))
    made = manifest(rows, seed, command)
    output.with_suffix(".json").write_text(json.dumps(made, indent=1) + "\n")
    click.echo(f"{output}: {made['rows']} rows, {made['unsupported']} unsupported "
               f"({(rows['recipe'] != '').sum()} synthetic)", err=True)


@click.command("train-verifier", context_settings=CONTEXT_SETTINGS)
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The run's folder: manifest.json, checkpoint.pt and, once trained, verifier.safetensors "
                   "(the adapter and head, about 2 MB). Rerun the same command to resume from the checkpoint.")
# HOLD_OUTS' keys (data.training_set), named here: loading the command group imports no training code
@click.option("--hold-out", type=click.Choice(["ragbench", "tofueval"]), required=True,
              help="The benchmark held out: tofueval (train on RAGTruth and RAGBench rows) or ragbench (train on "
                   "RAGTruth rows alone).")
@click.option("--lr", "learning_rate", type=click.FloatRange(min=0, min_open=True), required=True,
              help="The peak learning rate, decaying linearly to 0 (the protocol's grid: 1e-4, 3e-4).")
@click.option("--epochs", type=click.IntRange(min=1), required=True, help="Passes over the rows (the grid: 1, 2).")
@click.option("--training-data", "data_file", type=click.Path(dir_okay=False, path_type=Path),
              default=TRAINING_DATA, show_default=True,
              help="The rows `eval training-data` wrote (its manifest beside it names its version).")
@data_option
@click.option("--inputs", "bundle", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              metavar="BUNDLE", help="Read the rows and their input ids from a bundle (`eval verifier-bundle`) "
                                     "instead of --training-data and --data: the same run, without the data.")
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
                   data: Path | None, bundle: Path | None, limit: int | None, base: str | None,
                   device: str | None, precision: str, micro_batch: int, checkpoint_every: int, steps: int | None,
                   no_progress: bool) -> None:
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

    from groundsense.cli import resumable
    from groundsense.scorer import Scorer

    from ..fits.verifier import TrainedVerifier
    from ..fits.verifier_bundle import read_manifest, training_inputs
    from ..fits.verifier_training import (
        ARTEFACT,
        Hyperparameters,
        begin,
        data_identity,
        record_run,
        row_inputs,
        run_manifest,
        total_steps,
        train,
        training_cases,
        training_rows,
    )

    settings = Hyperparameters(learning_rate=learning_rate, epochs=epochs)
    scorer = Scorer(base, device=device, precision="fp32")
    if bundle is not None:
        made = read_manifest(bundle)
        if made["base"] != scorer.name:
            raise click.UsageError(f"{bundle} holds the input ids of {made['base']!r}, not {scorer.name!r}")
        rows, bundled = training_inputs(bundle, hold_out, limit, settings.seed)
        identity = made["data"]
    else:
        if not data_file.exists():
            raise click.UsageError(f"no training data at {data_file}: give --training-data, or --inputs")
        rows = training_rows(pd.read_parquet(data_file), hold_out, limit, settings.seed)
        identity = data_identity(data_file)
    begin(output, run_manifest(identity, rows, hold_out, limit, settings, scorer.name))
    if (output / ARTEFACT).exists():
        click.echo(f"{output / ARTEFACT}: trained already", err=True)
        return
    click.echo(f"{len(rows):,} rows of {', '.join(sorted(set(rows['benchmark'])))} ({hold_out} held out)", err=True)
    inputs = bundled if bundle is not None else row_inputs(rows, training_cases(rows, data), scorer)
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


@click.command("verifier-bundle", context_settings=CONTEXT_SETTINGS)
@benchmark_sets_options(None)
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The bundle's folder: bundle.json, training.parquet and evaluation-<benchmark>.parquet.")
@click.option("--training-data", "data_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=TRAINING_DATA, show_default=True, help="The rows `eval training-data` wrote.")
@data_option
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Only a seeded draw of N training rows and the first N answers of each benchmark: a test bundle.")
def verifier_bundle(cache: Path, split_cache: Path | None, scorer: str, output: Path, data_file: Path,
                    data: Path | None, limit: int | None) -> None:
    """Precompute what training and scoring a verifier read, for a machine without the benchmark data
    (a lent GPU; CONTRIBUTING.md): the input ids of every training row of the hold-outs, and of every
    scored sentence of the fusion protocols' feature sets (RAGTruth's whole test split from
    --split-cache, TofuEval and RAGBench from --cache) with its reports' dev/test partition. The same
    inputs give the same files.

    \b
      groundsense eval verifier-bundle --cache results/features --split-cache results/split-features -o runs/bundle
    """
    import pandas as pd

    from groundsense.scorer import Scorer

    from ..fits.verifier_bundle import (
        FORMAT,
        TRAINING,
        build_training,
        evaluation_file,
        evaluation_ids,
        evaluation_rows,
        write_ids,
        write_manifest,
    )
    from ..fits.verifier_training import data_identity
    from .options import cached_cases
    from .reports import benchmark_sets

    sets = benchmark_sets(cache, split_cache, scorer)
    tokenizer = Scorer(scorer, device="cpu", precision="fp32")
    output.mkdir(parents=True, exist_ok=True)
    rows, ids = build_training(pd.read_parquet(data_file), tokenizer, data, limit)
    write_ids(output / TRAINING, rows[["benchmark", "task", "label"]], ids)
    counts = {"training": len(rows)}
    click.echo(f"{output / TRAINING}: {len(rows):,} training rows", err=True)
    for name, features in sets.items():
        evaluation = evaluation_rows(features, limit)
        wanted = set(evaluation["case_id"])
        ids = evaluation_ids(evaluation, [c for c in cached_cases(features, data) if c.id in wanted], tokenizer)
        write_ids(output / evaluation_file(name), evaluation, ids)
        counts[name] = len(evaluation)
        click.echo(f"{output / evaluation_file(name)}: {len(evaluation):,} sentences", err=True)
    identity = data_identity(data_file) | ({"bundle_limit": limit} if limit else {})
    command = report_command("verifier-bundle", "--cache", cache, "--split-cache", split_cache, "-o", output,
                             *(["--limit", limit] if limit else []))
    write_manifest(output, {"format": FORMAT, "base": tokenizer.name, "data": identity, "command": command,
                            "features": {name: str(s.folder) for name, s in sets.items()}, "counts": counts})


@click.command("score-bundle", context_settings=CONTEXT_SETTINGS)
@click.argument("bundle", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--verifier", "artefact", type=click.Path(dir_okay=False, exists=True, path_type=Path), required=True,
              help="What `eval train-verifier` saved (verifier.safetensors).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The Parquet file of scores: each sentence's bundle columns and its score, P(unsupported).")
@click.option("--benchmark", "benchmarks", type=click.Choice(BENCHMARKS), multiple=True,
              help="A benchmark to score (repeat for several).")
@click.option("--training", "hold_out", type=click.Choice(["ragbench", "tofueval"]), default=None,
              help="Score the training rows a run holding out this benchmark trains on instead (the fused "
                   "partner's reference sample in `eval verifier-selection`).")
@click.option("--partition", "partitions", type=click.Choice(["dev", "test"]), multiple=True, default=("dev",),
              show_default=True, help="Which partitions: test ones only once the protocol allows it.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None,
              help="[default: cuda if available, else cpu]")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
def score_bundle(bundle: Path, artefact: Path, output: Path, benchmarks: tuple[str, ...], hold_out: str | None,
                 partitions: tuple[str, ...], device: str | None, batch_size: int) -> None:
    """Score a bundle's evaluation sentences (`eval verifier-bundle`), or with --training a hold-out's
    training rows, with a trained verifier, without the benchmark data: for a lent GPU, whose scores
    come back as one small file."""
    from ..fits.verifier import TrainedVerifier
    from ..fits.verifier_bundle import read_manifest, score_evaluation, score_training

    if bool(benchmarks) == bool(hold_out):
        raise click.UsageError("give --benchmark (evaluation sentences) or --training (training rows), not both")
    made = read_manifest(bundle)
    verifier = TrainedVerifier.load(artefact, device=device, batch_size=batch_size)
    if made["base"] != verifier.scorer.name:
        raise click.UsageError(f"{bundle} holds the input ids of {made['base']!r}, not {verifier.scorer.name!r}")
    if hold_out:
        scores = score_training(verifier, bundle, hold_out)
    else:
        scores = score_evaluation(verifier, bundle, benchmarks, partitions)
    output.parent.mkdir(parents=True, exist_ok=True)
    scores.to_parquet(output, index=False, compression="zstd")
    click.echo(f"{output}: {len(scores):,} {'training rows' if hold_out else 'sentences'} scored", err=True)
