"""`groundsense eval`: extract benchmark features (or verifier scores) into a cache, report from it, show a case."""

from __future__ import annotations

import click

from groundsense.cli import CONTEXT_SETTINGS

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

EXIT_CODES = """\b
Exit codes, the same for every eval command:
  0    done
  1    an internal error: a traceback
  2    bad usage or input, or a scorer or verifier that cannot load: the message says what to do
  130  interrupted (Ctrl-C), 143 stopped (SIGTERM): what a cache holds is kept; rerun to resume
"""


@click.group("eval", context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
def eval_group() -> None:
    """Evaluate on RAGTruth, TofuEval and RAGBench: extract features, then report."""


for command in (extract, verify, lexical, report, selection, fusion, aggregation, default_score, ceiling,
                text_classifier, answers, scorer_cost, calibrate_from_cache, operating, adaptation, learning_curve,
                attribution_pairs, rate_attribution, compare, case, training_data, train_verifier,
                verifier_bundle, score_bundle, verifier_grid, verifier_selection):
    eval_group.add_command(command)
