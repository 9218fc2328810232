"""`groundsense eval report`, `selection`, `fusion`, `default-score`, `verifier-grid`, `verifier-selection`, `ceiling`,
`text-classifier`, `answers`, `scorer-cost` and `compare`: analyses of the caches (no scorer needed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundsense.cli import CONTEXT_SETTINGS, CommandFunction, Failure, required_calibration, stacked

from ..caches.layout import cache_folder
from ..data.benchmarks import BENCHMARKS
from .options import (
    DEFAULT_CACHE,
    emit_report,
    load_sets,
    markdown_report_options,
    output_option,
    partial_option,
    report_command,
    whole_split,
)

if TYPE_CHECKING:
    from groundsense.calibration import Calibration, RankFusion

    from ..caches.extract import FeatureSet


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--scorer", "-m", default=None, metavar="NAME", help="Only this scorer's features [default: all cached].")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=cache_folder("report"),
              show_default=True)
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--verifiers", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Verifier score cache [default: verifiers/ beside the feature cache].")
@click.option("--attribution", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Attribution pairs and ratings [default: attribution/ beside the feature cache].")
@partial_option
def report(cache: Path, scorer: str | None, output: Path, resamples: int, seed: int, verifiers: Path | None,
           attribution: Path | None, partial: bool) -> None:
    """Tables, JSON and figures from the feature cache (no scorer needed), with the verifier
    comparisons and attribution ratings where those caches exist."""
    from ..reports.report import write_report

    sets = load_sets(cache, scorer, partial)
    if not sets:
        cached = sorted({json.loads(c.read_text())["scorer"] for c in cache.glob("*/*/config.json")})
        if cached and scorer not in (None, *cached):
            raise Failure(f"no {scorer} feature sets under {cache}: check --scorer (the scorers cached there: "
                          f"{', '.join(cached)})")
        raise Failure(f"no finished feature sets under {cache}: run `groundsense eval extract` first "
                      "(or pass --partial for an unfinished one)")
    for s in sets:
        click.echo(f"{s.benchmark} {s.key}: {s.answers} answers, {len(s.errors)} errors", err=True)
    verifiers = verifiers or cache_folder("verifiers", cache)
    attribution = attribution or cache_folder("attribution", cache)
    click.echo(write_report(sets, output, seed, resamples, verifiers, attribution))


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True,
              help="Feature cache with one full-mode set per benchmark (results/tokens for candidate B).")
@click.option("--split-cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Feature cache of the whole RAGTruth test split, for the rule's third condition (a part of the "
                   "split is refused, --partial or not).")
@click.option("--candidate", type=click.Choice(["A", "B"]), default="A", show_default=True,
              help="A: sentence features; B: A plus token-level features at thresholds tuned on dev partitions "
                   "(needs --token-rows caches, the split's too).")
@click.option("--scorer", "-m", default="smollm2-135m-instruct", show_default=True, metavar="NAME")
@markdown_report_options
@partial_option
def selection(cache: Path, split_cache: Path | None, candidate: str, scorer: str, output: Path | None, resamples: int,
              seed: int, partial: bool) -> None:
    """The detector-selection protocol (docs/detector-selection.md): leave-one-benchmark-out
    transfer of a trained detector against the sentence gap, and the adoption rule's verdict."""
    from ..reports.selection import selection_report

    sets = {s.benchmark: s for s in load_sets(cache, scorer, partial) if s.full_exact}
    if set(sets) != set(BENCHMARKS):
        raise Failure(f"{cache} holds full-mode {scorer} features of {sorted(sets) or 'no benchmark'}; "
                      f"the protocol needs all of {', '.join(BENCHMARKS)}")
    split = None
    if split_cache:
        split = next((s for s in load_sets(split_cache, scorer, partial) if s.benchmark == "ragtruth"), None)
        if split is None:
            raise Failure(f"no finished {scorer} RAGTruth feature set under {split_cache} (--split-cache)")
        whole_split(split, split_cache, "--split-cache")
    command = report_command("selection", "--cache", cache, *(["--split-cache", split_cache] if split_cache else []),
                             *(["--candidate", candidate] if candidate != "A" else []),
                             *(["--partial"] if partial else []),
                             *(["-o", output] if output else []))
    try:
        text = selection_report({b: sets[b] for b in BENCHMARKS}, split, candidate, command, resamples, seed)
    except ValueError as exc:
        raise Failure(str(exc)) from exc
    emit_report(text, output)


