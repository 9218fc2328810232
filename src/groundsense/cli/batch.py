"""`groundsense batch`: score every row of a file, here or on a Ray actor pool; resumable."""

from __future__ import annotations

import os
import socket
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..config import DetectorConfig
from ..errors import EngineUnavailable, InputError
from . import common
from .common import CONTEXT_SETTINGS, detector_options
from .interrupts import rearm_sigterm, resumable

if TYPE_CHECKING:
    from ..rows.batch import BatchSummary
    from ..scale import Resources


def _actors(value: str | None) -> int | tuple[int, int] | None:
    """``--actors``: ``N`` or ``MIN-MAX``."""
    if value is None:
        return None
    low, _, high = value.partition("-")
    try:
        sizes: tuple[int, ...] = (int(low), int(high)) if high else (int(low),)
    except ValueError:
        raise click.BadParameter(f"{value!r}: give a number of actors (4) or a range to autoscale in (2-8)") from None
    if min(sizes) < 1 or sizes[0] > sizes[-1]:
        raise click.BadParameter(f"{value!r}: actors must be at least 1 (and MIN <= MAX)")
    return (sizes[0], sizes[1]) if high else sizes[0]


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("source")
@click.option("-o", "--output", required=True,
              help="Output: .jsonl (local engine: any name but .parquet), or with --engine ray .parquet (a folder "
                   "of part files); an existing output is resumed, skipping the lines already written. Local "
                   "engine: - writes the records to standard output (from the first line: nothing to resume).")
@click.option("--no-progress", is_flag=True, help="No progress bar (or, in a log, no progress lines).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local: this process; ray: a Ray Data actor pool (pip install 'groundsense[ray]'; "
                   "see docs/scale.md).")
@click.option("--actors", default=None, metavar="N|MIN-MAX",
              help="ray: scoring actors, or a range to autoscale in [1].")
@click.option("--cpus-per-actor", type=click.FloatRange(min=0), default=None,
              help="ray: CPUs per actor, also its torch threads [1].")
@click.option("--gpus-per-actor", type=click.FloatRange(min=0), default=None, help="ray: GPUs per actor, e.g. 1 [0].")
@click.option("--rows-per-batch", type=click.IntRange(min=1), default=None, help="ray: answers per actor call [16].")
@click.option("--address", default=None,
              help="ray: cluster to join, e.g. auto [default: $RAY_ADDRESS, else a local runtime].")
@detector_options()
def batch(source: str, output: str, no_progress: bool, engine: str, actors: str | None, cpus_per_actor: float | None,
          gpus_per_actor: float | None, rows_per_batch: int | None, address: str | None,
          **detector_options: Any) -> None:
    """Score every row of a JSONL file (id, question, context or passages, answer).

    A bad row gets an error record and the run goes on; rerun the same command to resume.
    With --engine ray, SOURCE may also be Parquet (.parquet) and either may be a URI that
    pyarrow reads (s3://, gs://, hdfs://).
    """
    to_stdout = output == STDOUT
    if to_stdout and engine == "ray":
        raise InputError("-o -: the local engine writes to standard output; with --engine ray write a .jsonl file "
                         "or a .parquet folder")
    config = DetectorConfig(**detector_options)
    ray_options = {"actors": _actors(actors), "cpus_per_actor": cpus_per_actor, "gpus_per_actor": gpus_per_actor,
                   "rows_per_batch": rows_per_batch}
    # standard output keeps nothing to resume: a stop there is the root group's plain interrupt
    with nullcontext() if to_stdout else resumable(f"the records written so far are in {output}"):
        if engine == "ray":
            summary = _ray_batch(source, output, no_progress, address,
                                 {k: v for k, v in ray_options.items() if v is not None}, config)
        else:
            given = [
                f"--{k.replace('_', '-')}" for k, v in {**ray_options, "address": address}.items() if v is not None
            ]
            if given:
                raise InputError(f"{', '.join(given)} only apply with --engine ray")
            summary = _local_batch(source, output, no_progress, config)
    written_to = "standard output" if to_stdout else output
    if not summary.written and not summary.skipped:
        click.echo(f"warning: {source} has no rows (it is empty, or only blank lines): nothing was scored", err=True)
    errors = f"{summary.errors + summary.skipped_errors} errors"
    if summary.skipped_errors:
        errors += f" ({summary.skipped_errors} of them already there)"
    click.echo(f"{written_to}: {summary.written} written, {summary.skipped} already there, {errors}", err=True)


STDOUT = "-"  # -o's name for standard output
PARQUET_MAGIC = b"PAR1"
# gzip, bzip2, xz, zstd, lz4: the first bytes of a compressed file, and their suffixes
COMPRESSED_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"\x28\xb5\x2f\xfd", b"\x04\x22\x4d\x18")
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lz4")


def _check_paths(source: str, output: str) -> None:
    """Refuse, before anything is scored, a local source that is missing and an output that
    would overwrite it, that is a folder where a file is written (or the reverse, for a Parquet
    output: a folder of part files), or that lies in a missing folder."""
    if "://" not in source and not Path(source).is_file():
        raise InputError(f"{source}: no such file")
    if "://" in output or output == STDOUT:
        return
    out = Path(output)
    if out.exists() and "://" not in source and out.samefile(source):
        raise InputError(f"-o {output} is the input file: write the records to another file")
    common.check_output_file(out, folder=output.lower().endswith(".parquet"))


