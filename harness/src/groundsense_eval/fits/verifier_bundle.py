"""A verifier bundle: the input ids a trained verifier reads, precomputed, so that a machine without
the benchmark data (a lent GPU) can train and score (docs/detector-selection.md, "A trained
verifier"; CONTRIBUTING.md, "On a lent GPU machine").

A bundle is a folder: ``bundle.json`` (the training data's identity, the base whose tokenizer made
the ids, the feature sets the evaluation rows come from, counts), ``training.parquet`` (every row
the hold-outs train on, indexed by its position in the training data, with its ``benchmark``,
``task``, ``label`` and ``ids``) and ``evaluation-<benchmark>.parquet`` (each scored sentence of the
benchmark's feature set with its ``case_id``, ``source_id``, ``task``, ``sentence_index``,
``label``, its reports' ``partition`` and ``ids``). Ids are stored as lists of uint16.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from groundsense.errors import InputError
from groundsense.inputs import Tokenizer

from ..caches.extract import FeatureSet
from ..data.cases import Case
from ..statistics.benchmark_result import partitioned
from .verifier import TrainedVerifier
from .verifier_inputs import sentence_inputs
from .verifier_training import row_inputs, training_cases, training_rows

MANIFEST, TRAINING = "bundle.json", "training.parquet"
FORMAT = 1
EVALUATION_COLUMNS = ["benchmark", "task", "case_id", "source_id", "sentence_index", "label", "partition"]
WIDEST = "tofueval"  # the hold-out of HOLD_OUTS whose benchmarks hold every other one's


def evaluation_file(benchmark: str) -> str:
    return f"evaluation-{benchmark}.parquet"


def write_ids(path: Path, frame: pd.DataFrame, ids: Iterable[Iterable[int]]) -> None:
    """``frame`` (its index kept) with an ``ids`` column of uint16 lists, zstd-compressed."""
    table = pa.Table.from_pandas(frame, preserve_index=True)
    table = table.append_column("ids", pa.array(list(ids), type=pa.list_(pa.uint16())))
    pq.write_table(table, path, compression="zstd", compression_level=19)


def read_ids(path: Path) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """The rows of a bundle file without their ids, and each row's ids (int64)."""
    table = pq.read_table(path)
    column = table.column("ids").combine_chunks()
    flat = column.values.to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = column.offsets.to_numpy()
    ids = [flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    return table.drop_columns(["ids"]).to_pandas(), ids


def build_training(data: pd.DataFrame, tokenizer: Tokenizer, data_dir: Path | None = None,
                   limit: int | None = None) -> tuple[pd.DataFrame, list[list[int]]]:
    """The rows of the widest hold-out, which every other one's lie within (with ``limit``, its
    seeded draw of that many), and their input ids."""
    rows = training_rows(data, WIDEST, limit)
    return rows, row_inputs(rows, training_cases(rows, data_dir), tokenizer)


def evaluation_rows(features: FeatureSet, answers: int | None = None, seed: int = 0) -> pd.DataFrame:
    """The scored sentences of ``features`` (its ``table``, as every report reads it) with the
    dev/test partition the reports draw over them all
    (:func:`~groundsense_eval.statistics.benchmark_result.partitioned`), by answer; with
    ``answers``, those of the first that many answers."""
    dev, test = partitioned(features.table, seed)
    rows = pd.concat([dev, test]).assign(benchmark=features.benchmark)[EVALUATION_COLUMNS]
    rows = rows.sort_values(["case_id", "sentence_index"], kind="stable").reset_index(drop=True)
    return rows if answers is None else rows[rows["case_id"].isin(sorted(set(rows["case_id"]))[:answers])]


def evaluation_ids(rows: pd.DataFrame, cases: Iterable[Case], tokenizer: Tokenizer) -> list[list[int]]:
    """The input ids of ``rows`` (:func:`evaluation_rows`) over their answers, ``cases``."""
    by_case = {case.id: case for case in cases}
    missing = set(rows["case_id"]) - set(by_case)
    if missing:
        raise InputError(f"{len(missing)} answers of the evaluation rows are not in the data (e.g. {min(missing)})")
    inputs: dict[str, list[list[int]]] = {}
    ids = []
    for case_id, index in zip(rows["case_id"], rows["sentence_index"]):
        if case_id not in inputs:
            inputs = {case_id: sentence_inputs(tokenizer, by_case[case_id].sentence_input())}
        ids.append(inputs[case_id][int(index)])
    return ids


def write_manifest(folder: Path, content: Mapping[str, Any]) -> None:
    (folder / MANIFEST).write_text(json.dumps(content, indent=1) + "\n")


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.exists():
        raise InputError(f"{folder} is not a verifier bundle (no {MANIFEST}): write one with `eval verifier-bundle`")
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        raise InputError(f"{folder}: a bundle of format {manifest.get('format')}, not {FORMAT}: build it again")
    return manifest


def training_inputs(folder: Path, hold_out: str, limit: int | None = None,
                    seed: int = 0) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """The rows a run holding out ``hold_out`` trains on, drawn as from the training data itself
    (:func:`~.verifier_training.training_rows`), and their ids."""
    frame, ids = read_ids(folder / TRAINING)
    rows = training_rows(frame, hold_out, limit, seed)
    at = pd.Series(np.arange(len(frame)), index=frame.index)
    return rows, [ids[i] for i in at[rows.index]]


def score_evaluation(verifier: TrainedVerifier, folder: Path, benchmarks: Iterable[str],
                     partitions: Iterable[str]) -> pd.DataFrame:
    """P(unsupported) of the bundle's evaluation sentences of ``benchmarks`` in ``partitions``: their
    rows (less the ids) with a ``score`` column."""
    scored = []
    for benchmark in benchmarks:
        rows, ids = read_ids(folder / evaluation_file(benchmark))
        keep = np.flatnonzero(rows["partition"].isin(list(partitions)).to_numpy())
        scores = verifier.probabilities([ids[i] for i in keep])
        scored.append(rows.iloc[keep].assign(score=scores))
    return pd.concat(scored, ignore_index=True)


def score_training(verifier: TrainedVerifier, folder: Path, hold_out: str) -> pd.DataFrame:
    """P(unsupported) of every training row a run holding out ``hold_out`` trains on: their rows
    (less the ids), ``row`` their position in the training data, with a ``score`` column."""
    rows, ids = training_inputs(folder, hold_out)
    return rows.assign(score=verifier.probabilities(ids)).rename_axis("row").reset_index()