def benchmark_sets_options(judges: str | None) -> Callable[[CommandFunction], CommandFunction]:
    """The feature caches the fusion protocols read (:func:`benchmark_sets`), the scorer, and the
    judges' cache (``judges``: what the command does with it; None: no such option)."""
    options = [
        click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE,
                     show_default=True,
                     help="Feature cache with full-mode TofuEval and RAGBench sets and their lexical signals."),
        click.option("--split-cache", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Feature cache of the whole RAGTruth test split (a part of it is refused), with its "
                          "lexical signals (required, but for `eval fusion`'s fit on the training answers)."),
        click.option("--scorer", "-m", default="smollm2-135m-instruct", show_default=True, metavar="NAME"),
    ]
    if judges is not None:
        options.append(click.option("--judges", type=click.Path(file_okay=False, path_type=Path), default=None,
                                    help=f"Verifier cache with the judges' scores (results/verifiers): {judges}"))

    return stacked(options)


@click.command(context_settings=CONTEXT_SETTINGS)
@benchmark_sets_options("report candidate J, the judge's score as one more signal, on the sentences they scored, "
                        "instead of candidate F.")
@click.option("--dev-only", is_flag=True, help="Only the dev partitions' sweep: read no test partition.")
@click.option("--fit-fusion", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write a fusion file instead of the report: with --train-cache alone, the lexical fusion "
                   "(candidate F) fitted on its training answers; with --train-judges too, the adopted candidate "
                   "J's, fitted on those (what ships); with --judges, candidate J's on the judged dev partitions, "
                   "pooled.")
@click.option("--train-cache", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="With --fit-fusion: fit it on the RAGTruth training answers of this feature cache instead "
                   "(results/calibration-tokens, the shipped calibration's; at bf16 results/precision/calibration), "
                   "with their lexical signals.")
@click.option("--train-judges", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="With --train-cache: the judge's scores of those answers (results/calibration-verifiers, "
                   "scripts/calibration_judge.sh), for candidate J.")
@click.option("--precision", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
              help="The lexical fusion's: the precision --train-cache was scored in; its sensitivity is the shipped "
                   "calibration of that precision.")
