"""`groundsense eval calibrate`, `operating`, `adaptation` and `learning-curve`: a calibration fitted on a feature
cache, its flag on held-out answers, the label-free adaptation protocol, and what a few-label fit gains over it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundsense.cli import (
    CONTEXT_SETTINGS,
    CommandFunction,
    Failure,
    calibration_written,
    check_output_file,
    fit_target_options,
    required_calibration,
    stacked,
)
from groundsense.errors import InputError

from ..data.benchmarks import BENCHMARKS
from .options import (
    emit_report,
    load_sets,
    markdown_report_options,
    output_option,
    partial_option,
    report_command,
    whole_split,
)

if TYPE_CHECKING:
    import pandas as pd

    from groundsense.calibration import LexicalFusions

    from ..caches.extract import FeatureSet


@click.command("calibrate", context_settings=CONTEXT_SETTINGS)
@click.option("--cache", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="Feature cache holding the labelled calibration answers (e.g. results/calibration-tokens).")
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default="ragtruth", show_default=True)
@click.option("--scorer", "-m", default="smollm2-135m-instruct", show_default=True, metavar="NAME")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="The precision the features were scored in (`eval extract --precision`); a bf16 scorer takes a "
                   "calibration fitted on bf16 features where the package ships one.")
@fit_target_options()
@partial_option
def calibrate_from_cache(cache: Path, benchmark: str, scorer: str, precision: str, output: Path,
                         target_recall: float | None, target_precision: float | None, partial: bool) -> None:
    """Fit a calibration on cached, labelled features (no scorer needed): what `groundsense
    calibrate` fits, from answers `groundsense eval extract` scored. Never fit on the answers
    you report on (use a train split)."""
    from ..fits.calibration import fit_from_features

    check_output_file(output)
    sets = [s for s in load_sets(cache, scorer, partial) if s.benchmark == benchmark and s.full_exact_at(precision)]
    if not sets:
        raise Failure(f"{cache} holds 0 full-mode, exact {scorer} feature sets of {benchmark} in {precision}; a "
                      "calibration is fitted on exactly one (run `groundsense eval extract` first)")
    if len(sets) > 1:
        keys = ", ".join(s.key for s in sets)
        raise Failure(f"{cache} holds {len(sets)} full-mode, exact {scorer} feature sets of {benchmark} in "
                      f"{precision} ({keys}); a calibration is fitted on exactly one: copy the one to fit on, "
                      f"{cache}/{benchmark}/KEY, into a folder of its own, DIR/{benchmark}/KEY, and pass --cache DIR")
    if "test" in sets[0].splits:
        click.echo(f"warning: {cache}/{benchmark}/{sets[0].key} holds {benchmark}'s test split: never report on the "
                   "answers a calibration was fitted on; to fit on others, extract another split (groundsense eval "
                   f"extract {benchmark} --split SPLIT --cache DIR)", err=True)
    calibration = fit_from_features(sets[0], target_recall, target_precision)
    calibration.save(output)
    click.echo(calibration_written(output, calibration), err=True)
    if calibration.made_with["errors"]:
        click.echo(f"  ({calibration.made_with['errors']} answers that failed to score were left out)", err=True)


def held_out_options(calibration_help: str) -> Callable[[CommandFunction], CommandFunction]:
    """`operating`'s and `adaptation`'s --cache (held-out answers), --calibration, the report
    options and --partial."""
    options = [
        click.option("--cache", "caches", type=click.Path(exists=True, file_okay=False, path_type=Path),
                     multiple=True, required=True,
                     help="Feature cache(s) of held-out answers; the first holding a benchmark serves it (a part of "
                          "RAGTruth's test split is refused, --partial or not)."),
        click.option("--calibration", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                     help=f"{calibration_help} [default: the one shipped for the default scorer]."),
        markdown_report_options,
        partial_option,
    ]

    return stacked(options)


@click.command(context_settings=CONTEXT_SETTINGS)
@held_out_options("Calibration file to judge with (--score sensitivity; with fused, the one whose chunk counts "
                  "full mode's fusion serves)")
@click.option("--score", type=click.Choice(["fused", "sensitivity"]), default="fused", show_default=True,
              help="The score rule whose flag is judged: the default (fused) or the previous default.")
@click.option("--fusion", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Lexical fusions file to judge with (--score fused; `calibrate --adapt` writes one) "
                   "[default: the one shipped for the default scorer at --precision].")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="The precision the held-out answers were scored in (`eval extract --precision`): the feature sets "
                   "read, and the shipped calibration and fusions they are judged by.")
def operating(caches: tuple[Path, ...], calibration: Path | None, score: str, fusion: Path | None, precision: str,
              output: Path | None, resamples: int, seed: int, partial: bool) -> None:
    """Precision, recall and F1 of a score rule's flags on held-out answers, per benchmark, for
    sentences and for the answer verdict, at the shipped thresholds, beside word overlap flagging
    as many, and at the operating points `detect --target-recall/--target-precision` offers,
    with source-level intervals.

    The default (fused) score is judged on each benchmark's test partition (its signals were
    chosen on the dev partitions), RAGTruth's tasks apart; it reads the lexical signals, so run
    `groundsense eval lexical` on each cache first. With --score sensitivity, every held-out
    answer of each benchmark is judged, and so is, on each test partition, the calibration
    adapted without labels on its dev partition."""
    from groundsense.calibration import Calibration
    from groundsense.weights import DEFAULT_SCORER

    if fusion and score != "fused":
        raise InputError("--fusion names the fused score's lexical fusions: drop it, or drop --score sensitivity")
    fitted = Calibration.load(calibration) if calibration else required_calibration(DEFAULT_SCORER, None, precision)
    chosen = [*(["--score", score] if score != "fused" else []), *(["--fusion", fusion] if fusion else []),
              *(["--precision", precision] if precision != "fp32" else [])]
    command = report_command("operating", *_report_arguments(caches, calibration, partial, output, chosen))
    if score == "fused":
        from ..reports.fused_operating import fused_operating_report

        fusions = _lexical_fusions(fusion, fitted.scorer, precision)
        found = {b: s for b, (_, s) in _first_sets(caches, fitted.scorer, partial, precision).items()}
        try:
            text = fused_operating_report(found, fitted, {"full": fusions.full, "two_pass": fusions.two_pass},
                                          command, resamples, seed)
        except (ValueError, FileNotFoundError) as exc:  # lexical signals not stored, or stale
            raise Failure(str(exc)) from exc
        emit_report(text, output)
        return
    from ..reports.adapted_operating import adapted_section
    from ..reports.operating import operating_report

    sets = held_out_sets(caches, fitted.scorer, partial, precision)
    text = operating_report(sets, fitted, command, resamples, seed)
    emit_report(f"{text}\n{adapted_section(sets, fitted, resamples, seed)}", output)


def _lexical_fusions(path: Path | None, scorer: str, precision: str) -> LexicalFusions:
    """The lexical fusions ``path`` holds, or those shipped for ``scorer`` at ``precision``."""
    from groundsense.calibration import LexicalFusions

    fusions = LexicalFusions.load(path) if path else LexicalFusions.shipped(scorer, precision)
    if fusions is None:
        raise Failure(f"no lexical fusions ship for scorer {scorer} at {precision}, so it has no fused score: judge "
                      "its calibration with --score sensitivity" + (", or give --fusion FILE" if path is None else ""))
    if (fusions.scorer, fusions.precision) != (scorer, precision):
        raise InputError(f"{path} holds the fusions of scorer {fusions.scorer} at {fusions.precision}, and the answers "
                         f"are judged for {scorer} at {precision}: pass --precision {fusions.precision}, a "
                         f"--calibration of {fusions.scorer}, or fusions made for {scorer} at {precision}")
    return fusions


@click.command(context_settings=CONTEXT_SETTINGS)
@held_out_options("Labelled calibration to adapt")
def adaptation(caches: tuple[Path, ...], calibration: Path | None, output: Path | None, resamples: int, seed: int,
               partial: bool) -> None:
    """The label-free adaptation protocol (docs/detector-selection.md): per benchmark, the
    adaptation rules, today's --flag-rate fit and a labelled oracle fitted on its dev partition,
    measured on its test partition for sentences and answers, with source-level intervals; the
    rule chosen on dev, and whether adaptation is adopted."""
    from groundsense.calibration import Calibration
    from groundsense.weights import DEFAULT_SCORER

    from ..reports.adapted_operating import adaptation_report

    base = Calibration.load(calibration) if calibration else required_calibration(DEFAULT_SCORER, None)
    command = report_command("adaptation", *_report_arguments(caches, calibration, partial, output))
    emit_report(adaptation_report(held_out_sets(caches, base.scorer, partial), base, command, resamples, seed),
                output)


def held_out_sets(caches: tuple[Path, ...], scorer: str, partial: bool, precision: str = "fp32"
                  ) -> dict[str, pd.DataFrame]:
    """Benchmark label -> its sentences, from the first cache holding a full-mode, exact set of it,
    their lexical signals joined on where `groundsense eval lexical` stored them (the word-overlap
    baseline, and what a fitted calibration's score may read)."""
    from ..caches.lexical import lexical_columns

    try:
        return {f"{b} ({cache.name}/{s.key})": lexical_columns(s, s.sentences)
                for b, (cache, s) in _first_sets(caches, scorer, partial, precision).items()}
    except ValueError as exc:  # stored lexical signals that miss some of the set's sentences
        raise Failure(str(exc)) from exc


def _first_sets(caches: tuple[Path, ...], scorer: str, partial: bool, precision: str = "fp32"
                ) -> dict[str, tuple[Path, FeatureSet]]:
    """Benchmark -> (cache, its full-mode, exact ``scorer`` feature set scored in ``precision``) from the
    first cache holding one.

    A RAGTruth set of its test split that holds part of it is refused (:func:`whole_split`), not
    reported with its answer count, by each command that reads these sets: `operating`,
    `adaptation` and `learning-curve` all render a published figure of the whole split
    (docs/results/operating*.md, adaptation.md with its adoption verdict, learning-curve*.md),
    and a part of it draws other dev/test partitions, so gives other figures, not the same ones
    with fewer answers. `--partial` does not change that."""
    chosen: dict[str, tuple[Path, FeatureSet]] = {}
    for cache in caches:
        for s in load_sets(cache, scorer, partial):
            if s.full_exact_at(precision):
                chosen.setdefault(s.benchmark, (cache, s))
    if not chosen:
        raise Failure(f"no full-mode, exact {scorer} feature set scored in {precision} under "
                      f"{', '.join(map(str, caches))}")
    if "ragtruth" in chosen:
        cache, ragtruth = chosen["ragtruth"]
        if "test" in ragtruth.splits or not ragtruth.splits:  # older caches record no split: the test split's
            whole_split(ragtruth, cache, "--cache")
    return chosen


@click.command("learning-curve", context_settings=CONTEXT_SETTINGS)
@click.option("--cache", "caches", type=click.Path(exists=True, file_okay=False, path_type=Path), multiple=True,
              required=True, help="Feature cache(s); the first holding a benchmark serves it (a part of RAGTruth's "
                                  "test split is refused, --partial or not).")
@output_option("Write the Markdown report here [default: standard output].")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draws.")
@click.option("--score", type=click.Choice(["fused", "sensitivity"]), default="fused", show_default=True,
              help="The training-free score the fit is judged against: the default (fused) score, as `fit` judges "
                   "it, or the calibrated sensitivity (`fit --score sensitivity`).")
@partial_option
def learning_curve(caches: tuple[Path, ...], output: Path | None, seed: int, score: str, partial: bool) -> None:
    """How many labelled answers `groundsense fit` needs to beat the shipped score: on each
    benchmark's dev partition (never its test partition), 50, 100, 200 and 500 answers drawn 20
    times, fitted, and judged on the dev answers of the sources not drawn (span AUC and F1).
    The fit reads the lexical signals: run `groundsense eval lexical` on each cache first."""
    from groundsense.weights import DEFAULT_SCORER

    from ..reports.few_labels import learning_curve_report

    chosen = _first_sets(caches, DEFAULT_SCORER, partial)
    sets = {f"{b} ({cache.name}/{s.key})": s for b, (cache, s) in chosen.items()}
    command = report_command("learning-curve", *(a for c in caches for a in ("--cache", c)),
                             *(["--score", score] if score != "fused" else []),
                             *(["--partial"] if partial else []), *(["-o", output] if output else []))
    fusions = _lexical_fusions(None, DEFAULT_SCORER, "fp32") if score == "fused" else None
    try:
        text = learning_curve_report(sets, required_calibration(DEFAULT_SCORER, None), command, seed, fusions)
    except (ValueError, FileNotFoundError) as exc:  # lexical signals not stored, or stale
        raise Failure(str(exc)) from exc
    emit_report(text, output)


def _report_arguments(caches: tuple[Path, ...], calibration: Path | None, partial: bool,
                      output: Path | None, chosen: list[object] | None = None) -> list[object]:
    """A report's command line: its caches, calibration and --partial, the ``chosen`` options, then -o."""
    return [*(a for c in caches for a in ("--cache", c)), *(["--calibration", calibration] if calibration else []),
            *(["--partial"] if partial else []), *(chosen or []), *(["-o", output] if output else [])]
