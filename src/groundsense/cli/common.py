"""What the commands share: help settings, the exit-code rule and the detector's options."""

from __future__ import annotations

import click

from ..errors import GroundsenseError
from ..validate import MAX_K

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

EXIT_CODES = """\b
Exit codes, the same for every command:
  0    done (in a batch, a bad row is an error record, not a failure)
  1    a sentence was flagged under --fail-on-flag (or an internal error: a traceback)
  2    bad usage or input, or a scorer or verifier that cannot load: the message says what to do
  130  interrupted (Ctrl-C), 143 stopped (SIGTERM): finished work is kept; rerun to resume
"""


class Failure(click.ClickException):
    """Bad usage or input: the message, and exit code 2."""

    exit_code = 2


class Commands(click.Group):
    """A group whose commands' :class:`GroundsenseError` (input a person must fix, a scorer or
    verifier that cannot load) exits with :class:`Failure`; given to the root group, it covers
    every command below it."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GroundsenseError as exc:
            raise Failure(str(exc)) from exc


LOO_OPTION = click.option(
    "--loo", "leave_one_out", type=click.Choice(["exact", "masked"]), default="exact", show_default=True,
    help="Full mode's leave-one-out rows: exact re-encodes the context without each chunk; masked hides the "
         "chunk from the answer over one encoding of the full context (an approximation, cheaper; the shipped "
         "calibration then serves the gap detector only).",
)


def detector_options(fitting: bool = False):
    """The options that build a detector. ``fitting`` (`calibrate`) leaves out --mode and
    --calibration: fitting always scores in full mode, uncalibrated."""
    mode = [] if fitting else [
        click.option("--mode", type=click.Choice(["full", "two_pass"]), default="full", show_default=True,
                     help="full: K+2 conditions and the sensitivity detector; two_pass: gap only, ~K/2+1 times cheaper.")]
    calibration = [] if fitting else [
        click.option("--calibration", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Calibration file from `groundsense calibrate` [default: the one shipped for the scorer].")]
    options = [
        click.option("--scorer", "-m", default=None, metavar="NAME",
                     help="Built-in scorer, local model directory or Hugging Face id [default: smollm2-135m-instruct]."),
        click.option("-k", "--chunks", "k", type=click.IntRange(min=1, max=MAX_K), default=5, show_default=True,
                     help="Chunks a single context string is split into (passages are chunks as given)."),
        *mode,
        LOO_OPTION,
        *calibration,
        click.option("--max-context-tokens", type=click.IntRange(min=1), default=1800, show_default=True),
        click.option("--max-answer-tokens", type=click.IntRange(min=1), default=256, show_default=True),
        click.option("--device", default=None, help="torch device [default: cuda if available, else cpu]."),
    ]

    def decorate(func):
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def make_detector(scorer, k, mode, leave_one_out, calibration, max_context_tokens, max_answer_tokens, device):
    """Every command's detector. Commands call it as ``common.make_detector``, so that a test
    can hand them a loaded one; the detector module (torch) is imported only when one is made,
    which keeps ``groundsense -h`` fast."""
    from ..detector import Detector

    return Detector(scorer, k=k, mode=mode, calibration=calibration, max_context_tokens=max_context_tokens,
                    max_answer_tokens=max_answer_tokens, device=device, leave_one_out=leave_one_out)
