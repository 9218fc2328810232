"""Resumable JSONL batch scoring.

One output record per input line: the detection (``to_dict()``) or an ``error`` object,
each with the row's ``id`` and its 1-based input ``line``. Rows that share their evidence
are scored one after another, so the scorer encodes that evidence once: records come in
that grouped order (groups in order of first appearance, rows within a group in input
order), which depends only on the input. A rerun skips the lines already written (after
removing a record cut off by a kill), so a killed and resumed run writes the same file as
an uninterrupted one. Resuming assumes the same input.

Each row's record is :func:`row_runner.run_row`'s, as the service's and the Ray engine's are;
internal errors are shown in full (the file should say what went wrong). The pieces below
(:func:`parse_line`, :func:`evidence_key`, :func:`score_rows`) are shared with the Ray engine
(:mod:`groundsense.scale`), so both write the same records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..detection import Detection, as_detection
from ..errors import InputError
from ..inputs.files import decode, parse_json
from ..inputs.validate import check_object
from .runner import error_record, run_row

Row = dict | InputError  # a parsed input row, or the error its line raised


@dataclass
class BatchSummary:
    written: int = 0
    skipped: int = 0  # already in the output from an earlier run
    errors: int = 0  # of the records written
    skipped_errors: int = 0  # of the records already there


def parse_line(number: int, raw: bytes, source: str | Path) -> Row:
    """One JSONL line of ``source`` as a row, or the :class:`InputError` it raises."""
    try:
        row = parse_json(decode(raw, f"{source} line {number}"), f"line {number}")
    except InputError as exc:
        return exc
    try:
        check_object(row)
    except InputError as exc:
        return InputError(f"line {number}: {exc}")
    return row


def read_rows(path: Path) -> Iterator[tuple[int, Row]]:
    """``(line number, row or the error that line raised)`` for each non-blank line."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield number, parse_line(number, raw.removesuffix(b"\n"), path)  # as the Ray engine reads it


RECORD_START = b'{"id": '  # how every batch record's line begins (its id first)


def done_lines(out: Path) -> dict[int, bool]:
    """Input lines already in ``out``, each with whether its record is an error record; a final
    record cut off mid-write is removed. A complete line that is not a batch record stops the
    run, naming the line, and so does an unfinished last line that does not begin as a record
    does (a file that is no batch output).
    A pipe or a device (``/dev/stdout``) is written, never read: it holds no earlier run."""
    if not out.is_file():
        return {}
    data = out.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    done = dict(
        _record_line(out, number, line) for number, line in enumerate(complete.splitlines(), start=1) if line.strip()
    )
    if len(complete) != len(data):
        if not _cut_off_record(data[len(complete) :]):
            raise _not_a_record(out, complete.count(b"\n") + 1)
        with out.open("r+b") as handle:
            handle.truncate(len(complete))
    return done


def _cut_off_record(tail: bytes) -> bool:
    """Whether an unfinished last line can be a record cut off mid-write: it begins as a record
    does, and is not a whole JSON value other than a record (a row written without its newline)."""
    if not (tail.startswith(RECORD_START) or RECORD_START.startswith(tail)):
        return False
    try:
        whole = json.loads(tail)
    except ValueError:
        return True
    return isinstance(whole, dict) and isinstance(whole.get("line"), int)


def _record_line(out: Path, number: int, line: bytes) -> tuple[int, bool]:
    """The input line a record of ``out`` answers, and whether the record is an error record."""
    try:
        record = json.loads(line)
        if isinstance(record, dict) and isinstance(record.get("line"), int):
            return record["line"], record.get("error") is not None
    except ValueError:
        pass
    raise _not_a_record(out, number)


def _not_a_record(out: Path, number: int) -> InputError:
    return InputError(
        f"{out} line {number} is not a batch record (it was changed by something else, or the file is no batch "
        "output): to resume, delete that line and the lines after it, or write to a new output file"
    )


def evidence_key(number: int | None, row: Row) -> str:
    """Equal for rows with identical evidence; a row without evidence gets its own key."""
    evidence = None
    if isinstance(row, dict):
        evidence = row.get("passages") if row.get("passages") is not None else row.get("context")
    return json.dumps(evidence, sort_keys=True) if evidence is not None else f"line {number}"


def by_evidence(rows: list[tuple[int, Row]]) -> list[tuple[int, Row]]:
    """Rows grouped by identical evidence, groups in order of first appearance."""
    groups: dict[str, list] = {}
    for number, row in rows:
        groups.setdefault(evidence_key(number, row), []).append((number, row))
    return [item for group in groups.values() for item in group]


def score_rows(detection: Detection, rows: Iterable[tuple[int | None, Row]], progress: bool = False) -> Iterator[dict]:
    """One batch record per ``(line, row)``, in order: :func:`row_runner.run_row`'s record (its
    ``id`` first) with the ``line`` after the ``id``; a row its line could not give (bad JSON)
    gets its error record. ``detection``: any :class:`Detection` (a detector, a cascade)."""
    from ..progress import track

    as_detection(detection)
    rows = list(rows)
    for number, row in track(rows, "Scoring answers", enabled=progress):
        record = error_record(None, row) if isinstance(row, InputError) else run_row(detection, row)
        yield {"id": record["id"], "line": number, **record}


def run_batch(detection: Detection | Callable[[], Detection], source: Path, out: Path | TextIO,
              progress: bool = True) -> BatchSummary:
    """Score ``source`` into ``out``: a file, resumed, or an open stream (standard output),
    written from the first line. ``detection`` may be a function that makes it: it is then
    called only once the input and the output have been read and a line is left to score, so
    that a damaged output or a finished run answers before a scorer loads."""
    summary = BatchSummary()
    done = done_lines(out) if isinstance(out, Path) else {}
    pending = []
    for number, row in by_evidence(list(read_rows(source))):  # the order of the whole input
        if number in done:
            summary.skipped += 1
            summary.skipped_errors += done[number]
        else:
            pending.append((number, row))
    if pending and callable(detection) and not isinstance(detection, Detection):
        detection = detection()  # before the output is opened: a detection that cannot be made leaves none
    # a file is created even when nothing is left to score; a stream is left open
    with out.open("a", encoding="utf-8") if isinstance(out, Path) else nullcontext(out) as sink:
        for record in score_rows(as_detection(detection), pending, progress) if pending else ():
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            sink.flush()
            summary.written += 1
            summary.errors += "error" in record
    return summary
