"""`groundsense fit`: a detector learned from a team's own labelled answers, written only when
cross-validation says it beats the training-free score."""

from __future__ import annotations

import click
import numpy as np

from .calibrate import score_rows, scoring_options
from .common import CONTEXT_SETTINGS, Failure, calibration_written, fit_target_options


@click.command(context_settings=CONTEXT_SETTINGS)
@scoring_options
@fit_target_options()
@click.option("--force", is_flag=True, help="Write the fit even when cross-validation does not find it better.")
def fit(source, features, no_progress, output, target_recall, target_precision, force, **detector_options):
    """Fit a detector on labelled answers: a logistic regression over each sentence's features,
    with thresholds, as a calibration file that `--calibration` takes everywhere.

    SOURCE is `calibrate`'s labelled input (JSONL, "labels" on every row), scored the same way.
    A row may carry "source" (the document or question it answers): rows sharing one stay in
    one cross-validation fold, so that the fit is judged on sources it never saw; a row without
    is a source of its own. Label answers from at least five sources, a few hundred answers
    for a fit that pays off (docs/calibration.md).

    Before writing, 5-fold source-grouped cross-validation compares the fit with the
    training-free score (the shipped calibration's) on the same sentences: span AUC and F1, each
    at its best-F1 threshold on the training folds, with 95% intervals of the difference
    (bootstrap over sources). The rule: the file is written when the AUC difference's interval
    lies above 0; otherwise nothing is written and the command exits 1, unless --force. The
    written fit is refitted on every label; its thresholds follow `calibrate`'s rules.
    """
    from ..eval.reports.few_labels import compare, cross_validate
    from ..eval.reports.tables import markdown_table
    from ..judging.calibration import LOGISTIC_FEATURES, sensitivity_score, shipped_calibration, standardisation
    from ..judging.fitting import REGULARISATION, fit_detector, fitted_rows
    from .calibration_data import labelled_rows, read_scored

    if not labelled_rows(source)[1]:  # before any scoring
        raise Failure(f"{source} has no 'labels': `groundsense fit` learns from labelled rows (to fit thresholds "
                      "without labels, use `groundsense calibrate`)")
    detector, features = score_rows(source, features, no_progress, detector_options)
    scored = read_scored(source, features, detector.adjudicator.leave_one_out)
    base = shipped_calibration(detector.scorer.name, None, detector.config.precision)
    rows = fitted_rows(scored.features)
    values = {name: v[rows] for name, v in scored.features.items()}
    default = (base.score("sensitivity", values) if base else sensitivity_score(standardisation(values), values))
    comparison = compare(cross_validate(values, scored.labels[rows], scored.groups[rows], default))
    grouped = "source" if any(g.startswith("source ") for g in scored.groups) else "answer"
    click.echo(f"5-fold cross-validation over {comparison.groups} {grouped}s ({comparison.sentences} sentences, "
               f"{comparison.unsupported} unsupported), 95% intervals over {grouped}s; default: "
               f"{'the shipped calibration' if base else 'the four-feature sum standardised on these rows'}:")
    click.echo(markdown_table(comparison.table()))
    if not comparison.better:
        message = (f"the fit does not rank significantly better than the default (AUC difference "
                   f"{comparison.table().loc['fitted − default', 'span AUC']}: its interval is not above 0)")
        if not force:
            raise click.ClickException(f"{message}; {output} not written. Label more answers, or pass --force to "
                                       "write it anyway")
        click.echo(f"warning: {message}; writing it anyway (--force)", err=True)
    fitted = fit_detector(
        scored.features, scored.labels, scored.answers, detector.scorer.name, detector.config.k, target_recall,
        target_precision, made_with={
            **scored.made_with, "fit": {"model": f"logistic regression, C={REGULARISATION}, standardised features",
                                        "features": list(LOGISTIC_FEATURES)},
            "cross_validation": {**comparison.record(), "grouped_by": grouped, "better": comparison.better,
                                 "default": base.made_with.get("source", "shipped") if base else "standardised sum"},
        },
    )
    fitted.save(output)
    click.echo(calibration_written(output, fitted), err=True)
    click.echo("  sensitivity: the fitted log-odds of 'unsupported'; weights: "
               + ", ".join(f"{name} {w:+.2f}" for name, w in sorted(fitted.weights["coefficients"].items(),
                                                                       key=lambda item: -np.abs(item[1]))), err=True)
