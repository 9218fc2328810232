"""A case as a detector input row (the JSON that `groundsense detect` and `batch` read)."""

from __future__ import annotations

from .cases import Case


def case_row(case: Case, labels: bool = False) -> dict:
    """``{id, question, context | passages, answer, sentences}``; with ``labels``, also the
    unsupported sentences as ``labels`` spans and the case's ``source``: the form
    `groundsense calibrate` and `groundsense fit` read."""
    row: dict = {"id": case.id, "question": case.question}
    if case.passages is not None:
        row["passages"] = case.passages
    else:
        row["context"] = case.context
    row["answer"] = case.answer
    row["sentences"] = [[s.start, s.end] for s in case.sentences]
    if labels:
        row["labels"] = [{"start": s.start, "end": s.end} for s in case.sentences if s.unsupported]
        row["source"] = case.source_id
    return row
