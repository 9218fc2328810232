"""Resumable feature extraction: run benchmark cases through the detector into a Parquet cache.

Layout: ``<cache>/<benchmark>/<scorer>__<mode>-k<K>-<hash>/`` holds ``config.json`` (scorer,
K, mode, leave-one-out kind, token caps, scorer parameters) and ``part-NNNNN.parquet`` files, each written
atomically (temp file + rename) every ``batch_size`` cases. One row per labelled sentence;
a case that raised gets one row with ``status="error"`` and its message. A rerun skips every
case id already in a part, so a kill loses at most the unwritten batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from ..detector import Detector, Outcome
from ..features import FEATURES
from ..result import DetectionResult
from .cases import Case
from .rows import case_row

CASE_COLUMNS = ["case_id", "source_id", "task", "benchmark", "split"]
TWO_PASS_FEATURES = ["gap", "jsd_noctx", "surprisal", "n_tokens"]  # two-pass mode has no leave-one-out
# Stable Parquet types whichever rows a part holds (error rows lack most columns; a type may be all null).
_TYPES = {
    **dict.fromkeys(["sentence_index", "start", "end", "label", "tokens_processed", "prompt_tokens", "n_chunks"], "Int32"),
    **dict.fromkeys(["split", "type", "error"], "string"),
}


@dataclass(frozen=True)
class ExtractionConfig:
    """What makes two extractions comparable: the scorer and the detector's settings."""

    scorer: str
    k: int
    mode: str
    max_context_tokens: int
    max_answer_tokens: int
    leave_one_out: str | None = "exact"  # full mode: exact or masked; None in two-pass mode

    @classmethod
    def of(cls, detector: Detector) -> ExtractionConfig:
        return cls(detector.scorer.name, detector.k, detector.mode, detector.max_context_tokens,
                   detector.max_answer_tokens, detector.leave_one_out)

    @property
    def key(self) -> str:
        """Folder name: readable scorer, mode (``full-masked`` for masked leave-one-out) and K,
        plus a hash of the whole configuration. Exact leave-one-out, the only kind before
        masked mode existed, stays out of the hash, so that older caches keep their keys."""
        fields = asdict(self)
        if self.leave_one_out != "masked":
            del fields["leave_one_out"]
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8]
        scorer = re.sub(r"[^A-Za-z0-9._-]+", "_", self.scorer)
        mode = "full-masked" if self.leave_one_out == "masked" else self.mode
        return f"{scorer}__{mode}-k{self.k}-{digest}"


@dataclass
class ExtractionSummary:
    folder: Path
    written: int = 0
    skipped: int = 0  # already cached
    errors: int = 0


def ordered(cases: Sequence[Case]) -> list[Case]:
    """Cases sharing evidence next to each other (by source id, then id)."""
    return sorted(cases, key=lambda c: (c.source_id, c.id))


def cache_folder(cache: str | Path, benchmark: str, config: ExtractionConfig) -> Path:
    return Path(cache) / benchmark / config.key


def cached_case_ids(folder: Path) -> set[str]:
    """Ids of the cases (scored or errored) already written under ``folder``."""
    return {case_id for part in folder.glob("part-*.parquet") for case_id in pd.read_parquet(part, columns=["case_id"])["case_id"]}


def sentence_rows(case: Case, result: DetectionResult, seconds: float) -> list[dict]:
    """One row per labelled sentence: labels, the eight features, per-chunk lists, cost."""
    cost = {
        "seconds": seconds,
        "tokens_processed": result.tokens_processed,
        "prompt_tokens": result.prompt_tokens,
        "n_chunks": len(result.chunks),
    }
    return [
        {
            **_case_columns(case),
            "sentence_index": i,
            "sentence": s.text,
            "start": s.start,
            "end": s.end,
            "label": int(labelled.unsupported),
            "type": labelled.type,
            **{name: s.features[name] for name in FEATURES},
            "drops": s.drops,
            "jsds": s.jsds,
            "status": s.status,
            "error": None,
            **cost,
        }
        for i, (s, labelled) in enumerate(zip(result.sentences, case.sentences))
    ]


def error_row(case: Case, error: Exception) -> dict:
    return {**_case_columns(case), "status": "error", "error": f"{type(error).__name__}: {error}"}


def _case_columns(case: Case) -> dict:
    return {"case_id": case.id, "source_id": case.source_id, "task": case.task, "benchmark": case.benchmark, "split": case.split}


