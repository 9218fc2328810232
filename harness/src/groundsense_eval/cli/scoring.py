"""`groundsense eval extract`, `verify` and `case`: benchmark cases into the feature and verifier caches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from groundsense import make_detection
from groundsense.cli import CONTEXT_SETTINGS, FLAGGING, detector_options, plain_detector, resumable
from groundsense.config import DetectorConfig

from ..data.benchmarks import BENCHMARKS
from .options import (
    DEFAULT_CACHE,
    DEFAULT_VERIFIER_CACHE,
    cached_cases,
    case_options,
    cases_for,
    data_option,
    load_sets,
)


@click.command(context_settings=CONTEXT_SETTINGS)
@case_options
# Features are uncalibrated; fp32 whatever the machine, as every published figure and calibration.
@detector_options(omit=FLAGGING, defaults={"precision": "fp32"})
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--token-rows", is_flag=True,
              help="Also keep each sentence's per-token scores (cached under its own key), to re-aggregate offline.")
@click.option("--no-progress", is_flag=True)
def extract(benchmark: str, data: Path | None, sample: str, splits: tuple[str, ...], subsets: str | None,
            limit: int | None, cache: Path, token_rows: bool, no_progress: bool, **detector_options: Any) -> None:
    """Score a benchmark's cases into the feature cache, under a key of the detector settings
    that change features (all but --device); rerun to resume."""
    from ..caches.extract import extract as run_extract

    config = DetectorConfig(**detector_options, calibration=False)
    cases = cases_for(benchmark, data, sample, splits, subsets)
    detector = plain_detector(make_detection(config))  # FLAGGING, the verifier among them, is omitted
    with resumable(f"the finished cases are saved under {cache}"):
        summary = run_extract(detector, cases, cache, limit=limit, progress=not no_progress, token_rows=token_rows)
    click.echo(f"{summary.folder}: {summary.written} scored, {summary.skipped} already cached, "
               f"{summary.errors} errors", err=True)


def _option_pairs(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{value!r}: use NAME=VALUE", param_hint="--option")
        pairs[name] = setting
    return pairs


# what `eval verify --verifier` takes: the product's kinds (the openai: server's URL as an -o setting here),
# and the harness's own trained: kind
VERIFIER_SPECS = ("judge:<scorer>, contextcite:<scorer>, nli:<id or path>, minicheck:<id or path>, "
                  "alignscore:<id or path>, openai:<model> (-o url=...), or trained:<file> (an adapter and head "
                  "`eval train-verifier` wrote: its verifier.safetensors)")


@click.command(context_settings=CONTEXT_SETTINGS)
@case_options
@click.option("--verifier", "spec", required=True, metavar="KIND:MODEL", help=f"{VERIFIER_SPECS}.")
@click.option("-o", "--option", "options", multiple=True, callback=_option_pairs, metavar="NAME=VALUE",
              help="A verifier setting, e.g. -o k=5, -o premise=context, -o label=1 (see docs/verifiers.md).")
@click.option("--device", default=None, help="torch device [default: cuda if available, else cpu].")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_VERIFIER_CACHE,
              show_default=True)
@click.option("--no-progress", is_flag=True)
def verify(benchmark: str, data: Path | None, sample: str, splits: tuple[str, ...], subsets: str | None,
           limit: int | None, spec: str, options: dict[str, str], device: str | None, cache: Path,
           no_progress: bool) -> None:
    """Score the same cases as `eval extract` with a verifier into the verifier cache; rerun to resume.

    \b
      groundsense eval verify ragtruth --verifier judge:qwen2.5-coder-1.5b-instruct
      groundsense eval verify ragtruth --verifier nli:PATH/TO/MODEL -o premise=context
    """
    from groundsense.verification import KINDS, ModelVerifier, installed_kinds, make_verifier

    from ..caches.verify import verify as run_verify
    from ..fits.verifier import TrainedVerifier

    # Before the cases load (a minute for RAGTruth), so a bad spec fails fast. In fp32 on any
    # machine: a verifier cache's key names no precision, and every cache holds fp32 scores.
    verifier: ModelVerifier
    kind, _, model = spec.partition(":")
    installed = installed_kinds()  # kinds other packages add (docs/verifiers.md)
    if kind not in (*KINDS, *installed, "trained") or not model:  # the product's message names its own options
        specs = ", ".join([VERIFIER_SPECS, *(f"{name}:<model> (from {point.value})"
                                             for name, point in installed.items())])
        raise click.BadParameter(f"unknown verifier {spec!r}: use {specs}", param_hint="--verifier")
    if kind == "trained":  # the harness's own kind, until one ships (issue #55)
        if options:
            raise click.UsageError("a trained verifier takes no -o settings")
        verifier = TrainedVerifier.load(spec.removeprefix("trained:"), device=device)
    else:
        verifier = make_verifier(spec, options, device=device, precision="fp32")
    cases = cases_for(benchmark, data, sample, splits, subsets)
    with resumable(f"the finished cases are saved under {cache}"):
        summary = run_verify(verifier, cases, cache, limit=limit, progress=not no_progress)
    click.echo(f"{summary.folder}: {summary.written} scored, {summary.skipped} already cached, "
               f"{summary.errors} errors", err=True)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("benchmark", type=click.Choice(BENCHMARKS))
@data_option
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--scorer", "-m", default=None, metavar="NAME", help="Only the feature sets of this scorer.")
@click.option("--force", is_flag=True, help="Compute them again where they are stored already.")
def lexical(benchmark: str, data: Path | None, cache: Path, scorer: str | None, force: bool) -> None:
    """Store the lexical signals (docs/output.md) of every full-mode feature set of a benchmark
    under --cache, beside its parts (lexical.parquet). No model pass: the scorer's tokenizer
    cuts and chunks the evidence as the detector did."""
    from groundsense.scorer import Scorer

    from ..caches.attribution import case_chunks
    from ..caches.lexical import lexical_path, lexical_rows, write_lexical

    sets = [s for s in load_sets(cache, scorer, partial=True)
            if s.benchmark == benchmark and s.config["mode"] == "full"]
    if not sets:
        raise click.UsageError(f"no full-mode {benchmark} feature set under {cache}")
    for features in sets:
        path = lexical_path(features)
        if path.exists() and not force:
            click.echo(f"{path}: stored already (--force computes it again)", err=True)
            continue
        chunks = case_chunks(cached_cases(features, data), Scorer(features.config["scorer"], device="cpu"),
                             features.config)
        rows = lexical_rows(features.sentences, chunks)
        write_lexical(path, rows)
        click.echo(f"{path}: {len(rows)} sentences of {len(chunks)} answers; "
                   f"{features.answers - len(chunks)} cached answers not found in the benchmark", err=True)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("case_id")
@data_option
def case(case_id: str, data: Path | None) -> None:
    """Print one case as a JSON row for `groundsense detect` or `batch`.

    \b
      groundsense eval case ragtruth:ID | groundsense detect
    """
    from ..data.benchmarks import find_case
    from ..data.rows import case_row

    click.echo(json.dumps(case_row(find_case(case_id, data)), ensure_ascii=False))
