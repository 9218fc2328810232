"""Turn a batch run over calibration answers into sentence features and labels, and those into a
:class:`Calibration`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from ..calibration.calibration import Calibration, fit_calibration
from ..config import DetectorConfig
from ..errors import InputError
from ..features import SENTENCE_VALUES
from ..inputs.validate import check_labels
from ..rows.batch import read_rows


def _overlaps(start: int, end: int, spans: list[dict]) -> bool:
    return any(start < int(s["end"]) and int(s["start"]) < end for s in spans)


@dataclass
class ScoredRows:
    """The scored sentences of a batch run over calibration answers: features (arrays over
    sentences; NaN where missing), labels (None when the rows carry none), each sentence's
    answer (input line), chunk count and cross-validation group (the row's ``source``, else its
    answer), the provenance a calibration file records, and each sentence's verifier score (a
    cascade's run; NaN where it has none)."""

    features: dict[str, np.ndarray]
    labels: np.ndarray | None
    answers: np.ndarray
    groups: np.ndarray
    made_with: dict
    chunk_counts: np.ndarray
    verifier_scores: np.ndarray


def labelled_rows(source: Path) -> tuple[dict[int, dict], bool]:
    """``source``'s rows by line, and whether they carry labels (all of them, or none), each
    row's labels checked (:func:`~groundsense.inputs.validate.check_labels`): read before any
    scoring, so that a bad label is refused before the scorer loads."""
    rows = {number: row for number, row in read_rows(source) if isinstance(row, dict)}
    has_labels = {number: "labels" in row for number, row in rows.items()}
    if any(has_labels.values()) and not all(has_labels.values()):
        raise InputError("some calibration rows have 'labels' and some do not: label all rows or none")
    for number, row in rows.items():
        if "labels" in row and isinstance(row.get("answer"), str):
            try:
                check_labels(row["labels"], row["answer"])
            except InputError as exc:
                raise InputError(f"{source} line {number}: {exc}") from None
    return rows, bool(has_labels) and all(has_labels.values())


def source_group(line: int, row: dict) -> str:
    """The cross-validation group of the row on ``line``: its ``source``, else (none, or null) the row alone."""
    return f"source {row['source']}" if row.get("source") is not None else f"line {line}"


# The settings that shape a feature's value beyond the scorer's (a record's field, and its option).
SHAPING = (("k", "-k"), ("max_context_tokens", "--max-context-tokens"), ("max_answer_tokens", "--max-answer-tokens"))


def check_cache(source: Path, features: Path, config: DetectorConfig, verifier: str | None = None) -> None:
    """Refuse a features file (``calibrate`` and ``fit`` resume one) that another run made: a
    record of another row of ``source`` than its line holds now (the rows were edited or
    reordered), or scored by another scorer, precision or leave-one-out than this run's
    ``config`` (the detector's, resolved), with another chunk count (a row's ``options.k``, else
    ``config.k``; passages are chunks as given) or token budget, or (a fused cascade's run,
    ``verifier``) judged by another judge, or none. A file written before records kept their chunk
    count and budgets is read with a warning that these cannot be checked."""
    if not features.exists():
        return
    rows = dict(read_rows(source))
    again = f"move {features} away (or pass --features elsewhere) to score the rows again"
    unchecked = False
    for text in features.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(text)
        except ValueError:
            continue  # a record cut off by a kill: the batch drops it
        row = rows.get(record.get("line"))
        answer = row.get("answer") if isinstance(row, dict) else None
        if row is None or (isinstance(row, dict) and record.get("id") != row.get("id")) or any(
                not isinstance(answer, str) or answer[s["start"] : s["end"]] != s["text"]
                for s in record.get("sentences", ())):
            raise InputError(f"{features} line {record.get('line')} was scored from another row than {source} "
                             f"holds there now (were the rows edited or reordered?): {again}")
        if "error" in record:
            continue
        made = (record.get("scorer"), record.get("precision", "fp32"), record.get("leave_one_out", "exact"))
        if made != (config.scorer, config.precision, config.leave_one_out):
            raise InputError(f"{features} holds answers scored by {made[0]} at {made[1]} (leave-one-out {made[2]}), "
                             f"and this run scores by {config.scorer} at {config.precision} (leave-one-out "
                             f"{config.leave_one_out}): {again}")
        judged = (record.get("cascade") or {}).get("verifier")
        if verifier is not None and judged != verifier:
            raise InputError(f"{features} holds answers judged by {judged or 'no verifier'}, and this run's judge is "
                             f"{verifier}: {again}")
        if not all(field in record for field, _ in SHAPING):
            unchecked = True
            continue
        asked = {field: getattr(config, field) for field, _ in SHAPING}
        options = row.get("options") if isinstance(row, dict) else None  # a row that failed has an error record
        asked["k"] = None if record["k"] is None else (options or {}).get("k", config.k)
        for field, option in SHAPING:
            if record[field] != asked[field]:
                raise InputError(f"{features} holds answers scored with {option} {record[field]}, and this run "
                                 f"scores with {option} {asked[field]}: pass {option} {record[field]} to reuse "
                                 f"them, or {again}")
    if unchecked:
        settings = ", ".join(f"{option} {getattr(config, field)}" for field, option in SHAPING)
        click.echo(f"warning: {features} was written before features files recorded the chunk count and token "
                   f"budgets, so they cannot be checked against this run's ({settings}): if it was scored with "
                   f"others, {again}", err=True)


