"""``groundsense``: detect, stream, batch, calibrate, fit, serve and serve agents (MCP) from the shell.

One module per command (:mod:`.detect`, :mod:`.stream`, :mod:`.batch`, :mod:`.calibrate`, :mod:`.fit`,
:mod:`.serve`, :mod:`.mcp`; :mod:`.catalogue` lists the examples and scorers); what they share is in
:mod:`.common`. Other distributions add command groups (:mod:`.plugins`): `groundsense eval` is the
research harness's, in ``groundsense-eval``. Exit codes: :data:`.common.EXIT_CODES`.

``__all__`` is the plugin API such a command group builds on (docs/architecture.md, "The public
surface"): the shared help settings, exit codes and failure, the detection's options, and a
resumable long run. The modules of this package are private.
"""

from __future__ import annotations

import logging

import click

from ..scorer.threads import THREADS_VARIABLE, use_threads
from .batch import batch
from .calibrate import calibrate
from .catalogue import examples, scorers
from .common import (
    CONTEXT_SETTINGS,
    EXIT_CODES,
    FLAGGING,
    CommandFunction,
    Failure,
    calibration_written,
    check_output_file,
    detector_options,
    fit_target_options,
    plain_detector,
    required_calibration,
    stacked,
)
from .detect import detect
from .fit import fit
from .interrupts import resumable
from .mcp import mcp
from .plugins import WithPlugins
from .serve import serve
from .stream import stream

__all__ = ["cli", "main", "CONTEXT_SETTINGS", "EXIT_CODES", "Failure", "CommandFunction", "stacked", "detector_options",
           "FLAGGING", "fit_target_options", "plain_detector", "required_calibration", "calibration_written",
           "check_output_file", "resumable"]


@click.group(cls=WithPlugins, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES)
@click.option("-v", "--verbose", is_flag=True, help="Show library log messages.")
@click.option("--threads", type=click.IntRange(min=1), default=None, envvar=THREADS_VARIABLE, show_envvar=True,
              help="CPU threads for the scorer, in this process and those it starts [default: the CPUs this "
                   "process may run on, at most its cgroup's CPU quota]. On a busy machine 1 can be faster.")
@click.version_option(package_name="groundsense")
def cli(verbose: bool, threads: int | None) -> None:
    """Flag the sentences of a RAG answer that the retrieved evidence does not support,
    and show the passage each supported sentence relied on."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s: %(message)s")
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.disable_propagation()  # the hub prints its messages (a download's retries) itself: not twice
    if threads is not None:
        use_threads(threads)
    if not verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()


for command in (detect, stream, batch, calibrate, fit, serve, mcp, examples, scorers):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="groundsense")