def write_part(folder: Path, rows: pd.DataFrame) -> Path:
    """Write ``rows`` as the next part file, atomically."""
    numbers = [int(p.stem.split("-")[1]) for p in folder.glob("part-*.parquet")]
    path = folder / f"part-{max(numbers, default=-1) + 1:05d}.parquet"
    tmp = path.with_suffix(".tmp")
    rows.astype({c: t for c, t in _TYPES.items() if c in rows.columns}).to_parquet(tmp, index=False, compression="zstd")
    os.replace(tmp, path)
    return path


def write_config(folder: Path, config: ExtractionConfig, n_parameters: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "config.json.tmp"
    tmp.write_text(json.dumps({**asdict(config), "n_parameters": n_parameters}, indent=2) + "\n")
    os.replace(tmp, folder / "config.json")


def extract(
    detector: Detector,
    cases: Sequence[Case],
    cache: str | Path,
    limit: int | None = None,
    batch_size: int = 10,
    progress: bool = True,
) -> ExtractionSummary:
    """Extract features of ``cases`` (one benchmark) into the cache, skipping cached ones.

    Cases are taken in :func:`ordered` order; ``limit`` keeps the first ``limit`` of them.
    """
    benchmarks = {c.benchmark for c in cases}
    if len(benchmarks) != 1:
        raise ValueError(f"extract the cases of one benchmark at a time, not {sorted(benchmarks) or 'none'}")
    selected = ordered(cases)[:limit]
    config = ExtractionConfig.of(detector)
    folder = cache_folder(cache, benchmarks.pop(), config)
    write_config(folder, config, detector.scorer.n_parameters)
    done = cached_case_ids(folder)
    pending = [c for c in selected if c.id not in done]
    summary = ExtractionSummary(folder, skipped=len(selected) - len(pending))
    rows: list[dict] = []
    try:
        for case, outcome, seconds in _timed(detector, pending, progress):
            if outcome.error is not None:
                rows.append(error_row(case, outcome.error))
                summary.errors += 1
            else:
                rows.extend(sentence_rows(case, outcome.result, seconds))
            summary.written += 1
            if summary.written % batch_size == 0:
                write_part(folder, pd.DataFrame(rows))
                rows = []
    finally:  # an interrupt keeps the finished cases
        if rows:
            write_part(folder, pd.DataFrame(rows))
    compact(folder)
    return summary


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


@dataclass
class FeatureSet:
    """Everything cached for one benchmark under one configuration."""

    benchmark: str
    config: dict  # ExtractionConfig fields plus the scorer's ``n_parameters``
    key: str  # the cache folder name
    rows: pd.DataFrame

    @property
    def errors(self) -> pd.DataFrame:
        return self.rows.loc[self.rows["status"] == "error", ["case_id", "error"]].reset_index(drop=True)

    @property
    def sentences(self) -> pd.DataFrame:
        """Sentence rows of the cases that ran (scored or not)."""
        return self.rows[self.rows["status"] != "error"].reset_index(drop=True)

    @property
    def table(self) -> pd.DataFrame:
        """The analysis table: scored sentences with the mode's features finite, ``label`` as int."""
        rows = self.sentences
        features = FEATURES if self.config["mode"] == "full" else TWO_PASS_FEATURES
        keep = (rows["status"] == "scored") & rows[list(features)].notna().all(axis=1)
        return rows[keep].astype({"label": int, "n_tokens": float}).reset_index(drop=True)


def load_cache(cache: str | Path, scorer: str | None = None) -> list[FeatureSet]:
    """Every cached feature set under ``cache`` (optionally of one scorer), by benchmark and key."""
    sets = []
    for config_file in sorted(Path(cache).glob("*/*/config.json")):
        config = json.loads(config_file.read_text())
        folder = config_file.parent
        if scorer is None or config["scorer"] == scorer:
            sets.append(FeatureSet(folder.parent.name, config, folder.name, read_parts(folder)))
    return [s for s in sets if len(s.rows)]


def _timed(detector: Detector, cases: list[Case], progress: bool) -> Iterator[tuple[Case, Outcome, float]]:
    """``(case, outcome, seconds the detector spent on it)`` for each case, with a progress bar."""
    outcomes = detector.iter_detect([case_row(c) for c in cases], progress=progress)
    while True:
        start = time.perf_counter()
        outcome = next(outcomes, None)
        if outcome is None:
            return
        yield cases[outcome.index], outcome, time.perf_counter() - start
