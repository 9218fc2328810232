"""Resumable JSONL batch scoring.

One output record per input line: the detection (``to_dict()``) or an ``error`` object,
each with the row's ``id`` and its 1-based input ``line``. Rows that share their evidence
are scored one after another, so the scorer encodes that evidence once: records come in
that grouped order (groups in order of first appearance, rows within a group in input
order), which depends only on the input. A rerun skips the lines already written (after
removing a record cut off by a kill), so a killed and resumed run writes the same file as
an uninterrupted one. Resuming assumes the same input.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .detector import Detector
from .errors import InputError
from .inputs import decode


@dataclass
class BatchSummary:
    written: int = 0
    skipped: int = 0  # already in the output from an earlier run
    errors: int = 0


def read_rows(path: Path) -> Iterator[tuple[int, dict | InputError]]:
    """``(line number, row or the error that line raised)`` for each non-blank line."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(decode(raw, f"{path} line {number}"))
                if not isinstance(row, dict):
                    raise InputError(f"line {number} is not a JSON object")
                yield number, row
            except json.JSONDecodeError as exc:
                yield number, InputError(f"line {number} is not valid JSON: {exc.msg}")
            except InputError as exc:
                yield number, exc


def done_lines(out: Path) -> set[int]:
    """Input lines already in ``out``; a final record cut off mid-write is removed."""
    if not out.exists():
        return set()
    data = out.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    if len(complete) != len(data):
        with out.open("r+b") as handle:
            handle.truncate(len(complete))
    return {json.loads(line)["line"] for line in complete.splitlines() if line.strip()}


def by_evidence(rows: list[tuple[int, dict | InputError]]) -> list[tuple[int, dict | InputError]]:
    """Rows grouped by identical evidence, groups in order of first appearance."""
    groups: dict[str, list] = {}
    for number, row in rows:
        evidence = row.get("passages", row.get("context")) if isinstance(row, dict) else None
        key = json.dumps(evidence, sort_keys=True) if evidence is not None else f"line {number}"
        groups.setdefault(key, []).append((number, row))
    return [item for group in groups.values() for item in group]


def run_batch(detector: Detector, source: Path, out: Path, progress: bool = True) -> BatchSummary:
    summary = BatchSummary()
    done = done_lines(out)
    pending = []
    for number, row in by_evidence(list(read_rows(source))):  # the order of the whole input
        if number in done:
            summary.skipped += 1
        else:
            pending.append((number, row))
    rows = [row if isinstance(row, dict) else {} for _, row in pending]
    outcomes = detector.iter_detect(rows, progress=progress)
    with out.open("a", encoding="utf-8") as sink:
        for (number, row), outcome in zip(pending, outcomes):
            record: dict = {"id": row.get("id") if isinstance(row, dict) else None, "line": number}
            error = row if isinstance(row, InputError) else outcome.error
            if error is not None:
                record["error"] = {"type": type(error).__name__, "message": str(error)}
                summary.errors += 1
            else:
                record.update(outcome.result.to_dict())
            sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            sink.flush()
            summary.written += 1
    return summary
