"""`groundsense calibrate`: fit standardisation statistics and flag thresholds."""

from __future__ import annotations

from pathlib import Path

import click

from ..config import DetectorConfig
from ..interrupts import resumable
from . import common
from .common import CONTEXT_SETTINGS, FLAGGING, calibration_written, detector_options, fit_target_options


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@fit_target_options(labels_optional=True)
@click.option("--features", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Batch output to reuse or resume [default: SOURCE with .features.jsonl].")
@click.option("--flag-rate", type=click.FloatRange(0, 1, min_open=True), default=0.1, show_default=True,
              help="Unlabelled: share of sentences to flag.")
@click.option("--no-progress", is_flag=True)
@detector_options(omit=("mode", *FLAGGING))  # fitting scores in full mode, uncalibrated
def calibrate(source, output, features, target_recall, target_precision, flag_rate, no_progress, **detector_options):
    """Fit standardisation statistics and flag thresholds on a set of answers.

    SOURCE is batch input (JSONL). Rows may carry "labels": a list of {"start", "end"}
    character spans of unsupported text in the answer; a sentence overlapping one is
    unsupported. With labels on every row the sentence and answer thresholds meet
    --target-recall or --target-precision (default: the best F1, and for answers the same threshold
    unless a lower one separates them significantly better), and the file keeps the
    precision-recall curves that `detect --target-recall/--target-precision` read; without,
    the sentence threshold flags --flag-rate of sentences. Never calibrate on the answers
    you will score.
    """
    from ..batch import run_batch
    from ..calibration_data import fit_from_batch

    features = features or source.with_suffix(".features.jsonl")
    detector = common.make_detection(DetectorConfig(**detector_options, mode="full", calibration=False))
    with resumable(f"the features scored so far are in {features}"):
        run_batch(detector, source, features, progress=not no_progress)
    calibration = fit_from_batch(source, features, detector.scorer.name, detector.k,
                                 leave_one_out=detector.leave_one_out, target_recall=target_recall,
                                 target_precision=target_precision, flag_rate=flag_rate)
    calibration.save(output)
    click.echo(calibration_written(output, calibration), err=True)
