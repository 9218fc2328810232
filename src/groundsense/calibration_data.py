"""Turn a batch run over calibration answers into a :class:`Calibration`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .batch import read_rows
from .calibration import Calibration, fit_calibration
from .errors import InputError
from .features import FEATURES


def _overlaps(start: int, end: int, spans: list[dict]) -> bool:
    return any(start < int(s["end"]) and int(s["start"]) < end for s in spans)


@dataclass(frozen=True)
class BatchSentences:
    """The scored sentences of a batch run over calibration answers: each feature as an array
    over sentences, each sentence's answer (input line) and chunk count, and its label (None
    when the rows carry none)."""

    features: dict[str, np.ndarray]
    answers: np.ndarray
    chunk_counts: np.ndarray
    labels: np.ndarray | None
    n_answers: int  # answers scored, those without a scored sentence included


def read_batch(source: Path, features_path: Path) -> BatchSentences:
    """The sentences of ``features_path``, the batch output over ``source`` (answers that
    failed to score are left out; labels come from the source rows' ``labels`` spans)."""
    rows = {number: row for number, row in read_rows(source) if isinstance(row, dict)}
    has_labels = {number: "labels" in row for number, row in rows.items()}
    if any(has_labels.values()) and not all(has_labels.values()):
        raise InputError("some calibration rows have 'labels' and some do not: label all rows or none")
    labelled = bool(has_labels) and all(has_labels.values())
    values: dict[str, list[float]] = {name: [] for name in FEATURES}
    labels: list[int] = []
    answer_of: list[int] = []  # each sentence's input line
    chunks_of: list[int] = []
    answers = 0
    for line in features_path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "error" in record:
            continue
        answers += 1
        for sentence in record["sentences"]:
            if sentence["status"] != "scored":
                continue
            for name in FEATURES:
                value = sentence["features"][name]
                values[name].append(np.nan if value is None else value)
            answer_of.append(record["line"])
            chunks_of.append(len(record["chunks"]))
            if labelled:
                labels.append(int(_overlaps(sentence["start"], sentence["end"], rows[record["line"]]["labels"])))
    return BatchSentences({name: np.array(v, dtype=float) for name, v in values.items()}, np.array(answer_of),
                          np.array(chunks_of, dtype=int), np.array(labels) if labelled else None, answers)


def fit_from_batch(
    source: Path, features_path: Path, scorer: str, k: int, leave_one_out: str = "exact", target_recall: float | None = None,
    target_precision: float | None = None, flag_rate: float = 0.1,
) -> Calibration:
    batch = read_batch(source, features_path)
    return fit_calibration(
        batch.features, scorer, k, labels=batch.labels, target_recall=target_recall,
        target_precision=target_precision, flag_rate=flag_rate, answers=batch.answers,
        made_with={"source": source.name, "answers": batch.n_answers, "labelled": batch.labels is not None,
                   "chunk_counts": sorted({int(n) for n in batch.chunk_counts}), "leave_one_out": leave_one_out},
    )
