"""`groundsense detect`: check one answer against its evidence."""

from __future__ import annotations

import json
from typing import Any

import click

from ..config import DetectorConfig
from . import common
from .common import CONTEXT_SETTINGS, detector_options
from .inputs import evidence_options, gather_input


@click.command(context_settings=CONTEXT_SETTINGS)
@evidence_options
@click.option("--answer", "-a", default=None, help="The answer to check.")
@click.option("--answer-file", type=click.Path(dir_okay=False), default=None)
@click.option("--example", default=None, metavar="NAME",
              help="Run on a shipped example (see `groundsense examples`); other inputs given replace its fields.")
@click.option("--json", "as_json", is_flag=True, help="Print the machine-readable result.")
@common.fail_on_flag
@detector_options()
def detect(example: str | None, question: str | None, question_file: str | None, context: str | None,
           context_file: str | None, passage_files: tuple[str, ...], answer: str | None, answer_file: str | None,
           as_json: bool, fail_on_flag: bool, **detector_options: Any) -> None:
    """Check one answer against its evidence.

    Inputs come from options and files, from --example, or as one JSON object on stdin
    with keys question, context or passages, and answer (and optionally id, sentences,
    options: {k, mode}, which then override -k and --mode; the same request HTTP takes):

    \b
      echo '{"context": "...", "answer": "..."}' | groundsense detect --json
    """
    from ..inputs.validate import check_row
    from .render import render, terminal

    row = gather_input(example, question, question_file, context, context_file, passage_files, answer, answer_file)
    checked = check_row(row)  # validated before the scorer loads
    config = DetectorConfig(**{**detector_options, **checked.options})
    result = common.make_detection(config).detect_checked(checked)  # a bad verifier spec fails before loading
    if as_json:
        data = result.to_dict() if checked.id is None else {"id": checked.id, **result.to_dict()}
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        render(result, terminal())
    if fail_on_flag:
        common.exit_unless_cleared(result)
