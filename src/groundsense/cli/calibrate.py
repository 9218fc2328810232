"""`groundsense calibrate`: fit standardisation statistics and flag thresholds; and the scoring of
labelled rows that `groundsense fit` shares with it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..calibration.adaptation import DEFAULT_METHOD, METHODS
from ..calibration.calibration import Calibration
from ..config import SCORES, DetectorConfig
from ..errors import InputError
from . import common
from .common import (
    CONTEXT_SETTINGS,
    FLAGGING,
    CommandFunction,
    calibration_written,
    detector_options,
    fit_target_options,
    plain_detector,
    required_calibration,
    stacked,
)
from .interrupts import resumable

if TYPE_CHECKING:
    from ..calibration.fusion import RankFusion
    from ..detection import Detection


def scoring_options(func: CommandFunction) -> CommandFunction:
    """SOURCE, --features, --no-progress and the detector options: how `calibrate` and `fit`
    score their rows (:func:`score_rows`)."""
    options = [
        click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path)),
        click.option("--features", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Batch output to reuse or resume [default: SOURCE with .features.jsonl; with --fuse, "
                          ".fused.jsonl]."),
        click.option("--no-progress", is_flag=True),
        detector_options(omit=("mode", *FLAGGING)),  # fitting scores in full mode, uncalibrated
    ]
    return stacked(options)(func)


def features_file(source: Path, features: Path | None, fuse: bool = False) -> Path:
    """The features file ``source`` is scored into: ``--features``, else SOURCE with .features.jsonl
    (a fused cascade's, ``fuse``: .fused.jsonl)."""
    return features or source.with_suffix(".fused.jsonl" if fuse else ".features.jsonl")


def check_scoring_output(output: Path, source: Path, features: Path | None, fuse: bool) -> None:
    """Refuse a ``-o`` that is SOURCE or the features file it is scored into: the file written at
    the end would replace the rows or the scores."""
    scored = features_file(source, features, fuse)
    for path, what in ((source, "the input rows"), (scored, "the features file the rows are scored into")):
        if output.resolve() == path.resolve():
            raise InputError(f"-o {output} is {what}: write the file to another path")


# `calibrate --fuse`'s and `fit --fuse`'s judge.
fused_verifier_option = click.option(
    "--verifier", default=None, metavar="SPEC",
    help="With --fuse: the judge whose scores are fused [default: the base fusion's, "
         "judge:qwen2.5-coder-1.5b-instruct for the shipped one].")


def score_rows(source: Path, features: Path | None, no_progress: bool, options: dict[str, Any],
               check: Callable[[Detection], None] | None = None, fusion: RankFusion | None = None
               ) -> tuple[Detection, Path]:
    """Score ``source``'s rows in full mode, uncalibrated, into ``features`` (resuming a killed
    run): the detector and the batch output's path. ``check(detector)`` runs before any scoring;
    ``fusion``: a fused cascade's, given beside the options."""
    from ..rows.batch import run_batch
    from .calibration_data import check_cache, labelled_rows

    labelled_rows(source)  # its labels checked before the scorer loads
    features = features_file(source, features)
    config = DetectorConfig(**options, mode="full", calibration=False)
    detector = common.make_detection(config, fusion=fusion)
    if check:
        check(detector)
    check_cache(source, features, detector.config, detector.describe().get("verifier"))
    with resumable(f"the features scored so far are in {features}"):
        run_batch(detector, source, features, progress=not no_progress)
    return detector, features


@click.command(context_settings=CONTEXT_SETTINGS)
@scoring_options
@fit_target_options(labels_optional=True, fuses=True)
@click.option("--flag-rate", type=click.FloatRange(0, 1, min_open=True), default=0.1, show_default=True,
              help="Unlabelled: share of sentences to flag.")
@click.option("--adapt", "base", default=None, metavar="BASE.json|shipped",
              help="Adapt a labelled calibration to SOURCE's domain without labels (docs/calibration.md): "
                   "`shipped` for the default scorer's shipped one, or a file.")
@click.option("--method", type=click.Choice(METHODS), default=DEFAULT_METHOD, show_default=True,
              help="With --adapt: what is re-estimated on the domain (docs/detector-selection.md chose the default).")
@click.option("--fuse", is_flag=True,
              help="With --adapt: adapt a fused cascade's fusion (BASE: `shipped` or a fusion file) instead: every "
                   "sentence goes to its judge, and the references are re-estimated (docs/verifiers.md).")
@fused_verifier_option
@click.option("--score", type=click.Choice(SCORES), default="auto", show_default=True,
              help="With --adapt: which score's file to adapt: fused (the default score's lexical fusions, for "
                   "detect --fusion), sensitivity (a calibration, for detect --calibration), or auto: fused where "
                   "BASE is `shipped` and lexical fusions ship for the scorer at its precision, or BASE is a fusion "
                   "file; else sensitivity.")
def calibrate(source: Path, features: Path | None, no_progress: bool, output: Path, target_recall: float | None,
              target_precision: float | None, flag_rate: float, base: str | None, method: str, fuse: bool,
              verifier: str | None, score: str, **detector_options: Any) -> None:
    """Fit standardisation statistics and flag thresholds on a set of answers.

    SOURCE is batch input (JSONL). Rows may carry "labels": a list of {"start", "end"}
    character spans of unsupported text in the answer; a sentence overlapping one is
    unsupported. With labels on every row the sentence and answer thresholds meet
    --target-recall or --target-precision (default: the best F1, and for answers the same threshold
    unless a lower one separates them significantly better), and the file keeps the
    precision-recall curves that `detect --target-recall/--target-precision` read; without,
    the sentence threshold flags --flag-rate of sentences. Never calibrate on the answers
    you will score.

    With --adapt, what the labelled BASE learned stays and what depends on the domain is
    re-estimated from SOURCE's answers, whose labels (if any) are not read: use a few hundred
    answers of your own, unlabelled. For the default fused score (BASE `shipped`, or a fusion
    file) that is its lexical fusions' references, the thresholds kept in rank space: detect
    with --fusion OUTPUT. With --score sensitivity (or BASE a calibration file) it is the
    calibration's statistics or thresholds (--method), and it reports how stable the estimate
    is (a bootstrap over the answers): detect with --calibration OUTPUT.

    With --adapt and --fuse, a fused cascade's fusion (BASE: `shipped` or a fusion file) is
    adapted instead: its judge scores every sentence of SOURCE, the references of its signals
    are re-estimated from them, and the thresholds keep their place in rank space; detect with
    --verifier SPEC --fuse --fusion OUTPUT.
    """
    from ..pipeline.precision import detection_precision
    from .calibration_data import fit_from_batch

    common.check_output_file(output)
    check_scoring_output(output, source, features, fuse)
    _check_applies(source, base, target_recall, target_precision)
    if score != "auto" and (not base or fuse):
        raise InputError("--score says which score's file --adapt adapts: add --adapt (fitting on labels writes a "
                         "calibration, and --fuse adapts a fused cascade's fusion)")
    if fuse and not base:
        raise InputError("--fuse adapts a fusion to unlabelled rows: add --adapt shipped (or a fusion file)")
    if verifier and not fuse:
        raise InputError("--verifier names the judge of a fused cascade: add --fuse")
    if base and fuse:
        from .fusion_calibration import fused_options, fusion_base, write_adapted

        if target_recall or target_precision:
            raise InputError("--adapt reads no labels, so it cannot meet a target recall or precision")
        fusion = fusion_base(base, verifier)  # read first: a bad base fails before the scorer loads
        _, features = score_rows(source, features_file(source, features, fuse=True), no_progress,
                                 {**detector_options, **fused_options(fusion)}, fusion=fusion)
        write_adapted(fusion, source, features, output)
        return
    if base:
        if target_recall or target_precision:
            raise InputError("--adapt reads no labels, so it cannot meet a target recall or precision: pick the "
                             "target at detect time only with a labelled calibration, or drop --adapt and label "
                             "the rows")
        # resolved once, before the scorer loads: which base serves depends on the precision
        resolved = detection_precision(detector_options["precision"], detector_options["device"])
        detector_options = {**detector_options, "precision": resolved}
        if adapts_fusions(base, score, detector_options):
            adapt_fusions(source, features, no_progress, base, method, output, detector_options)
            return
        # read first: a bad base fails before the scorer loads
        labelled_base = adaptation_base(base, detector_options["precision"])
        _, features = score_rows(source, features, no_progress, detector_options, check=lambda d: check_base(
            labelled_base, base, plain_detector(d).scorer.name, d.config.k))
        adapted(labelled_base, source, features, method, output)
        return
    detection, features = score_rows(source, features, no_progress, detector_options)
    detector = plain_detector(detection)  # no verifier among the options: FLAGGING is omitted
    calibration = fit_from_batch(source, features, detector.scorer.name, detector.config.k,
                                 leave_one_out=detector.config.leave_one_out, target_recall=target_recall,
                                 target_precision=target_precision, flag_rate=flag_rate)
    calibration.save(output)
    click.echo(calibration_written(output, calibration), err=True)


def _check_applies(source: Path, base: str | None, target_recall: float | None,
                   target_precision: float | None) -> None:
    """Refuse, before the scorer loads, an option that the rows or the other options leave
    without effect (it was silently ignored): a target without labels, --flag-rate with them,
    --method without --adapt, or both targets."""
    from .calibration_data import labelled_rows

    given = click.get_current_context().get_parameter_source

    def asked(name: str) -> bool:
        return given(name) not in (None, click.core.ParameterSource.DEFAULT)

    if target_recall is not None and target_precision is not None:
        raise InputError("ask for a target recall or a target precision, not both")
    if asked("method") and not base:
        raise InputError("--method says how --adapt adapts a calibration: add --adapt, or drop --method")
    if base:
        return
    labelled = labelled_rows(source)[1]
    if not labelled and (target_recall is not None or target_precision is not None):
        raise InputError(f"{source} has no 'labels', which a target recall or precision is met on: label every row, "
                         "or set the share of sentences to flag with --flag-rate")
    if labelled and asked("flag_rate"):
        raise InputError(f"--flag-rate sets the threshold of unlabelled rows; {source}'s rows are labelled, so the "
                         "thresholds are fitted on the labels: drop --flag-rate, or ask for --target-recall")


def adapts_fusions(base: str, score: str, options: dict[str, Any]) -> bool:
    """Whether ``--adapt BASE`` adapts the fused score's lexical fusions (else a calibration): as
    ``--score`` says; ``auto``: where BASE is a fusion file, or ``shipped`` with lexical fusions
    shipped for the scorer at its (resolved) precision."""
    from ..calibration.files import LEXICAL_FUSIONS, file_kind
    from ..calibration.fusion import LexicalFusions
    from ..weights import display_name

    if base == "shipped":
        found = LexicalFusions.shipped(display_name(options["scorer"]), options["precision"]) is not None
    else:
        found = file_kind(base) == LEXICAL_FUSIONS
    if score == "fused" and not found:
        raise InputError(f"--score fused adapts lexical fusions, and --adapt {base} "
                         + ("holds none" if base != "shipped" else "has none shipped for this scorer and precision")
                         + ": pass a fusion file, or --score sensitivity")
    if score == "sensitivity" and base != "shipped" and found:
        raise InputError(f"--adapt {base} holds lexical fusions, which score by the fused score: drop --score "
                         "sensitivity, or pass a calibration file")
    return found if score == "auto" else score == "fused"


def adapt_fusions(source: Path, features: Path | None, no_progress: bool, base: str, method: str, output: Path,
                  options: dict[str, Any]) -> None:
    """``calibrate --adapt`` for the fused score: score ``source`` and write its adapted lexical fusions."""
    from ..weights import display_name
    from .fusion_calibration import check_lexical_base, lexical_base, write_adapted_lexical

    if method != DEFAULT_METHOD:
        raise InputError(f"--method {method} adapts a calibration's score (--score sensitivity); the fused score's "
                         "references are re-estimated as they are")
    precision = options["precision"]  # resolved by the caller
    fusions = lexical_base(base, display_name(options["scorer"]), precision)  # read before the scorer loads
    _, features = score_rows(source, features, no_progress, options, check=lambda d: check_lexical_base(
        fusions, base, plain_detector(d).scorer.name, plain_detector(d).config.precision))
    write_adapted_lexical(fusions, source, features, output)


def adaptation_base(base: str, precision: str) -> Calibration:
    """The labelled calibration ``--adapt`` names: ``shipped`` (the default scorer's, for the
    precision it will run at, resolved) or a file."""
    from ..weights import DEFAULT_SCORER

    if base != "shipped":
        return Calibration.load(base)
    return required_calibration(DEFAULT_SCORER, None, precision)


def check_base(calibration: Calibration, base: str, scorer: str, k: int) -> None:
    """Refuse a base fitted for another scorer, or for answers scored in other chunk counts."""
    if calibration.scorer != scorer:
        raise InputError(f"--adapt {base} was fitted for scorer {calibration.scorer!r}, not {scorer!r}: adapt with "
                         f"the scorer it was fitted for (-m {calibration.scorer}), or pass a calibration of {scorer}")
    if not calibration.serves(k):
        raise InputError(f"--adapt {base} serves answers scored in {calibration.chunk_counts} chunks: score with one "
                         "of those (-k)")


def adapted(base: Calibration, source: Path, features: Path, method: str, output: Path) -> None:
    """Adapt ``base`` to the batch output ``features``, write it to ``output`` and report how
    many answers it saw and how stable it is."""
    from ..calibration.adaptation import FEW_ANSWERS, DomainSentences, adapt, stability
    from .calibration_data import read_scored

    scored = read_scored(source, features)
    if not len(scored.answers):
        raise InputError(f"no sentence of {source} could be scored (see {features}): nothing to adapt to")
    domain = DomainSentences(scored.features, scored.answers, scored.chunk_counts)
    calibration = adapt(base, domain, method, source=source.name)
    spread = stability(base, domain, calibration)
    calibration.made_with["adaptation"]["stability"] = spread
    calibration.save(output)
    click.echo(calibration_written(output, calibration), err=True)
    low, high = spread["flagged_share_interval"]
    click.echo(f"  adapted by {method} from {domain.n_answers} answers: flags {spread['flagged_share']:.1%} of their "
               f"sentences (95% interval over {spread['resamples']} resamples of the answers: {low:.1%}-{high:.1%})",
               err=True)
    if scored.labels is not None:
        click.echo("  (the rows' labels were not read: drop --adapt to fit the thresholds on them)", err=True)
    if domain.n_answers < FEW_ANSWERS:
        click.echo(f"warning: only {domain.n_answers} answers: the estimate is loose; adapt on a few hundred",
                   err=True)