@click.option("--two-pass", is_flag=True, help="The lexical fusion of two-pass mode: the gap in place of sensitivity.")
@markdown_report_options
def fusion(cache: Path, split_cache: Path | None, scorer: str, judges: Path | None, dev_only: bool,
           fit_fusion: Path | None, train_cache: Path | None, train_judges: Path | None, precision: str,
           two_pass: bool, output: Path | None, resamples: int, seed: int) -> None:
    """The fusion protocols (docs/detector-selection.md): the shipped score fused with lexical
    signals (candidate F) or with a judge's score (candidate J, `--judges`) by a rule chosen on
    dev partitions, against today's score and word overlap on the test partitions, and the
    adoption rule's verdict; or, with --fit-fusion, a fusion file. Needs `groundsense eval
    lexical` first."""
    from ..reports.fusion import fusion_report
    from ..reports.fusion_judge import judge_fusion_report

    if (train_judges and not train_cache) or (train_cache and not fit_fusion):
        raise Failure("--train-cache goes with --fit-fusion, and --train-judges with --train-cache")
    lexical = bool(train_cache and not train_judges)
    if (precision != "fp32" or two_pass) and not lexical:
        raise Failure("--precision and --two-pass are the lexical fusion's: give --fit-fusion and --train-cache, "
                      "without --train-judges")
    calibration = required_calibration(scorer, 5, precision)
    if fit_fusion:
        try:
            if lexical and train_cache:  # the benchmarks' caches are not read
                command = report_command("fusion", "--fit-fusion", fit_fusion, "--train-cache", train_cache,
                                         *(["--precision", precision] if precision != "fp32" else []),
                                         *(["--two-pass"] if two_pass else []))
                fused = _lexical_fusion(train_cache, scorer, calibration, precision, two_pass, command)
            elif train_cache and train_judges:
                command = report_command("fusion", "--fit-fusion", fit_fusion, "--train-cache", train_cache,
                                         "--train-judges", train_judges)
                fused = _training_fusion(train_cache, train_judges, scorer, calibration, command)
            elif judges:
                command = report_command("fusion", "--cache", cache, "--split-cache", split_cache, "--judges",
                                         judges, "--fit-fusion", fit_fusion)
                fused = _dev_fusion(benchmark_sets(cache, split_cache, scorer), calibration, judges, seed, command)
            else:
                raise Failure("--fit-fusion fits candidate J, the judge's score fused: give --judges (its dev "
                              "partitions) or --train-cache and --train-judges (the training answers)")
        except (ValueError, FileNotFoundError) as exc:
            raise Failure(str(exc)) from exc
        fused.save(fit_fusion)
        answer = "a length-aware noisy-OR" if fused.answer_rule else "a top-two mean"
        click.echo(f"wrote {fit_fusion}: {fused.verifier or 'the lexical fusion'}, fitted on "
                   f"{fused.made_with['fitted_on']} ({fused.made_with['n_answers']} answers, "
                   f"{fused.made_with['n_sentences']} sentences); sentences flagged at fused >= {fused.threshold:.4f}, "
                   f"answers at {answer} >= {fused.answer_threshold:.4f}", err=True)
        return
    found = benchmark_sets(cache, split_cache, scorer)
    command = report_command("fusion", "--cache", cache, "--split-cache", split_cache,
                             *(["--judges", judges] if judges else []), *(["--dev-only"] if dev_only else []),
                             *(["-o", output] if output else []))
    if judges:
        _render(lambda: judge_fusion_report(found, calibration, judges, command, resamples, seed, dev_only), output)
    else:
        _render(lambda: fusion_report(found, calibration, command, resamples, seed, dev_only), output)


def _render(render: Callable[[], str], output: Path | None) -> None:
    """Emit the report ``render`` makes (:func:`emit_report`); a ValueError or a missing file on
    the way is the command's failure, with its message."""
    try:
        text = render()
    except (ValueError, FileNotFoundError) as exc:
        raise Failure(str(exc)) from exc
    emit_report(text, output)


def benchmark_sets(cache: Path, split_cache: Path | None, scorer: str) -> dict[str, FeatureSet]:
    """The feature set of each benchmark the fusion protocols read: the whole RAGTruth test split
    (``split_cache``), TofuEval and RAGBench (``cache``), one full-mode set each."""
    if split_cache is None:
        raise Failure("give --split-cache: the feature cache of the whole RAGTruth test split")
    found = {name: _one_set(folder, name, scorer)
             for name, folder in (("ragtruth", split_cache), ("tofueval", cache), ("ragbench", cache))}
    whole_split(found["ragtruth"], split_cache, "--split-cache")
    return found


@click.command(context_settings=CONTEXT_SETTINGS)
@benchmark_sets_options(None)
@click.option("--train-cache", type=click.Path(file_okay=False, path_type=Path), required=True, metavar="DIR",
              help="Feature cache of the shipped calibration's RAGTruth training answers, with their lexical "
                   "signals (results/calibration-tokens): F's references and its noisy-OR's probability map.")
@markdown_report_options
def aggregation(cache: Path, split_cache: Path | None, scorer: str, train_cache: Path, output: Path | None,
                resamples: int, seed: int) -> None:
    """F's answer aggregation, chosen again (docs/detector-selection.md): F's sentence score ranked
    against the training answers, as it will ship, and the maximum, the mean of the top two, the
    noisy-OR and a length-aware noisy-OR of an answer's sentences, by their lowest answer AUC over
    the three benchmarks' dev partitions and RAGTruth's tasks. Reads no test partition."""
    from ..reports.aggregation import aggregation_report
    from ..reports.fusion import fusion_table

    calibration = required_calibration(scorer, 5)
    found = benchmark_sets(cache, split_cache, scorer)
    training = _one_set(train_cache, "ragtruth", scorer)
    command = report_command("aggregation", "--cache", cache, "--split-cache", split_cache, "--train-cache",
                             train_cache, *(["-o", output] if output else []))
    _render(lambda: aggregation_report(training, fusion_table(training, calibration), found,
                                       {name: fusion_table(fs, calibration) for name, fs in found.items()}, command,
                                       seed), output)


