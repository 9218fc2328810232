"""`groundsense eval`: extract benchmark features (or verifier scores) into a cache, report from it, show a case."""

from __future__ import annotations

import click

from groundsense.cli import CONTEXT_SETTINGS, EXIT_CODES

from .attribution import attribution_pairs, rate_attribution
from .calibration import adaptation, calibrate_from_cache, learning_curve, operating
from .reports import (
    aggregation,
    answers,
    ceiling,
    compare,
    default_score,
    fusion,
    report,
    scorer_cost,
    selection,
    text_classifier,
    verifier_grid,
    verifier_selection,
)
from .scoring import case, extract, lexical, verify
from .training import score_bundle, train_verifier, training_data, verifier_bundle


@click.group("eval", context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
def eval_group() -> None:
    """Evaluate on RAGTruth, TofuEval and RAGBench: extract features, then report."""


for command in (extract, verify, lexical, report, selection, fusion, aggregation, default_score, ceiling,
                text_classifier, answers, scorer_cost, calibrate_from_cache, operating, adaptation, learning_curve,
                attribution_pairs, rate_attribution, compare, case, training_data, train_verifier,
                verifier_bundle, score_bundle, verifier_grid, verifier_selection):
    eval_group.add_command(command)