def read_scored(source: Path, features_path: Path, leave_one_out: str = "exact") -> ScoredRows:
    """``features_path`` (the batch output of ``source``) as :class:`ScoredRows`; rows that failed
    to score are left out, counted in ``made_with`` and named in a warning."""
    rows, labelled = labelled_rows(source)
    values: dict[str, list[float]] = {name: [] for name in SENTENCE_VALUES}
    labels: list[int] = []
    answer_of: list[int] = []  # each sentence's input line
    groups: list[str] = []
    chunks_of: list[int] = []  # each sentence's answer's chunk count
    verifier_scores: list[float] = []
    answers, chunk_counts, failed = 0, set(), []
    for line in features_path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "error" in record:
            failed.append(record["line"])
            continue
        answers += 1
        chunk_counts.add(len(record["chunks"]))
        row = rows[record["line"]]
        for sentence in record["sentences"]:
            if sentence["status"] != "scored":
                continue
            for name in values:
                value = sentence["features"].get(name)  # (older batch output lacks the signed and lexical values)
                values[name].append(np.nan if value is None else value)
            verifier_score = sentence.get("verifier_score")
            verifier_scores.append(np.nan if verifier_score is None else verifier_score)
            answer_of.append(record["line"])
            chunks_of.append(len(record["chunks"]))
            groups.append(source_group(record["line"], row))
            if labelled:
                labels.append(int(_overlaps(sentence["start"], sentence["end"], row["labels"])))
    if failed:
        counted = "1 row" if len(failed) == 1 else f"{len(failed)} rows"
        click.echo(f"warning: {counted} of {source} failed to score and {'is' if len(failed) == 1 else 'are'} left "
                   f"out (line{'s' * (len(failed) > 1)} {', '.join(map(str, sorted(failed)))}; the errors are in "
                   f"{features_path})", err=True)
    return ScoredRows(
        {name: np.array(v, dtype=float) for name, v in values.items()}, np.array(labels) if labelled else None,
        np.array(answer_of), np.array(groups, dtype=object),
        {"source": source.name, "answers": answers, "errors": len(failed), "labelled": labelled,
         "chunk_counts": sorted(chunk_counts), "leave_one_out": leave_one_out},
        np.array(chunks_of, dtype=int), np.array(verifier_scores, dtype=float),
    )


def fit_from_batch(
    source: Path, features_path: Path, scorer: str, k: int, leave_one_out: str = "exact",
    target_recall: float | None = None, target_precision: float | None = None, flag_rate: float = 0.1,
) -> Calibration:
    scored = read_scored(source, features_path, leave_one_out)
    return fit_calibration(
        scored.features, scorer, k, labels=scored.labels, target_recall=target_recall,
        target_precision=target_precision, flag_rate=flag_rate, answers=scored.answers, made_with=scored.made_with,
    )