def _one_set(folder: Path, benchmark: str, scorer: str, precision: str = "fp32") -> FeatureSet:
    """The one full-mode, exact ``scorer`` feature set of ``benchmark`` under ``folder``, scored at ``precision``."""
    sets = [s for s in load_sets(folder, scorer) if s.benchmark == benchmark and s.full_exact_at(precision)]
    if len(sets) != 1:
        scored_at = "" if precision == "fp32" else f" {precision}"
        raise Failure(f"need exactly one full-mode{scored_at} {scorer} {benchmark} feature set under {folder} "
                      f"(found {len(sets)})")
    return sets[0]


@click.command(context_settings=CONTEXT_SETTINGS)
@benchmark_sets_options("also fit with the judge's score, on the dev sentences the judges scored.")
@markdown_report_options
def ceiling(cache: Path, split_cache: Path | None, scorer: str, judges: Path | None, output: Path | None,
            resamples: int, seed: int) -> None:
    """How far the signals go: on each benchmark's dev partition, a logistic regression trained on
    that benchmark's own labels over the scorer's features, the lexical signals or both (and the
    judge's score, `--judges`), judged out of fold against word overlap: an indication of how far
    a label-free fusion of those signals can go. Reads no test partition."""
    from ..reports.ceiling import ceiling_report

    found = benchmark_sets(cache, split_cache, scorer)
    command = report_command("ceiling", "--cache", cache, "--split-cache", split_cache,
                             *(["--judges", judges] if judges else []), *(["-o", output] if output else []))
    _render(lambda: ceiling_report(found, required_calibration(scorer, 5), judges, command, resamples, seed), output)


@click.command("text-classifier", context_settings=CONTEXT_SETTINGS)
@benchmark_sets_options(None)
@click.option("--train-cache", type=click.Path(file_okay=False, path_type=Path),
              default=Path("results/calibration-tokens"), show_default=True, metavar="DIR",
              help="Feature cache of the RAGTruth training answers to train on (the shipped calibration's).")
@markdown_report_options
def text_classifier(cache: Path, split_cache: Path | None, scorer: str, train_cache: Path, output: Path | None,
                    resamples: int, seed: int) -> None:
    """The baseline a trained detector sets: a TF-IDF and logistic regression classifier of the
    sentence's words, trained on RAGTruth's training answers and measured on every benchmark's
    test partition against the shipped score and word overlap, then trained on each benchmark's
    own dev labels, out of fold (docs/detector-selection.md). Needs `groundsense eval lexical` first."""
    from ..reports.text_classifier import text_classifier_report

    train = _one_set(train_cache, "ragtruth", scorer)
    found = benchmark_sets(cache, split_cache, scorer)
    command = report_command("text-classifier", "--cache", cache, "--split-cache", split_cache, "--train-cache",
                             train_cache, *(["-o", output] if output else []))
    _render(lambda: text_classifier_report(train, found, required_calibration(scorer, 5), command, resamples, seed),
            output)


@click.command("default-score", context_settings=CONTEXT_SETTINGS)
@benchmark_sets_options(None)
@markdown_report_options
def default_score(cache: Path, split_cache: Path | None, scorer: str, output: Path | None, resamples: int,
                  seed: int) -> None:
    """F, the default score, on every benchmark's test partition as the product computes it:
    its ranking and its flags at the shipped thresholds against `sensitivity` and word overlap,
    and issue #52's goals (docs/detector-selection.md). Needs `groundsense eval lexical` first."""
    from ..reports.default_score import default_score_report

    fusions = shipped_fusions(scorer)
    found = benchmark_sets(cache, split_cache, scorer)
    command = report_command("default-score", "--cache", cache, "--split-cache", split_cache,
                             *(["-o", output] if output else []))
    _render(lambda: default_score_report(found, required_calibration(scorer, 5), fusions, command, resamples, seed),
            output)


