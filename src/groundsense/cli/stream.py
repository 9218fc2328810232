"""`groundsense stream`: check an answer while it is generated."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from ..config import DetectorConfig
from ..errors import InputError
from ..inputs.text import is_blank
from . import common
from .common import CONTEXT_SETTINGS, detector_options
from .inputs import evidence_options, gather_input

if TYPE_CHECKING:
    from ..result import SentenceResult


def _stdin_text() -> Iterator[str]:
    """Standard input's text as it arrives (not line by line: an LLM's output may pause
    mid-line), decoded as UTF-8 across read boundaries."""
    import codecs
    import os

    decoder = codecs.getincrementaldecoder("utf-8")()
    while data := os.read(sys.stdin.fileno(), 4096):
        try:
            yield decoder.decode(data)
        except UnicodeDecodeError as exc:
            raise InputError("standard input is not UTF-8 text; convert it, e.g. `iconv -f utf-16 -t utf-8`") from exc
    yield decoder.decode(b"", final=True)


def _replayed(answer: str, delay: float) -> Iterator[str]:
    """An example's answer word by word, ``delay`` seconds apart, as an LLM would emit it."""
    import time

    pieces = answer.split(" ")
    for i, piece in enumerate(pieces):
        if delay:
            time.sleep(delay)
        yield piece + (" " if i < len(pieces) - 1 else "")


@click.command(context_settings=CONTEXT_SETTINGS)
@evidence_options
@click.option("--example", default=None, metavar="NAME",
              help="Replay a shipped example's answer word by word instead of reading standard input; "
                   "other inputs given replace its fields.")
@click.option("--delay", type=click.FloatRange(min=0), default=0.05, show_default=True,
              help="With --example: seconds between words.")
@click.option("--json", "as_json", is_flag=True,
              help="Print NDJSON events, as POST /v1/detect/stream does: one per sentence, then the result.")
@common.fail_on_flag
@detector_options()
def stream(question: str | None, question_file: str | None, context: str | None, context_file: str | None,
           passage_files: tuple[str, ...], example: str | None, delay: float, as_json: bool, fail_on_flag: bool,
           **detector_options: Any) -> None:
    """Check an answer while it is generated: read it from standard input as it arrives and
    print each sentence's verdict as soon as the sentence ends.

    \b
      my-llm "Summarise the note" | groundsense stream --context-file note.txt
      groundsense stream --example passages-qa          # replays a shipped answer
    """
    from ..inputs.validate import check_stream_head
    from .render import render_header, render_summary, terminal

    console = terminal()
    if example:
        row = gather_input(example, question, question_file, context, context_file, passage_files, None, None)
        pieces = _replayed(row.pop("answer"), delay)
        row.pop("sentences", None)
    else:
        if sys.stdin.isatty():
            raise InputError("pipe the answer on standard input, or replay a shipped one with --example NAME")
        row = gather_input(None, question, question_file, context, context_file, passage_files, "", None,
                           stdin_carries="carries the answer as it is generated")
        del row["answer"]
        pieces = _stdin_text()
    head = check_stream_head(row)
    detection = common.make_detection(DetectorConfig(**{**detector_options, **head.options}))
    checking = detection.stream(**head.arguments)
    about: dict | None = None
    if not as_json:
        about = detection.describe(checking.chunks)
        render_header(about["scorer"], about["mode"], about["leave_one_out"], about["score_rule"], about["threshold"],
                      console)
    printed: list[SentenceResult] = []
    for piece in pieces:
        for sentence in checking.feed(piece):
            # A cascade's stream verifies a flagged sentence as it ends: its description names the verifier.
            _print_sentence(sentence, about, as_json, console)
            printed.append(sentence)
    if not example and is_blank(checking.text):
        raise InputError("standard input held no answer text: pipe the answer as it is generated")
    result = checking.close()
    # The rest; in the terminal also the printed sentences whose verdict close() changed: verified at the
    # close by a cascade, or (bf16) flagged otherwise once scored again (docs/streaming.md, "Precision").
    again = [] if as_json else [
        final for shown, final in zip(printed, result.sentences)
        if (final.flagged, final.verifier_score is None) != (shown.flagged, shown.verifier_score is None)]
    for sentence in again + result.sentences[len(printed):]:
        _print_sentence(sentence, result.cascade, as_json, console)
    if as_json:
        click.echo(json.dumps({"event": "result", "result": result.to_dict()}, ensure_ascii=False))
    else:
        render_summary(result, console)
    if fail_on_flag:
        common.exit_unless_cleared(result)


def _print_sentence(sentence: SentenceResult, cascade: dict | None, as_json: bool, console: Console) -> None:
    if as_json:
        click.echo(json.dumps({"event": "sentence", "sentence": sentence.to_dict()}, ensure_ascii=False))
    else:
        from .render import render_sentence

        render_sentence(sentence, cascade, console)
