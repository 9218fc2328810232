"""Scoring on Ray Data: an actor pool of detectors fed batches of rows grouped by evidence.

The plan, for input rows of ``line`` and ``raw`` (see :mod:`.io`):

1. a task adds each row's evidence group (a hash of :func:`groundsense.rows.batch.evidence_key`);
2. the rows are sorted by ``(group, line)`` and cut into blocks of ``rows_per_batch``:
   one shuffle of the input rows, which Ray spills to disk when they exceed the object
   store, so memory stays bounded. It runs to the end before the actors start (an actor
   pool that takes every CPU would otherwise starve these tasks; a sort emits nothing
   before it has seen all rows anyway). Rows that share their evidence then sit next to
   each other and mostly fall into one batch, where the actor's scorer encodes that
   evidence once;
3. ``map_batches`` with :class:`ScoreRows`, a callable class: each actor loads the scorer
   once and turns a batch into batch records (:func:`groundsense.rows.batch.score_rows`, the
   code the local ``batch`` runs: :func:`groundsense.rows.runner.run_row` on each row) in the
   Arrow schema of :mod:`.schema`. A row that fails becomes an error record; an actor that
   dies is restarted by Ray and its batch retried.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import ray.data

from ..calibration.calibration import Calibration
from ..calibration.fusion import LexicalFusions, RankFusion
from ..calibration.loaded import Loaded, apart, load_files
from ..config import DetectorConfig
from ..detection import Detection
from ..errors import GroundsenseError
from ..rows.batch import BatchSummary, evidence_key, parse_line, score_rows
from .io import Sink, encode_row, read_input
from .schema import records_table


@dataclass(frozen=True)
class Resources:
    """The actor pool: ``actors`` fixed, or ``(min, max)`` to autoscale; per actor CPUs,
    GPUs and torch threads (default: the CPUs, so actors do not oversubscribe a node), and
    the config of the ``detection`` each actor builds (a Detector, or a Cascade). Actors without
    a GPU score on the CPU unless the config names a device, so that they never use a GPU Ray
    has not given them."""

    actors: int | tuple[int, int] = 1
    cpus_per_actor: float = 1.0
    gpus_per_actor: float = 0.0
    threads: int | None = None
    rows_per_batch: int = 16
    detection: DetectorConfig = field(default_factory=DetectorConfig)

    def actor_detection(self) -> DetectorConfig:
        return replace(self.detection, device=self.detection.device or (None if self.gpus_per_actor else "cpu"))

    def pool(self) -> ray.data.ActorPoolStrategy:
        if isinstance(self.actors, tuple):
            return ray.data.ActorPoolStrategy(min_size=self.actors[0], max_size=self.actors[1])
        return ray.data.ActorPoolStrategy(size=self.actors)


class ScoreRows:
    """A Ray Data actor: the detection its config describes (a detector or a cascade:
    ``verification.make_detection``), loaded once, scoring batches of rows."""

    def __init__(self, source: str, threads: int, config: DetectorConfig, loaded: Loaded) -> None:
        from transformers.utils import logging as hf_logging

        from ..scorer.threads import use_threads
        from ..verification import make_detection

        use_threads(threads)  # the scorers this actor loads run them too
        hf_logging.disable_progress_bar()
        self.source = source
        # Ray keeps only the text of an error raised here, and a call's error whole, so a
        # scorer that cannot load fails the first call, and the CLI can say what to do.
        self.detection: Detection | None = None
        self.error: GroundsenseError | None = None
        try:
            self.detection = make_detection(config, calibration=loaded.calibration, fusion=loaded.fusion)
        except GroundsenseError as exc:
            self.error = exc

    def __call__(self, batch: pa.Table) -> pa.Table:
        if self.error is not None:
            raise self.error
        assert self.detection is not None, "the constructor sets the detection, or the error raised above"
        lines = batch.column("line").to_pylist()
        rows = [(n, parse_line(n, raw, self.source)) for n, raw in zip(lines, batch.column("raw").to_pylist())]
        return records_table(list(score_rows(self.detection, rows)))


def _add_group(batch: pa.Table, source: str) -> pa.Table:
    keys = [
        evidence_key(n, parse_line(n, raw, source))
        for n, raw in zip(batch.column("line").to_pylist(), batch.column("raw").to_pylist())
    ]
    return batch.append_column("group", pa.array([hashlib.sha1(k.encode()).hexdigest() for k in keys], pa.string()))


def _drop_done(batch: pa.Table, done: np.ndarray) -> pa.Table:
    return batch.filter(pc.invert(pc.is_in(batch.column("line"), value_set=pa.array(done, pa.int64()))))


def _encode_rows(batch: pa.Table) -> pa.Table:
    rows = batch.to_pylist()
    return pa.table({
        "line": pa.array([r.get("line") for r in rows], pa.int64()),
        "raw": pa.array([encode_row({k: v for k, v in r.items() if k != "line"}) for r in rows], pa.binary()),
    })


def score_lines(ds: ray.data.Dataset, source: str, resources: Resources, files: tuple[DetectorConfig, Loaded],
                ) -> ray.data.Dataset:
    """Records for a Dataset of ``line`` and ``raw`` rows (steps in the module docstring). ``files``:
    the actors' config and the objects it runs with, as :func:`load_files` made them from
    ``resources.actor_detection()`` on the driver; they are sent to the actors, which may run on
    nodes without the files."""
    config, loaded = files
    grouped = (
        # Ray types fn as taking the batch alone; fn_kwargs passes the rest
        ds.map_batches(_add_group, fn_kwargs={"source": source}, batch_format="pyarrow")  # type: ignore[arg-type]
        .sort(["group", "line"])
        # one actor call per block, spread over the pool
        .repartition(target_num_rows_per_block=resources.rows_per_batch)
        .materialize()  # before the actors start: a pool that fills the CPUs would starve these tasks
    )
    records = grouped.map_batches(
        ScoreRows,
        fn_constructor_kwargs={
            "source": source,
            "threads": resources.threads or max(1, int(resources.cpus_per_actor)),
            "config": config,
            "loaded": loaded,
        },
        batch_size=resources.rows_per_batch,
        batch_format="pyarrow",
        compute=resources.pool(),
        num_cpus=resources.cpus_per_actor,
        num_gpus=resources.gpus_per_actor or None,
    )
    records.context.raise_original_map_exception = True  # a scorer's error keeps its type and message
    return records


def detect_dataset(ds: ray.data.Dataset, resources: Resources | None = None, *,
                   calibration: Calibration | str | Path | bool | None = None,
                   fusion: LexicalFusions | RankFusion | str | Path | None = None,
                   **detector_options: Any) -> ray.data.Dataset:
    """Batch records for a Dataset of detector rows (columns ``question``, ``context`` or
    ``passages``, ``answer``, optional ``sentences``, ``id`` and ``line``). Reading and
    grouping the rows runs now; the scoring runs when the result is consumed.

    ``detector_options`` are :class:`groundsense.config.DetectorConfig` fields (``scorer``,
    ``k``, ``mode``, ...) over ``resources.detection``; they go to every actor, so a ``scorer``
    should be a name every node can resolve. ``calibration`` and ``fusion``: a file, read once,
    here, and sent to the actors (which may run on nodes without it), or an object (a
    :class:`groundsense.Calibration`, lexical fusions). The result has one row per input row in
    :data:`groundsense.scale.schema.RECORD_SCHEMA`, ready for ``write_parquet``; ``line`` is
    null where the input has none.
    """
    files, calibration_object, fusion_object = apart(calibration, fusion)
    options = {**{name: value for name, value in files.items() if value is not None}, **detector_options}
    resources = resources or Resources()
    resources = replace(resources, detection=replace(resources.detection, **options))
    return score_lines(ds.map_batches(_encode_rows, batch_format="pyarrow"), "dataset", resources,
                       load_files(resources.actor_detection(), calibration_object, fusion_object))


def run_ray_batch(source: str, sink: Sink, resources: Resources,
                  files: tuple[DetectorConfig, Loaded] | None = None) -> BatchSummary:
    """``groundsense batch --engine ray``: score ``source`` into ``sink`` (from
    :func:`.io.open_sink`), resuming a partly written output. The driver writes what the
    actors return, keeping the first record of each line, so the output has every input
    line exactly once. ``files``: what :func:`load_files` made of ``resources.actor_detection()``
    where the caller read it already (the CLI, checking before Ray starts); None: read here."""
    files = files or load_files(resources.actor_detection())
    done = sink.done()
    summary = BatchSummary(skipped=len(done), skipped_errors=sum(done.values()))
    written = set(done)
    rows = read_input(source)
    if written:
        # Ray types fn as taking the batch alone; fn_kwargs passes the rest
        rows = rows.map_batches(_drop_done, fn_kwargs={"done": np.fromiter(written, np.int64)},  # type: ignore[arg-type]
                                batch_format="pyarrow")
    records = score_lines(rows, source, resources, files)
    table: pa.Table  # iter_batches gives any DataBatch by its type; batch_format="pyarrow" makes each a Table
    try:
        for table in records.iter_batches(batch_size=None, batch_format="pyarrow"):
            lines = table.column("line").to_pylist()
            fresh = [n not in written for n in lines]
            written.update(lines)
            table = table.filter(pa.array(fresh, pa.bool_()))
            sink.write(table)
            summary.written += table.num_rows
            summary.errors += table.num_rows - table.column("error").null_count
    except Exception as exc:
        cause = _groundsense_cause(exc)
        if cause is None:
            raise
        raise cause from exc  # e.g. an actor could not load its scorer: the message says what to do
    finally:
        sink.flush()  # what arrived before a failure or Ctrl-C is kept
    return summary


def _groundsense_cause(exc: BaseException) -> GroundsenseError | None:
    """The innermost :class:`GroundsenseError` behind a Ray error, if any."""
    found, seen = None, set()
    link: BaseException | None = exc  # then its causes, Ray's own ``cause`` first
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, GroundsenseError):
            found = link
        link = getattr(link, "cause", None) or link.__cause__
    return found
