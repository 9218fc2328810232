"""The question, evidence and answer of `detect` and `stream`: their options and how they are read."""

from __future__ import annotations

import io
import sys
from typing import Any

import click

from ..errors import InputError
from .common import CommandFunction, stacked


def evidence_options(func: CommandFunction) -> CommandFunction:
    """The options that give the question and the evidence."""
    return stacked([
        click.option("--question", "-q", default=None, help="The question or instruction."),
        click.option("--question-file", type=click.Path(dir_okay=False), default=None),
        click.option("--context", "-c", default=None, help="The evidence as one string (split into K chunks)."),
        click.option("--context-file", type=click.Path(dir_okay=False), default=None),
        click.option("--passage-file", "passage_files", multiple=True, type=click.Path(dir_okay=False),
                     help="One retrieved passage per file; repeat for each passage (each is a chunk)."),
    ])(func)


STDIN = "-"  # a file option's name for standard input


def gather_input(example: str | None, question: str | None, question_file: str | None, context: str | None,
                 context_file: str | None, passage_files: tuple[str, ...], answer: str | None,
                 answer_file: str | None, stdin_carries: str | None = None) -> dict[str, Any]:
    """The request row: the options and files over a shipped example, or over a JSON object on
    standard input (read when no answer is given). A file named ``-`` is standard input, unless
    standard input is taken (``stdin_carries`` says by what: `stream`'s answer). Evidence given as options
    replaces the row's evidence whole (its context or passages), so the two never mix."""
    from ..inputs.files import load_example, read_json_stream
    from ..inputs.validate import check_object

    for name, text, path in (("question", question, question_file), ("context", context, context_file),
                             ("answer", answer, answer_file)):
        if text is not None and path:
            raise InputError(f"--{name} and --{name}-file both give the {name}: give one of them")
    json_on_stdin = not example and answer is None and answer_file is None
    _check_stdin_files(question_file, context_file, passage_files, answer_file,
                       stdin_carries or ("holds the request's JSON object when no --answer or --answer-file is given"
                                        if json_on_stdin else None))
    row: dict[str, Any] = {}
    if example:
        row = load_example(example)
    elif json_on_stdin:
        given = b"" if sys.stdin.isatty() else sys.stdin.buffer.read()
        if not given.strip():  # a terminal, or nothing piped (cron, CI, `ssh host cmd`)
            raise InputError("no answer given: use --answer/--answer-file, --example NAME, "
                             "or pipe a JSON object on stdin")
        row = read_json_stream(io.BytesIO(given))
        check_object(row)
    picks = {
        "question": question if question is not None else (_file_text(question_file) if question_file else None),
        "context": context if context is not None else (_file_text(context_file) if context_file else None),
        "passages": [_file_text(p) for p in passage_files] or None,
        "answer": answer if answer is not None else (_file_text(answer_file) if answer_file else None),
    }
    if picks["context"] is not None or picks["passages"] is not None:
        row = {key: value for key, value in row.items() if key not in ("context", "passages")}
    row.update({key: value for key, value in picks.items() if value is not None})
    return row


def _check_stdin_files(question_file: str | None, context_file: str | None, passage_files: tuple[str, ...],
                       answer_file: str | None, stdin_carries: str | None) -> None:
    """Refuse a file named ``-`` where standard input cannot be it: two of them, standard input
    that ``stdin_carries`` (what it holds) already, or a terminal."""
    named = [f"--{name}-file" for name, path in (("question", question_file), ("context", context_file),
                                                 ("answer", answer_file)) if path == STDIN]
    named += ["--passage-file"] * passage_files.count(STDIN)
    if len(named) > 1:
        raise InputError(f"{', '.join(named)} each name standard input (-), which only one of them can read: give "
                         "the others as files")
    if named and stdin_carries:
        raise InputError(f"{named[0]} - would read standard input, which {stdin_carries}: give the file's path")
    if named and sys.stdin.isatty():  # it would wait, unannounced, for text typed until Ctrl-D
        raise InputError(f"{named[0]} - reads standard input, which is a terminal here: pipe the file in "
                         "(< FILE) or give its path")


def _file_text(path: str) -> str:
    """The text of the file at ``path``, or of standard input where it is ``-``."""
    from ..inputs.files import decode, read_text

    return decode(sys.stdin.buffer.read(), "standard input") if path == STDIN else read_text(path)
