"""Resumable feature extraction: run benchmark cases through the detector into a Parquet cache.

Layout: ``<cache>/<benchmark>/<scorer>__<mode>-k<K>-<hash>/`` holds ``config.json`` (scorer,
K, mode, leave-one-out kind, token caps, scorer parameters) and ``part-NNNNN.parquet`` files
(see :mod:`.store` for how they are written and resumed). One row per labelled sentence; a
case that raised gets one row with ``status="error"`` and its message.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from groundsense import Detector
from groundsense.config import DetectorConfig
from groundsense.detection import Outcome
from groundsense.features import FEATURES
from groundsense.result import DetectionResult, TokenRows

from ..data.cases import Case
from ..data.rows import case_row
from .store import (
    RunSummary,
    benchmark_of,
    case_columns,
    error_row,
    ordered,
    pending_cases,
    planned_case_ids,
    read_parts,
    record_plan,
    write_cases,
    write_json,
)

TWO_PASS_FEATURES = ["gap", "jsd_noctx", "surprisal", "n_tokens"]  # two-pass mode has no leave-one-out


@dataclass(frozen=True)
class ExtractionConfig:
    """What makes two extractions comparable: the detector's configuration (its scorer by
    the name it resolved to) and whether token rows were kept (:data:`TOKEN_COLUMNS`)."""

    detector: DetectorConfig
    token_rows: bool = False

    @classmethod
    def of(cls, detector: Detector, token_rows: bool = False) -> ExtractionConfig:
        return cls(detector.config, token_rows)

    def record(self) -> dict:
        """The settings that change features, as ``config.json`` holds them: the calibration
        and the device are left out, ``leave_one_out`` is null in two-pass mode, and the
        precision is the one the scorer ran: a made detector's config holds it, and a config
        built by hand must name it (``auto`` runs what the machine and environment say)."""
        d = self.detector
        if d.precision == "auto":
            raise ValueError("a feature cache's key names the precision that ran: build the ExtractionConfig from a "
                             "made detector (ExtractionConfig.of), or name the precision in its DetectorConfig")
        return {
            "scorer": d.scorer, "k": d.k, "mode": d.mode, "max_context_tokens": d.max_context_tokens,
            "max_answer_tokens": d.max_answer_tokens, "leave_one_out": d.leave_one_out if d.mode == "full" else None,
            "token_rows": self.token_rows, "precision": d.precision,
        }

    @property
    def key(self) -> str:
        """Folder name: readable scorer, mode (``full-masked`` for masked leave-one-out, then
        ``-bf16`` or ``-int8`` for a precision other than fp32) and K, plus a hash of
        :meth:`record`, and ``-tokens`` when token rows are kept. Exact leave-one-out, no token
        rows and fp32, the only kinds before the options existed, stay out of the hash, so that
        older caches keep their keys."""
        fields = self.record()
        masked = fields["leave_one_out"] == "masked"
        if not masked:
            del fields["leave_one_out"]
        if not self.token_rows:
            del fields["token_rows"]
        if fields["precision"] == "fp32":
            del fields["precision"]
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8]
        scorer = re.sub(r"[^A-Za-z0-9._-]+", "_", fields["scorer"])
        mode = "full-masked" if masked else fields["mode"]
        mode += f"-{fields['precision']}" if "precision" in fields else ""
        return f"{scorer}__{mode}-k{fields['k']}{'-tokens' if self.token_rows else ''}-{digest}"


def cache_folder(cache: str | Path, benchmark: str, config: ExtractionConfig) -> Path:
    return Path(cache) / benchmark / config.key


# Per-token list columns of a ``token_rows`` cache, one entry per token the sentence owns:
# its character span in the answer, log p with the full context and with none, the JSD of
# the no-context distribution against the full one, and for leave-one-out (full mode) log p
# and JSD without each chunk, flattened chunk-major ([K, n] -> K * n values).
TOKEN_COLUMNS = (
    "tok_start", "tok_end", "tok_logp_full", "tok_logp_noctx", "tok_jsd_noctx", "tok_logp_loo", "tok_jsd_loo",
)


def token_columns(tokens: TokenRows, sentence: int) -> dict:
    """The :data:`TOKEN_COLUMNS` of one sentence (float32, int32)."""
    mine = tokens.owner == sentence
    logp, jsd = tokens.logp[:, mine].astype(np.float32), tokens.jsd[:, mine].astype(np.float32)
    offsets = tokens.offsets[mine].astype(np.int32)
    return {
        "tok_start": offsets[:, 0], "tok_end": offsets[:, 1],
        "tok_logp_full": logp[0], "tok_logp_noctx": logp[1], "tok_jsd_noctx": jsd[1],
        "tok_logp_loo": logp[2:].ravel(), "tok_jsd_loo": jsd[2:].ravel(),
    }


def sentence_rows(case: Case, result: DetectionResult, seconds: float, token_rows: bool = False) -> list[dict]:
    """One row per labelled sentence: labels, the eight features, per-chunk lists, cost,
    and with ``token_rows`` the sentence's :data:`TOKEN_COLUMNS`."""
    tokens = result.tokens if token_rows else None
    assert tokens is not None or not token_rows, "a detector's result keeps its passes' token rows"
    cost = {
        "seconds": seconds,
        "tokens_processed": result.tokens_processed,
        "prompt_tokens": result.prompt_tokens,
        "n_chunks": len(result.chunks),
    }
    return [
        {
            **case_columns(case),
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
            **(token_columns(tokens, i) if tokens is not None else {}),
        }
        for i, (s, labelled) in enumerate(zip(result.sentences, case.sentences))
    ]


