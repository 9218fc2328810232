"""`groundsense fit`: a detector learned from a team's own labelled answers, written only when
cross-validation says it beats the training-free score; with --fuse, a fused cascade's fusion."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import numpy as np

from ..config import SCORES, DetectorConfig
from ..errors import InputError
from .calibrate import check_scoring_output, features_file, fused_verifier_option, score_rows, scoring_options
from .common import (
    CONTEXT_SETTINGS,
    Failure,
    calibration_written,
    check_output_file,
    fit_target_options,
    plain_detector,
)

if TYPE_CHECKING:
    from ..calibration.adjudicator import Adjudicator
    from ..calibration.cross_validation import Comparison
    from .calibration_data import ScoredRows


@click.command(context_settings=CONTEXT_SETTINGS)
@scoring_options
@fit_target_options(fuses=True)
@click.option("--force", is_flag=True, help="Write the fit even when cross-validation does not find it better.")
@click.option("--no-lexical", is_flag=True,
              help="Fit over the scorer's features only, without the lexical signals (for answers in another "
                   "language than their evidence, where shared words mean nothing).")
@click.option("--fuse", is_flag=True,
              help="Fit a fused cascade's fusion instead: its judge scores every sentence, and the fused score "
                   "becomes a logistic regression over the five signals' ranks (docs/verifiers.md).")
@fused_verifier_option
@click.option("--fusion", "base", default=None, metavar="BASE.json",
              help="With --fuse: the fusion to start from (its judge and sensitivity statistics; the references, "
                   "weights and thresholds are fitted anew) [default: the shipped one].")
@click.option("--score", type=click.Choice(SCORES), default="auto", show_default=True,
              help="The training-free score the fit must beat: fused (the default score), sensitivity (the shipped "
                   "calibration's), or auto: fused where lexical fusions ship for the scorer at its precision.")
def fit(source: Path, features: Path | None, no_progress: bool, output: Path, target_recall: float | None,
        target_precision: float | None, force: bool, no_lexical: bool, fuse: bool, verifier: str | None,
        base: str | None, score: str, **detector_options: Any) -> None:
    """Fit a detector on labelled answers: a logistic regression over each sentence's features
    and lexical signals, with thresholds, as a calibration file that `--calibration` takes everywhere.

    SOURCE is `calibrate`'s labelled input (JSONL, "labels" on every row), scored the same way.
    A row may carry "source" (the document or question it answers): rows sharing one stay in
    one cross-validation fold, so that the fit is judged on sources it never saw; a row without
    is a source of its own. Label answers from at least five sources, a few hundred answers
    for a fit that pays off (docs/calibration.md).

    Before writing, 5-fold source-grouped cross-validation compares the fit with the
    training-free score (--score: the default, fused score where it ships, as `detect` computes
    it; else the shipped calibration's) on the same sentences: span AUC and F1, each
    at its best-F1 threshold on the training folds, with 95% intervals of the difference
    (bootstrap over sources). The rule: the file is written when the AUC difference's interval
    lies above 0; otherwise nothing is written and the command exits 1, unless --force. The
    written fit is refitted on every label; its thresholds follow `calibrate`'s rules.

    With --fuse, a fused cascade's fusion is fitted instead: the cascade over the base fusion's
    judge (--verifier to change it) scores every sentence of SOURCE (into SOURCE with
    .fused.jsonl), the five signals' references are taken from these rows, and the fused score
    becomes a logistic regression over their ranks (the fitted log-odds) in place of the ranks'
    average, which is the training-free side of the same check (its references from the
    training folds). The thresholds (sentences; answers, on the mean of their two highest fused
    scores) follow `calibrate`'s rules. Detect with --verifier SPEC --fuse --fusion OUTPUT:

    \b
    groundsense fit labelled.jsonl --fuse -o fusion.json
    groundsense detect --verifier judge:qwen2.5-coder-1.5b-instruct --fuse --fusion fusion.json ...
    """
    from ..calibration.cross_validation import check_sources
    from .calibration_data import labelled_rows, source_group

    check_output_file(output)
    check_scoring_output(output, source, features, fuse)
    if target_recall is not None and target_precision is not None:
        raise InputError("ask for a target recall or a target precision, not both")
    if (verifier or base) and not fuse:
        raise InputError("--verifier and --fusion name the judge and the base fusion of a fused cascade: add --fuse")
    if no_lexical and fuse:
        raise InputError("--no-lexical chooses the detector fit's signals; a fused cascade's are its five ranks: "
                         "drop one of --no-lexical and --fuse")
    rows, labelled = labelled_rows(source)  # before any scoring
    if not labelled:
        raise Failure(f"{source} has no 'labels': `groundsense fit` learns from labelled rows (to fit thresholds "
                      "without labels, use `groundsense calibrate`" + (
                          f"; to adapt a fusion to unlabelled rows, `groundsense calibrate {source} --adapt shipped "
                          "--fuse`)" if fuse else ")"))
    check_sources(len({source_group(line, row) for line, row in rows.items()}))
    if fuse:
        if score != "auto":
            raise InputError("--score names the score a detector fit must beat; a fused cascade's fit is checked "
                             "against its ranks' average: drop one of --score and --fuse")
        _fit_fusion(source, features, no_progress, output, target_recall, target_precision, force, verifier,
                    base or "shipped", detector_options)
        return
    _fit_detector(source, features, no_progress, output, target_recall, target_precision, force, no_lexical, score,
                  detector_options)


def _fit_detector(source: Path, features: Path | None, no_progress: bool, output: Path, target_recall: float | None,
                  target_precision: float | None, force: bool, no_lexical: bool, score: str,
                  detector_options: dict[str, Any]) -> None:
    """The detector's logistic fit, checked against the training-free score ``score`` names
    (:func:`_default_score`)."""
    from ..calibration.adjudicator import Adjudicator
    from ..calibration.calibration import (
        LOGISTIC_FEATURES,
        LOGISTIC_SIGNALS,
        complete_rows,
    )
    from ..calibration.cross_validation import compare, cross_validate, logistic_sides
    from ..calibration.fitting import REGULARISATION, fit_detector, fitted_rows
    from ..lexical import LEXICAL
    from ..pipeline.precision import detection_precision
    from ..weights import display_name
    from .calibration_data import read_scored

    # the default's adjudicator, with the shipped files: made before anything is scored, so that a score
    # they cannot give (the fused score at int8) is refused then; the scorer and precision as the detector's
    precision = detection_precision(detector_options["precision"], detector_options["device"])
    adjudicator = Adjudicator(DetectorConfig(**{**detector_options, "scorer": display_name(detector_options["scorer"]),
                                                "precision": precision}, mode="full", score=score))
    detection, features = score_rows(source, features, no_progress, detector_options)
    detector = plain_detector(detection)  # the options name no verifier
    scored = read_scored(source, features, detector.config.leave_one_out)  # score_rows scores in full mode
    assert scored.labels is not None, "fit refuses rows without labels before scoring them"
    names = LOGISTIC_FEATURES if no_lexical else LOGISTIC_SIGNALS
    if not no_lexical and (lacking := int((~complete_rows(scored.features, LEXICAL)).sum())):
        raise InputError(f"{lacking} of the {len(scored.labels)} scored sentences in {features} lack the lexical "
                         f"signals (an older groundsense scored them): delete it to score {source} again, or pass "
                         "--no-lexical to fit over the scorer's features only")
    rows = fitted_rows(scored.features, names)
    values = {name: v[rows] for name, v in scored.features.items()}
    labels = scored.labels[rows]
    default, named, recorded = _default_score(score, adjudicator, values, scored.chunk_counts[rows], features)
    comparison = compare(cross_validate(labels, scored.groups[rows], logistic_sides(values, labels, default, names)))
    grouped = _checked(comparison, scored, output, force, named)
    fitted = fit_detector(
        scored.features, scored.labels, scored.answers, detector.scorer.name, detector.config.k, target_recall,
        target_precision, made_with={
            **scored.made_with, "fit": {"model": f"logistic regression, C={REGULARISATION}, standardised features",
                                        "features": list(names)},
            "cross_validation": {**comparison.record(), "grouped_by": grouped, "better": comparison.better,
                                 "default": recorded},
        },
        names=names,
    )
    fitted.save(output)
    click.echo(calibration_written(output, fitted), err=True)
    click.echo("  sensitivity: the fitted log-odds of 'unsupported'; weights: "
               + _weights_text(fitted.weights["coefficients"]), err=True)


def _default_score(score: str, adjudicator: Adjudicator, values: dict[str, np.ndarray], chunk_counts: np.ndarray,
                   features: Path) -> tuple[np.ndarray, str, str]:
    """The training-free score a detector fit must beat on the sentences' ``values`` (answers
    scored in ``chunk_counts``): the score `detect` gives them with the shipped files, as
    ``adjudicator`` (made for ``score``) judges (``auto``: the fused score where it ships; under
    ``auto``, sentences lacking the lexical signals are compared with ``sensitivity`` instead,
    with a note); the four-feature sum standardised on these rows where nothing shipped judges
    them (another scorer, or int8). With what to call it and what to record."""
    from ..calibration.adjudicator import Adjudicator
    from ..calibration.calibration import complete_rows, sensitivity_score, standardisation
    from ..lexical import LEXICAL

    config = adjudicator.config
    if score == "auto" and not complete_rows(values, LEXICAL).all():
        click.echo(f"note: the sentences in {features} lack the lexical signals the default (fused) score ranks: "
                   "the fit is checked against the shipped calibration's sensitivity instead", err=True)
        if config.score != "sensitivity":
            adjudicator = Adjudicator(replace(config, score="sensitivity"))
    if adjudicator.config.score == "fused" and (lacking := int((~complete_rows(values, LEXICAL)).sum())):
        raise InputError(f"{lacking} scored sentences in {features} lack the lexical signals the default score ranks "
                         "(an older groundsense scored them): delete it to score the rows again, or fit against "
                         "--score sensitivity")
    scores = np.full(len(chunk_counts), np.nan)
    for chunks in np.unique(chunk_counts):
        rows = chunk_counts == chunks
        found = adjudicator.sentence_scores({name: v[rows] for name, v in values.items()}, int(chunks))
        if found is None:  # nothing shipped judges these answers: compare with the standardised sum
            return (sensitivity_score(standardisation(values), values),
                    "the four-feature sum standardised on these rows", "standardised sum")
        scores[rows] = found
    if adjudicator.config.score == "fused":
        named = f"the default score (the shipped fused score at {config.precision})"
        return scores, named, f"fused ({config.precision})"
    shipped = adjudicator.calibration_for(config.k)[0]
    return scores, "the shipped calibration", shipped.made_with.get("source", "shipped") if shipped else "shipped"


def _fit_fusion(source: Path, features: Path | None, no_progress: bool, output: Path, target_recall: float | None,
                target_precision: float | None, force: bool, verifier: str | None, base_name: str,
                detector_options: dict[str, Any]) -> None:
    """A fused cascade's weighted fusion (:meth:`~groundsense.calibration.fusion.RankFusion.weighted`),
    checked against the ranks' average with references from the same training folds."""
    from ..calibration.cross_validation import compare, cross_validate, fusion_sides
    from ..calibration.fusion import JUDGE_FUSION_SIGNALS, RankFusion
    from .calibration_data import read_scored
    from .fusion_calibration import fused_options, fusion_base

    base = fusion_base(base_name, verifier)  # read first: a bad base fails before the scorer loads
    detector, features = score_rows(source, features_file(source, features, fuse=True), no_progress,
                                    {**detector_options, **fused_options(base)}, fusion=base)
    scored = read_scored(source, features, detector.config.leave_one_out)
    assert scored.labels is not None, "fit refuses rows without labels before scoring them"
    signals = base.signals(scored.features, scored.verifier_scores)
    rows = np.all([np.isfinite(v) for v in signals.values()], axis=0)
    values = {name: v[rows] for name, v in signals.items()}
    labels, answers = scored.labels[rows], scored.answers[rows]
    if not rows.any():
        raise InputError(f"no sentence of {source} has all five fused signals (see {features}): nothing to fit")
    # The training-free side: the ranks' plain average, whatever the base; a fresh record of how the fit was made.
    unweighted = replace(base, weights=None, made_with={
        **scored.made_with, "base": base_name, "sensitivity": f"the z-sum of the base fusion's statistics "
                                                              f"({base.scorer})",
        "references": "the labelled sentences' values, at most 1001 evenly spaced order statistics each",
        "rule": f"logistic regression over the ranks of {', '.join(JUDGE_FUSION_SIGNALS)}; answer: the mean of the "
                "top two sentences"})

    comparison = compare(cross_validate(labels, scored.groups[rows], fusion_sides(unweighted, values, labels)))
    grouped = _checked(comparison, scored, output, force,
                       "the fused score (the ranks' average, references from the training folds)")
    fitted: RankFusion = unweighted.with_references(values).weighted(values, labels).thresholded(
        values, labels, answers, target_recall, target_precision)
    fitted.made_with["cross_validation"] = {**comparison.record(), "grouped_by": grouped, "better": comparison.better,
                                            "default": "the ranks' average"}
    fitted.save(output)
    rule = fitted.made_with["threshold_rule"]
    click.echo(f"wrote {output}: {fitted.verifier} fused over {fitted.made_with['n_sentences']} labelled sentences "
               f"of {fitted.made_with['n_answers']} answers\n"
               f"  sentences flagged at fused >= {fitted.threshold:.3f}: {rule['sentence']}\n"
               f"  answers flagged at a top-two mean >= {fitted.answer_threshold:.3f}: {rule['answer']}\n"
               "  fused: the fitted log-odds of 'unsupported'; weights of the standardised ranks: "
               + _weights_text(fitted.made_with["fit"]["standardised"]["coefficients"]), err=True)
    click.echo(f"  detect with: --verifier {fitted.verifier} --fuse --fusion {output}", err=True)