def shipped_fusions(scorer: str) -> dict[str, RankFusion]:
    """The fp32 lexical fusions shipped for ``scorer``, by mode: F, the default score, as the product
    computes it on the fp32 caches."""
    from groundsense.calibration import shipped_lexical_fusion

    shipped = {mode: shipped_lexical_fusion(scorer, "fp32", mode) for mode in ("full", "two_pass")}
    fusions = {mode: fusion for mode, fusion in shipped.items() if fusion is not None}
    if len(fusions) < len(shipped):
        raise Failure(f"no lexical fusion ships for scorer {scorer} in "
                      f"{' and '.join(sorted(set(shipped) - set(fusions)))} mode")
    return fusions


@click.command("verifier-grid", context_settings=CONTEXT_SETTINGS)
@click.option("--runs", type=click.Path(file_okay=False, path_type=Path),
              default=Path("results/trained-verifier/grid"), show_default=True, metavar="DIR",
              help="The grid's runs: a folder per run (v135m-HOLD_OUT-lrLR-eEPOCHS/), each with its manifest.json and "
                   "dev-scores.parquet (`scripts/gpu_verifier.sh score`, or `eval score-bundle --partition dev`).")
@click.option("--scores", type=click.Path(file_okay=False, path_type=Path), default=Path("results/trained-verifier"),
              show_default=True, metavar="DIR",
              help="Where each hold-out's chosen run goes (`eval verifier-selection --scores`); only named, not read.")
@markdown_report_options
def verifier_grid(runs: Path, scores: Path, output: Path | None, resamples: int, seed: int) -> None:
    """The trained verifier's hyperparameters (candidate V-135M, docs/detector-selection.md), chosen on
    dev partitions: per hold-out, each setting's sentence AUC on the dev partitions of the benchmarks
    its run trained on, their mean and the setting the rule chooses. Missing runs are listed with the
    commands that make them. No test partition is read."""
    from ..caches.grid_runs import load_grid
    from ..reports.verifier_grid import verifier_grid_report

    command = report_command("verifier-grid", "--runs", runs, "--scores", scores, *(["-o", output] if output else []))
    _render(lambda: verifier_grid_report(load_grid(runs), runs, scores, command, resamples, seed), output)


@click.command("verifier-selection", context_settings=CONTEXT_SETTINGS)
@benchmark_sets_options(None)
@click.option("--scores", type=click.Path(file_okay=False, path_type=Path), default=Path("results/trained-verifier"),
              show_default=True, metavar="DIR",
              help="The trained verifier's scores: a folder per hold-out (tofueval/, ragbench/), each with its run's "
                   "manifest.json, scores.parquet and training-scores.parquet (`eval score-bundle`).")
@click.option("--verifiers", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="A verifier cache (`eval verify --verifier trained:FILE`): a hold-out's sentence scores from there "
                   "where its folder has no scores.parquet but the verifier.safetensors they were made with.")
@markdown_report_options
def verifier_selection(cache: Path, split_cache: Path | None, scorer: str, scores: Path, verifiers: Path | None,
                       output: Path | None, resamples: int, seed: int) -> None:
    """The trained verifier (candidate V-135M, docs/detector-selection.md) on each benchmark's test
    partition, by the model that holds it out: alone, as F's fused partner and as a cascade's
    verifier, against F and word overlap; TofuEval's balanced accuracy; the adoption rule. What is
    not scored yet is listed with the commands that score it, and its benchmark is not read."""
    from ..caches.trained_scores import SCORED, load_model_scores
    from ..reports.fusion import fusion_table
    from ..reports.verifier_selection import benchmarks_scored, verifier_selection_report

    try:
        models = {hold_out: load_model_scores(scores, hold_out, verifiers) for hold_out in SCORED}
    except ValueError as exc:
        raise Failure(str(exc)) from exc
    calibration = required_calibration(scorer, 5)
    needed = benchmarks_scored(models)
    found = benchmark_sets(cache, split_cache, scorer) if needed else {}
    tables = {name: fusion_table(found[name], calibration) for name in needed}
    command = report_command("verifier-selection", "--cache", cache, "--split-cache", split_cache, "--scores", scores,
                             *(["--verifiers", verifiers] if verifiers else []), *(["-o", output] if output else []))
    _render(lambda: verifier_selection_report(models, tables, calibration, shipped_fusions(scorer), command,
                                              resamples, seed), output)


