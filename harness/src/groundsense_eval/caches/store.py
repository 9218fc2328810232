"""Resumable Parquet caches of per-sentence rows, one folder per benchmark and configuration.

Shared by the feature cache (:mod:`.extract`) and the verifier cache (:mod:`.verify`): a
folder holds ``config.json`` and ``part-NNNNN.parquet`` files, each written atomically
(temp file + rename) every ``batch_size`` cases. One row per labelled sentence; a case that
raised gets one row with ``status="error"`` and its message. A rerun skips every case id
already in a part, so a kill loses at most the unwritten batch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..data.cases import Case

CASE_COLUMNS = ["case_id", "source_id", "task", "benchmark", "split"]
# Stable Parquet types whichever rows a part holds (error rows lack most columns; a type may be all null).
_TYPES = {
    **dict.fromkeys(
        ["sentence_index", "start", "end", "label", "tokens_processed", "prompt_tokens", "n_chunks", "support_chunk"],
        "Int32",
    ),
    **dict.fromkeys(["split", "type", "error"], "string"),
}


@dataclass
class RunSummary:
    """What one run did to a cache folder, in cases."""

    folder: Path
    written: int = 0
    skipped: int = 0  # already cached
    errors: int = 0


def ordered(cases: Sequence[Case]) -> list[Case]:
    """Cases sharing evidence next to each other (by source id, then id)."""
    return sorted(cases, key=lambda c: (c.source_id, c.id))


def benchmark_of(cases: Sequence[Case]) -> str:
    """The one benchmark ``cases`` come from (a cache folder holds one benchmark)."""
    benchmarks = {c.benchmark for c in cases}
    if len(benchmarks) != 1:
        raise ValueError(f"score the cases of one benchmark at a time, not {sorted(benchmarks) or 'none'}")
    return benchmarks.pop()


def pending_cases(cases: Sequence[Case], folder: Path, limit: int | None) -> tuple[list[Case], int]:
    """The first ``limit`` cases in :func:`ordered` order that ``folder`` does not hold yet,
    and how many of those first ``limit`` it already holds."""
    selected = ordered(cases)[:limit]
    done = cached_case_ids(folder)
    pending = [c for c in selected if c.id not in done]
    return pending, len(selected) - len(pending)


PLAN = "planned.parquet"


def record_plan(folder: Path, case_ids: Iterable[str]) -> None:
    """Add ``case_ids``, the answers a run into ``folder`` was asked to cover, to its plan
    (``planned.parquet``): the union of every ask, so neither a ``--limit`` trial nor another
    sample scored into the same folder hides answers still missing."""
    planned = sorted(set(case_ids) | (planned_case_ids(folder) or set()))
    write_table(folder / PLAN, pd.DataFrame({"case_id": planned}))


def planned_case_ids(folder: Path) -> set[str] | None:
    """The answers :func:`record_plan` recorded for ``folder``; None for a cache written
    before plans were recorded."""
    path = folder / PLAN
    return set(pd.read_parquet(path)["case_id"]) if path.exists() else None


def cached_case_ids(folder: Path) -> set[str]:
    """Ids of the cases (scored or errored) already written under ``folder``."""
    return {case_id for part in folder.glob("part-*.parquet")
            for case_id in pd.read_parquet(part, columns=["case_id"])["case_id"]}


def case_columns(case: Case) -> dict:
    return {"case_id": case.id, "source_id": case.source_id, "task": case.task, "benchmark": case.benchmark,
            "split": case.split}


def error_row(case: Case, error: Exception) -> dict:
    return {**case_columns(case), "status": "error", "error": f"{type(error).__name__}: {error}"}


def write_json(folder: Path, config: dict) -> None:
    """Write ``config.json`` in ``folder`` (created if needed), atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    os.replace(tmp, folder / "config.json")


def write_part(folder: Path, rows: pd.DataFrame) -> Path:
    """Write ``rows`` as the next part file, atomically."""
    numbers = [int(p.stem.split("-")[1]) for p in folder.glob("part-*.parquet")]
    return write_table(folder / f"part-{max(numbers, default=-1) + 1:05d}.parquet", rows)


def write_table(path: Path, rows: pd.DataFrame) -> Path:
    """Write ``rows`` to ``path`` (replacing it), atomically, with the cache's stable column types."""
    tmp = path.with_suffix(".tmp")
    rows.astype({c: t for c, t in _TYPES.items() if c in rows.columns}).to_parquet(tmp, index=False, compression="zstd")
    os.replace(tmp, path)
    return path


def write_cases(folder: Path, case_rows: Iterable[list[dict]], batch_size: int = 10) -> tuple[int, int]:
    """Write each case's rows as they come, a part every ``batch_size`` cases (an interrupt
    writes the finished ones first), then :func:`compact`. Returns (cases, failed cases)."""
    written = errors = 0
    rows: list[dict] = []
    try:
        for case in case_rows:
            rows.extend(case)
            written += 1
            errors += case[0].get("status") == "error"
            if written % batch_size == 0:
                write_part(folder, pd.DataFrame(rows))
                rows = []
    finally:  # an interrupt keeps the finished cases
        if rows:
            write_part(folder, pd.DataFrame(rows))
    compact(folder)
    return written, errors


def compact(folder: Path) -> None:
    """Merge the part files into one (a crash midway leaves duplicates that readers drop)."""
    parts = sorted(folder.glob("part-*.parquet"))
    if len(parts) > 1:
        write_part(folder, read_parts(folder))
        for part in parts:
            part.unlink()


def read_parts(folder: Path) -> pd.DataFrame:
    """All rows cached under ``folder``, duplicates from an interrupted compaction dropped."""
    parts = sorted(folder.glob("part-*.parquet"))
    if not parts:
        return pd.DataFrame(columns=CASE_COLUMNS)
    table = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    return table.drop_duplicates(subset=["case_id", "sentence_index"], keep="last", ignore_index=True)