def _checked(comparison: Comparison, scored: ScoredRows, output: Path, force: bool, default: str) -> str:
    """Print the cross-validation's comparison with ``default`` (what the training-free side is)
    and apply the rule: refuse (exit 1) a fit that does not rank better, unless ``force``. What
    the folds were grouped by."""
    grouped = "source" if any(g.startswith("source ") for g in scored.groups) else "answer"
    click.echo(f"5-fold cross-validation over {comparison.groups} {grouped}s ({comparison.sentences} sentences, "
               f"{comparison.unsupported} unsupported), 95% intervals over {grouped}s; default: {default}:")
    click.echo(comparison.markdown())
    if not comparison.better:
        message = (f"the fit does not rank significantly better than the default (AUC difference "
                   f"{comparison.cells()['fitted − default']['span AUC']}: its interval is not above 0)")
        if not force:
            raise click.ClickException(f"{message}; {output} not written. Label more answers, or pass --force to "
                                       "write it anyway")
        click.echo(f"warning: {message}; writing it anyway (--force)", err=True)
    return grouped


def _weights_text(coefficients: dict[str, float]) -> str:
    """The weights, largest first."""
    return ", ".join(f"{name} {w:+.2f}" for name, w in sorted(coefficients.items(), key=lambda item: -np.abs(item[1])))