def _dev_fusion(found: dict[str, FeatureSet], calibration: Calibration, judges: Path, seed: int,
                command: str) -> RankFusion:
    """Candidate J's fusion fitted on the judged dev partitions, pooled."""
    from ..fits.judge_fusion import fit_judge_fusion
    from ..reports.fusion_judge import judge_domains

    return fit_judge_fusion(judge_domains(found, calibration, judges, seed), calibration, command)


def _lexical_fusion(train_cache: Path, scorer: str, calibration: Calibration, precision: str, two_pass: bool,
                    command: str) -> RankFusion:
    """The lexical fusion fitted on the RAGTruth training answers of ``train_cache``."""
    from ..fits.lexical_fusion import fit_lexical_fusion
    from ..reports.fusion import fusion_table

    training = fusion_table(_one_set(train_cache, "ragtruth", scorer, precision), calibration)
    return fit_lexical_fusion(training, calibration, "two_pass" if two_pass else "full", precision, command)


def _training_fusion(train_cache: Path, train_judges: Path, scorer: str, calibration: Calibration,
                     command: str) -> RankFusion:
    """Candidate J's fusion fitted on the RAGTruth training answers of ``train_cache``, refused
    until the judge has scored every one of them."""
    from ..fits.judge_fusion import fit_training_fusion
    from ..reports.fusion import fusion_table
    from ..reports.fusion_judge import JUDGE, JUDGES, with_judges

    table = fusion_table(_one_set(train_cache, "ragtruth", scorer), calibration)
    judged = with_judges(table, train_judges, "ragtruth", {JUDGE: JUDGES[JUDGE]})
    if len(judged) < len(table):
        raise Failure(f"the judge has scored {len(judged):,} of the {len(table):,} sentences of the "
                      f"{table['case_id'].nunique():,} training answers under {train_judges} (in "
                      f"{judged['case_id'].nunique():,} answers): finish the run (scripts/calibration_judge.sh) first")
    return fit_training_fusion(judged, calibration, command)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--cache", "caches", type=click.Path(file_okay=False, path_type=Path), multiple=True,
              default=[DEFAULT_CACHE], show_default=True,
              help="Feature cache(s); every full-mode exact set is reported, once: where two caches hold one "
                   "scorer's features of the same answers, the first given serves them.")
@click.option("--reference", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of the published reference features (../shared/reference/gasp-v1) to compare with.")
@markdown_report_options
@partial_option
def answers(caches: tuple[Path, ...], reference: Path | None, output: Path | None, resamples: int, seed: int,
            partial: bool) -> None:
    """Answer-level AUC of training-free aggregations of sentence scores, by benchmark and
    partition, and the conditions that move it (scorer, task, answer cap, reference features).
    Caches kept with token rows (`eval extract --token-rows`) add token-level aggregations."""
    from ..data.locations import reference_dir
    from ..reports.answers import answer_report

    if reference:
        reference_dir(reference)  # a clear error for a folder that is not there
    sets: dict[str, FeatureSet] = {}
    served: set[tuple] = set()
    for cache in caches:
        for s in load_sets(cache, partial=partial):
            held = _answers_held(s)
            if s.full_exact and held not in served:
                served.add(held)
                sets[f"{s.benchmark} ({s.config['scorer']}, {cache.name})"] = s
    if not sets:
        raise Failure(f"no full-mode feature sets under {', '.join(map(str, caches))}")
    command = report_command("answers", *(a for c in caches for a in ("--cache", c)),
                             *(["--reference", reference] if reference else []), *(["--partial"] if partial else []),
                             *(["-o", output] if output else []))
    text = answer_report(sets, reference, command, resamples, seed)
    emit_report(text, output)


def _answers_held(features: FeatureSet) -> tuple:
    """What makes two cached sets the same for `eval answers`: benchmark, configuration (token
    rows aside; old caches' unrecorded leave-one-out is exact, their precision fp32) and answers."""
    config = {**{k: v for k, v in features.config.items() if k != "token_rows"},
              "leave_one_out": features.config.get("leave_one_out", "exact"),
              "precision": features.config.get("precision", "fp32")}
    return features.benchmark, tuple(sorted(config.items())), frozenset(features.rows["case_id"])


@click.command("scorer-cost", context_settings=CONTEXT_SETTINGS)
@click.option("--cache", "caches", type=click.Path(file_okay=False, path_type=Path), multiple=True,
              default=[DEFAULT_CACHE], show_default=True,
              help="Feature cache(s); every two-pass and full-mode (exact) set of the benchmark is a row.")
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default="ragtruth", show_default=True)
@click.option("--timings", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="benchmarks/scorer_cost.py's JSON: each scorer and mode timed on the same answers in one run.")
@markdown_report_options
@partial_option
def scorer_cost(caches: tuple[Path, ...], benchmark: str, timings: Path | None, output: Path | None, resamples: int,
                seed: int, partial: bool) -> None:
    """Which scorer, at what cost: span and answer-level AUC and the recorded seconds per
    answer of every scorer and mode cached for one benchmark's answers."""
    from ..reports.scorer_cost import scorer_report

    sets = [s for cache in caches for s in load_sets(cache, partial=partial)
            if s.benchmark == benchmark and s.config.get("leave_one_out") != "masked"
            and s.config.get("precision", "fp32") == "fp32"]
    if not sets:
        raise Failure(f"no {benchmark} feature sets under {', '.join(map(str, caches))}: "
                      f"extract some first (groundsense eval extract {benchmark} --scorer NAME --mode MODE)")
    command = report_command("scorer-cost", *(a for c in caches for a in ("--cache", c)), "--benchmark", benchmark,
                             *(["--timings", timings] if timings else []), *(["--partial"] if partial else []),
                             *(["-o", output] if output else []))
    measured = json.loads(timings.read_text()) if timings else None
    emit_report(scorer_report(benchmark, sets, command, measured, resamples, seed), output)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("key_a")
