"""Input rows and output records of the Ray engine.

Input: one JSONL or Parquet file (``.parquet``), a local path or a URI any pyarrow
filesystem reads (``s3://``, ``gs://``, ``hdfs://``; ``.gz`` and other compressed JSONL by
suffix). It is read as rows of ``line`` (the 1-based line of a JSONL file, blank lines
skipped and counted as the local ``batch`` counts them; the 1-based row of a Parquet file)
and ``raw`` (the line's bytes, or the Parquet row as JSON), parsed later by the worker that
scores them, so a bad line becomes an error record, as in the local ``batch``.

Output: ``.jsonl`` (a local file, appended to and flushed record by record, as the local
``batch`` writes) or ``.parquet`` (a folder of part files, local or on any pyarrow
filesystem, each written under a temporary name and renamed when complete). Records are
keyed by ``line``; :meth:`Sink.done` gives the lines already written (and which of them
are error records), for resuming.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import ray.data
from ray.data.datasource import FileBasedDatasource

from ..errors import InputError
from ..rows.batch import done_lines
from .schema import RECORD_SCHEMA, table_records

ROWS_PER_BLOCK = 1024
_TMP = ".tmp-"


def _block(lines: list[int], raws: list[bytes]) -> pa.Table:
    return pa.table({"line": pa.array(lines, pa.int64()), "raw": pa.array(raws, pa.binary())})


class _JsonlLines(FileBasedDatasource):
    """Each non-blank line of a JSONL file with its 1-based line number."""

    def _read_stream(self, f: pa.NativeFile, path: str) -> Iterator[pa.Table]:
        number, rest, lines, raws = 0, b"", [], []
        while True:
            chunk = f.read(1 << 20)
            pieces = (rest + chunk).split(b"\n")
            rest = pieces.pop() if chunk else b""
            for raw in pieces:
                number += 1
                if raw.strip():
                    lines.append(number)
                    raws.append(raw)
            if len(lines) >= ROWS_PER_BLOCK or (not chunk and lines):
                yield _block(lines, raws)
                lines, raws = [], []
            if not chunk:
                return


class _ParquetRows(FileBasedDatasource):
    """Each row of a Parquet file as JSON, with its 1-based row number."""

    def _open_input_source(self, filesystem: pafs.FileSystem, path: str, **open_args: Any) -> pa.NativeFile:
        return filesystem.open_input_file(path)  # Parquet needs random access

    def _read_stream(self, f: pa.NativeFile, path: str) -> Iterator[pa.Table]:
        number = 0
        for batch in pq.ParquetFile(f).iter_batches(batch_size=ROWS_PER_BLOCK):
            rows = batch.to_pylist()
            yield _block(list(range(number + 1, number + len(rows) + 1)), [encode_row(r) for r in rows])
            number += len(rows)


def encode_row(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=False, default=str).encode("utf-8")


def read_input(source: str) -> ray.data.Dataset:
    """``source`` as a Dataset of ``line`` and ``raw`` (see the module docstring)."""
    reader = _ParquetRows if source.lower().endswith(".parquet") else _JsonlLines
    try:
        return ray.data.read_datasource(reader(source))
    except (FileNotFoundError, OSError) as exc:
        raise InputError(f"cannot read {source}: {exc}") from exc


class Sink:
    """Where records go; each :meth:`write` is kept once :meth:`flush` returns."""

    def done(self) -> dict[int, bool]:
        """Lines already written by an earlier run, each with whether its record is an error record."""
        raise NotImplementedError

    def write(self, table: pa.Table) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Persist what :meth:`write` was given."""


class JsonlSink(Sink):
    def __init__(self, path: Path) -> None:
        self.path = path

    def done(self) -> dict[int, bool]:
        return done_lines(self.path)

    def write(self, table: pa.Table) -> None:
        with self.path.open("a", encoding="utf-8") as sink:
            for record in table_records(table):
                sink.write(json.dumps(record, ensure_ascii=False) + "\n")
                sink.flush()


class ParquetSink(Sink):
    """Part files of up to ``rows_per_file`` records, or what arrived in ``seconds``;
    a kill loses at most the records not yet flushed, which a rerun scores again."""

    def __init__(self, out: str, rows_per_file: int = 1000, seconds: float = 60.0) -> None:
        self.fs: pafs.FileSystem
        self.root: str  # the folder's path on self.fs
        self.fs, self.root = (pafs.FileSystem.from_uri(out) if "://" in out
                              else (pafs.LocalFileSystem(), str(Path(out).absolute())))
        self.rows_per_file, self.seconds = rows_per_file, seconds
        self.pending: list[pa.Table] = []
        self.since = time.monotonic()

    def _parts(self) -> list[pafs.FileInfo]:
        """The folder's files; none where it does not exist yet (:meth:`flush` makes it)."""
        if self.fs.get_file_info(self.root).type == pafs.FileType.NotFound:
            return []
        return [f for f in self.fs.get_file_info(pafs.FileSelector(self.root)) if f.type == pafs.FileType.File]

    def done(self) -> dict[int, bool]:
        lines: dict[int, bool] = {}
        for info in self._parts():
            if info.base_name.startswith(_TMP):
                self.fs.delete_file(info.path)  # cut off by a kill before its rename
            elif info.base_name.endswith(".parquet"):
                part = pq.read_table(info.path, columns=["line", "error"], filesystem=self.fs)
                lines.update(zip(part["line"].to_pylist(), pc.is_valid(part["error"]).to_pylist()))
        return lines

    def write(self, table: pa.Table) -> None:
        self.pending.append(table)
        if sum(t.num_rows for t in self.pending) >= self.rows_per_file or time.monotonic() - self.since >= self.seconds:
            self.flush()

    def flush(self) -> None:
        rows = [t for t in self.pending if t.num_rows]
        self.pending, self.since = [], time.monotonic()
        if not rows:
            return
        self.fs.create_dir(self.root, recursive=True)
        name = f"part-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}.parquet"
        tmp, final = f"{self.root}/{_TMP}{name}", f"{self.root}/{name}"
        pq.write_table(pa.concat_tables(rows).cast(RECORD_SCHEMA), tmp, filesystem=self.fs)
        self.fs.move(tmp, final)


def open_sink(out: str) -> Sink:
    """The sink for ``out`` by its suffix: ``.jsonl`` or ``.parquet``."""
    if out.lower().endswith(".parquet"):
        return ParquetSink(out)
    if out.lower().endswith(".jsonl"):
        if "://" in out:
            raise InputError(f"{out}: JSONL output is appended to, so it must be a local file; "
                             "write .parquet to a remote filesystem")
        return JsonlSink(Path(out))
    raise InputError(f"{out}: the output must end in .jsonl or .parquet")