def write_config(folder: Path, config: ExtractionConfig, n_parameters: int) -> None:
    write_json(folder, {**config.record(), "n_parameters": n_parameters})


def extract(
    detector: Detector,
    cases: Sequence[Case],
    cache: str | Path,
    limit: int | None = None,
    batch_size: int = 10,
    progress: bool = True,
    token_rows: bool = False,
) -> RunSummary:
    """Extract features of ``cases`` (one benchmark) into the cache, skipping cached ones.

    Cases are taken in :func:`.store.ordered` order; ``limit`` keeps the first ``limit`` of
    them. ``token_rows`` also keeps each sentence's per-token scores, under its own key.
    """
    config = ExtractionConfig.of(detector, token_rows)
    folder = cache_folder(cache, benchmark_of(cases), config)
    write_config(folder, config, detector.scorer.n_parameters)
    asked = ordered(cases)[:limit]
    record_plan(folder, (c.id for c in asked))
    pending, skipped = pending_cases(asked, folder, None)
    case_rows = (_case_rows(case, outcome, seconds, token_rows)
                 for case, outcome, seconds in _timed(detector, pending, progress))
    written, errors = write_cases(folder, case_rows, batch_size)
    return RunSummary(folder, written=written, skipped=skipped, errors=errors)


@dataclass
class FeatureSet:
    """Everything cached for one benchmark under one configuration."""

    benchmark: str
    config: dict  # ExtractionConfig.record() plus the scorer's ``n_parameters``
    key: str  # the cache folder name
    rows: pd.DataFrame
    planned: set[str] | None = None  # the answers its extractions were asked for (None: not recorded)
    folder: Path | None = None  # where it is cached (None: built in memory)

    @property
    def answers(self) -> int:
        """Answers cached (scored or failed)."""
        return self.rows["case_id"].nunique()

    @property
    def missing(self) -> int:
        """Planned answers not cached yet: a run still going, or stopped."""
        return len(self.planned - set(self.rows["case_id"])) if self.planned is not None else 0

    @property
    def incomplete(self) -> bool:
        """Whether planned answers are missing. Partitions are drawn over the answers present,
        so an incomplete set's differ from the complete set's."""
        return self.missing > 0

    @property
    def full_exact(self) -> bool:
        """Full mode with exact leave-one-out, in fp32: the detector's own features (older
        caches record neither and are both)."""
        return self.full_exact_at("fp32")

    def full_exact_at(self, precision: str) -> bool:
        """Full mode with exact leave-one-out, scored in ``precision`` (older caches record none: fp32)."""
        return (self.config["mode"] == "full" and self.config.get("leave_one_out", "exact") == "exact"
                and self.config.get("precision", "fp32") == precision)

    @property
    def splits(self) -> list[str]:
        """The benchmark splits its answers are from (none where the rows do not record them)."""
        return sorted(self.rows["split"].dropna().unique()) if "split" in self.rows else []

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
            sets.append(FeatureSet(folder.parent.name, config, folder.name, read_parts(folder),
                                   planned_case_ids(folder), folder))
    return [s for s in sets if len(s.rows)]


def _case_rows(case: Case, outcome: Outcome, seconds: float, token_rows: bool) -> list[dict]:
    """The cache rows of one case: its error's, or one per labelled sentence."""
    if outcome.error is not None:
        return [error_row(case, outcome.error)]
    assert outcome.result is not None, "an outcome without an error has its result"
    return sentence_rows(case, outcome.result, seconds, token_rows)


def _timed(detector: Detector, cases: list[Case], progress: bool) -> Iterator[tuple[Case, Outcome, float]]:
    """``(case, outcome, seconds the detector spent on it)`` for each case, with a progress bar."""
    outcomes = detector.iter_detect([case_row(c) for c in cases], progress=progress)
    while True:
        start = time.perf_counter()
        outcome = next(outcomes, None)
        if outcome is None:
            return
        yield cases[outcome.index], outcome, time.perf_counter() - start