@click.argument("key_b")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_CACHE, show_default=True)
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default=None,
              help="The benchmark, where a key is cached for more than one.")
@output_option("Also write the numbers as JSON.")
@click.option("--resamples", type=click.IntRange(min=100), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@partial_option
def compare(key_a: str, key_b: str, cache: Path, benchmark: str | None, output: Path | None, resamples: int, seed: int,
            partial: bool) -> None:
    """Compare two cached configurations of one benchmark (the same scorer or two) over the same answers.

    KEY_A and KEY_B are cache folder names (as `eval report` lists them), e.g. exact and
    masked leave-one-out:

    \b
      groundsense eval compare --cache results/features --benchmark ragtruth \\
        smollm2-135m-instruct__full-k5-cd42f428 smollm2-135m-instruct__full-masked-k5-a35ad123

    Prints span AUC of each method under each, the paired source-level bootstrap interval of
    A - B, and the agreement (Pearson, Spearman) of each feature. Where either is a two-pass
    extraction, only the two-pass methods and the no-context features are compared.
    """
    from ..reports.configurations import compare as run_compare

    sets = load_sets(cache, partial=partial)
    chosen = []
    for key, hint in ((key_a, "KEY_A"), (key_b, "KEY_B")):
        cached_for = sorted(s.benchmark for s in sets if s.key == key)
        matches = [s for s in sets if s.key == key and benchmark in (None, s.benchmark)]
        if len(matches) != 1:
            known = ", ".join(sorted({f"{s.benchmark}/{s.key}" for s in sets})) or "none"
            if matches:
                problem = f"is cached for several benchmarks ({', '.join(cached_for)}): pass --benchmark"
            elif cached_for:
                problem = f"is not cached for {benchmark} under {cache}, only for {', '.join(cached_for)}"
            elif list(cache.glob(f"*/{key}/config.json")):  # left out by load_sets, which said so
                problem = f"has not finished scoring under {cache} (the warning above): pass --partial to compare it"
            else:
                problem = f"is not under {cache}"
            raise click.BadParameter(f"{key} {problem} (cached: {known})", param_hint=hint)
        chosen.append(matches[0])
    try:
        comparison = run_compare(chosen[0], chosen[1], seed=seed, n_resamples=resamples)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    click.echo(comparison.report())
    if output:
        output.write_text(json.dumps(comparison.to_dict(), indent=2) + "\n")