def _local_batch(source: str, output: str, no_progress: bool, config: DetectorConfig) -> BatchSummary:
    from ..rows.batch import run_batch
    from ..verification import check_verifier

    if "://" in source or not Path(source).is_file():
        raise InputError(f"{source}: no such file (URIs and Parquet need --engine ray)")
    with Path(source).open("rb") as head:
        magic = head.read(6)
    if source.lower().endswith(".parquet") or magic.startswith(PARQUET_MAGIC):
        raise InputError(f"{source} is Parquet: read it with --engine ray")
    if source.lower().endswith(COMPRESSED_SUFFIXES) or magic.startswith(COMPRESSED_MAGIC):
        raise InputError(f"{source} is compressed: decompress it, or read it with --engine ray")
    if "://" in output or output.lower().endswith(".parquet"):
        raise InputError(f"-o {output}: the local engine writes a local JSONL file; write .parquet with --engine ray")
    _check_paths(source, output)
    check_verifier(config)  # a bad verifier fails even when nothing is left to score (no detection is made then)
    return run_batch(lambda: common.make_detection(config), Path(source),
                     sys.stdout if output == STDOUT else Path(output), progress=not no_progress)


def _ray_batch(source: str, output: str, no_progress: bool, address: str | None, ray_options: dict[str, Any],
               config: DetectorConfig) -> BatchSummary:
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray needs Ray: pip install 'groundsense[ray]'") from None
    from ..calibration.loaded import load_files
    from ..rows.batch import BatchSummary
    from ..scale import Resources, open_sink, run_ray_batch
    from ..verification import check_verifier
    from ..verification.factory import prepare_detection

    threads = click.get_current_context().find_root().params["threads"]
    resources = Resources(threads=threads, detection=config, **ray_options)
    started_here = address is None and not os.environ.get("RAY_ADDRESS")
    # What the actors would refuse fails before Ray starts, like a bad output: all of it where they run
    # on this machine's CPUs (the precision, the scorer's weights); elsewhere (GPUs, a cluster's nodes)
    # the verifier spec and the files, which the driver reads and sends them.
    # The files are read once, here, and what was read goes to the actors.
    if started_here and not resources.gpus_per_actor:
        prepared = prepare_detection(resources.actor_detection())
        files = prepared.config, prepared.loaded
    else:
        check_verifier(config)
        files = load_files(resources.actor_detection())
    sink = open_sink(output)
    _check_paths(source, output)
    sink.done()  # a damaged output too
    if _without_rows(source):
        return BatchSummary()  # nothing to score: Ray is not started for it
    try:
        if not started_here:
            _check_answers(address or os.environ["RAY_ADDRESS"])
        ray.init(address=address, ignore_reinit_error=True)
    except Exception as exc:  # Ray's own errors are bare (a node timed out during startup), or OS or connection ones
        raise EngineUnavailable(_start_failure(address, started_here, exc)) from exc
    rearm_sigterm()  # Ray's init takes SIGTERM over; a stop must still write what was scored
    if started_here:
        _check_fits(resources, ray.cluster_resources())
    ray.data.DataContext.get_current().enable_progress_bars = not no_progress
    return run_ray_batch(source, sink, resources, files)


JOIN_TIMEOUT = 5.0  # seconds to wait for a cluster's address to answer before joining it


def _without_rows(source: str) -> bool:
    """Whether ``source`` is a local JSONL file without a row (empty, or only blank lines); a URI,
    Parquet or a compressed file is left to Ray to read."""
    if "://" in source:
        return False
    with Path(source).open("rb") as file:
        head = file.read(6)
        if head.startswith(PARQUET_MAGIC) or head.startswith(COMPRESSED_MAGIC):
            return False
        file.seek(0)
        return not any(line.strip() for line in file)


def _check_answers(address: str) -> None:
    """Raise the ``OSError`` of a cluster's ``HOST:PORT`` address (``ray://HOST:PORT`` too) where
    nothing answers within :data:`JOIN_TIMEOUT`: Ray's own join would retry for minutes, silent.
    Other addresses (``auto``, ``local``) Ray resolves itself."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if colon and host and port.isdigit():
        socket.create_connection((host, int(port)), timeout=JOIN_TIMEOUT).close()


def _start_failure(address: str | None, started_here: bool, exc: Exception) -> str:
    """What to say when ``ray.init`` failed: what failed, its cause, and what to do."""
    cause = f"{type(exc).__name__}: {exc}"
    if started_here:
        return (f"Ray's local runtime did not start ({cause}). Rerun the command (on a loaded machine Ray can time "
                "out while it starts), join a running Ray cluster with --address, or score in this process with "
                "--engine local")
    return (f"could not join the Ray cluster at {address or os.environ.get('RAY_ADDRESS')} ({cause}). Check that "
            "the cluster is running and the address is right (--address, else $RAY_ADDRESS) and rerun, or score "
            "in this process with --engine local")


def _check_fits(resources: Resources, cluster: dict[str, float]) -> None:
    """Refuse an actor that the local runtime this command started can never place (it would
    wait for ever): more GPUs or CPUs than this machine has."""
    for name, asked in (("GPU", resources.gpus_per_actor), ("CPU", resources.cpus_per_actor)):
        if asked > cluster.get(name, 0):
            raise InputError(f"--{name.lower()}s-per-actor {asked:g}: this machine's Ray runtime has "
                             f"{cluster.get(name, 0):g} {name}s, so no actor could start: ask for fewer, or "
                             "join a cluster that has them (--address)")
