"""``groundsense``: detect, batch and calibrate from the shell.

Bad input exits with code 2 and a message that says what to do; nothing is written then.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from rich.console import Console

from .errors import GroundsenseError, InputError
from .interrupts import resumable
from .validate import MAX_K

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Failure(click.ClickException):
    exit_code = 2


LOO_OPTION = click.option(
    "--loo", "leave_one_out", type=click.Choice(["exact", "masked"]), default="exact", show_default=True,
    help="Full mode's leave-one-out rows: exact re-encodes the context without each chunk; masked hides the "
         "chunk from the answer over one encoding of the full context (an approximation, cheaper; the shipped "
         "calibration then serves the gap detector only).",
)


def _detector_options(fitting: bool = False):
    """The options that build a detector. ``fitting`` (`calibrate`) leaves out --mode and
    --calibration: fitting always scores in full mode, uncalibrated."""
    mode = [] if fitting else [
        click.option("--mode", type=click.Choice(["full", "two_pass"]), default="full", show_default=True,
                     help="full: K+2 conditions and the sensitivity detector; two_pass: gap only, ~K/2+1 times cheaper.")]
    calibration = [] if fitting else [
        click.option("--calibration", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Calibration file from `groundsense calibrate` [default: the one shipped for the scorer].")]
    options = [
        click.option("--scorer", "-m", default=None, metavar="NAME",
                     help="Built-in scorer, local model directory or Hugging Face id [default: smollm2-135m-instruct]."),
        click.option("-k", "--chunks", "k", type=click.IntRange(min=1, max=MAX_K), default=5, show_default=True,
                     help="Chunks a single context string is split into (passages are chunks as given)."),
        *mode,
        LOO_OPTION,
        *calibration,
        click.option("--max-context-tokens", type=click.IntRange(min=1), default=1800, show_default=True),
        click.option("--max-answer-tokens", type=click.IntRange(min=1), default=256, show_default=True),
        click.option("--device", default=None, help="torch device [default: cuda if available, else cpu]."),
    ]

    def decorate(func):
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def _evidence_options(func):
    """The options that give the question and the evidence (``detect``, ``stream``)."""
    for option in reversed([
        click.option("--question", "-q", default=None, help="The question or instruction."),
        click.option("--question-file", type=click.Path(dir_okay=False), default=None),
        click.option("--context", "-c", default=None, help="The evidence as one string (split into K chunks)."),
        click.option("--context-file", type=click.Path(dir_okay=False), default=None),
        click.option("--passage-file", "passage_files", multiple=True, type=click.Path(dir_okay=False),
                     help="One retrieved passage per file; repeat for each passage (each is a chunk)."),
    ]):
        func = option(func)
    return func


def _make_detector(scorer, k, mode, leave_one_out, calibration, max_context_tokens, max_answer_tokens, device):
    from .detector import Detector

    return Detector(scorer, k=k, mode=mode, calibration=calibration, max_context_tokens=max_context_tokens,
                    max_answer_tokens=max_answer_tokens, device=device, leave_one_out=leave_one_out)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.option("-v", "--verbose", is_flag=True, help="Show library log messages.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="CPU threads for the scorer [default: torch's choice]. On a busy machine 1 can be faster.")
@click.version_option(package_name="groundsense")
def cli(verbose: bool, threads: int | None) -> None:
    """Flag the sentences of a RAG answer that the retrieved evidence does not support,
    and show the passage each supported sentence relied on."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s: %(message)s")
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    if not verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()


def _gather_input(example, question, question_file, context, context_file, passage_files, answer, answer_file) -> dict:
    from .inputs import load_example, read_json_stream, read_text
    from .validate import check_object

    if example:
        return load_example(example)
    row: dict = {}
    if answer is None and answer_file is None:
        if sys.stdin.isatty():
            raise InputError("no answer given: use --answer/--answer-file, --example NAME, or pipe a JSON object on stdin")
        row = read_json_stream(sys.stdin.buffer)
        check_object(row)
    picks = {
        "question": question if question is not None else (read_text(question_file) if question_file else None),
        "context": context if context is not None else (read_text(context_file) if context_file else None),
        "passages": [read_text(p) for p in passage_files] or None,
        "answer": answer if answer is not None else (read_text(answer_file) if answer_file else None),
    }
    row.update({key: value for key, value in picks.items() if value is not None})
    return row


@cli.command(context_settings=CONTEXT_SETTINGS)
@_evidence_options
@click.option("--answer", "-a", default=None, help="The answer to check.")
@click.option("--answer-file", type=click.Path(dir_okay=False), default=None)
@click.option("--example", default=None, metavar="NAME", help="Run on a shipped example (see `groundsense examples`).")
@click.option("--json", "as_json", is_flag=True, help="Print the machine-readable result.")
@click.option("--fail-on-flag", is_flag=True, help="Exit 1 when any sentence is flagged (for guardrail scripts).")
@click.option("--verifier", default=None, metavar="SPEC",
              help="Cascade: escalate the most suspicious sentences to a verifier, which decides their flag, "
                   "e.g. judge:qwen2.5-coder-1.5b-instruct (docs/verifiers.md).")
@click.option("--escalate", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="With --verifier: the share of the answer's sentences escalated (at least one).")
@click.option("--verifier-threshold", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="With --verifier: flag an escalated sentence when the verifier's score reaches this. A small "
                   "judge's raw score is poorly calibrated: prefer the threshold `groundsense eval report` "
                   "chooses on dev (its flagging table's `verifier threshold`).")
@_detector_options()
def detect(example, question, question_file, context, context_file, passage_files, answer, answer_file,
           as_json, fail_on_flag, verifier, escalate, verifier_threshold, **detector_options):
    """Check one answer against its evidence.

    Inputs come from options and files, from --example, or as one JSON object on stdin
    with keys question, context or passages, and answer (and optionally id, sentences,
    options: {k, mode}, which then override -k and --mode; the same request HTTP takes):

      echo '{"context": "...", "answer": "..."}' | groundsense detect --json
    """
    from .render import render
    from .validate import check_row

    try:
        row = _gather_input(example, question, question_file, context, context_file, passage_files, answer, answer_file)
        checked = check_row(row)  # validated before the scorer loads
        arguments = checked.arguments
        detector_options.update(checked.options)
        if verifier:  # built first: a bad spec fails before the scorer loads
            from .cascade import Cascade
            from .verifiers import make_verifier

            judge = make_verifier(verifier, device=detector_options["device"])
            detector = Cascade(_make_detector(**detector_options), judge, escalate, verifier_threshold)
        else:
            detector = _make_detector(**detector_options)
        result = detector.detect(**arguments)
    except GroundsenseError as exc:
        raise Failure(str(exc)) from exc
    if as_json:
        data = result.to_dict() if checked.id is None else {"id": checked.id, **result.to_dict()}
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        render(result, Console())
    if fail_on_flag and result.answer.n_flagged:
        sys.exit(1)


def _stdin_text() -> Iterator[str]:
    """Standard input's text as it arrives (not line by line: an LLM's output may pause
    mid-line), decoded as UTF-8 across read boundaries."""
    import codecs
    import os

    decoder = codecs.getincrementaldecoder("utf-8")()
    while data := os.read(sys.stdin.fileno(), 4096):
        try:
            yield decoder.decode(data)
        except UnicodeDecodeError as exc:
            raise InputError("standard input is not UTF-8 text; convert it, e.g. `iconv -f utf-16 -t utf-8`") from exc
    yield decoder.decode(b"", final=True)


def _replayed(answer: str, delay: float) -> Iterator[str]:
    """An example's answer word by word, ``delay`` seconds apart, as an LLM would emit it."""
    import time

    pieces = answer.split(" ")
    for i, piece in enumerate(pieces):
        if delay:
            time.sleep(delay)
        yield piece + (" " if i < len(pieces) - 1 else "")


@cli.command(context_settings=CONTEXT_SETTINGS)
@_evidence_options
@click.option("--example", default=None, metavar="NAME",
              help="Replay a shipped example's answer word by word instead of reading standard input.")
@click.option("--delay", type=click.FloatRange(min=0), default=0.05, show_default=True,
              help="With --example: seconds between words.")
@click.option("--json", "as_json", is_flag=True,
              help="Print NDJSON events, as POST /v1/detect/stream does: one per sentence, then the result.")
@click.option("--fail-on-flag", is_flag=True, help="Exit 1 when any sentence is flagged (for guardrail scripts).")
@_detector_options()
def stream(question, question_file, context, context_file, passage_files, example, delay, as_json, fail_on_flag,
           **detector_options):
    """Check an answer while it is generated: read it from standard input as it arrives and
    print each sentence's verdict as soon as the sentence ends.

      my-llm "Summarise the note" | groundsense stream --context-file note.txt
      groundsense stream --example passages-qa          # replays a shipped answer
    """
    from .inputs import load_example
    from .render import render_header, render_summary
    from .validate import check_stream_head

    console = Console()
    try:
        if example:
            row = load_example(example)
            pieces = _replayed(row.pop("answer"), delay)
            row.pop("sentences", None)
        else:
            if sys.stdin.isatty():
                raise InputError("pipe the answer on standard input, or replay a shipped one with --example NAME")
            row = _gather_input(None, question, question_file, context, context_file, passage_files, "", None)
            del row["answer"]
            pieces = _stdin_text()
        head = check_stream_head(row)
        detector = _make_detector(**{**detector_options, **head.options})
        checking = detector.stream(**head.arguments)
        if not as_json:
            render_header(detector.scorer.name, detector.mode, detector.leave_one_out, detector.detector,
                          detector.calibration.thresholds.get(detector.detector) if detector.calibration else None,
                          console)
        printed = 0
        for piece in pieces:
            for sentence in checking.feed(piece):
                _print_sentence(sentence, as_json, console)
                printed += 1
        result = checking.close()
        for sentence in result.sentences[printed:]:
            _print_sentence(sentence, as_json, console)
    except GroundsenseError as exc:
        raise Failure(str(exc)) from exc
    if as_json:
        click.echo(json.dumps({"event": "result", "result": result.to_dict()}, ensure_ascii=False))
    else:
        render_summary(result, console)
    if fail_on_flag and result.answer.n_flagged:
        sys.exit(1)


def _print_sentence(sentence, as_json: bool, console: Console) -> None:
    if as_json:
        click.echo(json.dumps({"event": "sentence", "sentence": sentence.to_dict()}, ensure_ascii=False))
    else:
        from .render import render_sentence

        render_sentence(sentence, None, console)


def _actors(value: str | None) -> int | tuple[int, int] | None:
    """``--actors``: ``N`` or ``MIN-MAX``."""
    if value is None:
        return None
    low, _, high = value.partition("-")
    try:
        sizes = (int(low), int(high)) if high else (int(low),)
    except ValueError:
        raise click.BadParameter(f"{value!r}: give a number of actors (4) or a range to autoscale in (2-8)") from None
    if min(sizes) < 1 or sizes[0] > sizes[-1]:
        raise click.BadParameter(f"{value!r}: actors must be at least 1 (and MIN <= MAX)")
    return sizes if high else sizes[0]


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("source")
@click.option("-o", "--output", required=True,
              help="Output: .jsonl (local engine: any name), or with --engine ray .parquet (a folder of part files); "
                   "an existing output is resumed, skipping the lines already written.")
@click.option("--no-progress", is_flag=True, help="No progress bar (or, in a log, no progress lines).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local: this process; ray: a Ray Data actor pool (pip install 'groundsense[ray]'; see docs/scale.md).")
@click.option("--actors", default=None, metavar="N|MIN-MAX", help="ray: scoring actors, or a range to autoscale in [1].")
@click.option("--cpus-per-actor", type=click.FloatRange(min=0), default=None, help="ray: CPUs per actor, also its torch threads [1].")
@click.option("--gpus-per-actor", type=click.FloatRange(min=0), default=None, help="ray: GPUs per actor, e.g. 1 [0].")
@click.option("--rows-per-batch", type=click.IntRange(min=1), default=None, help="ray: answers per actor call [16].")
@click.option("--address", default=None, help="ray: cluster to join, e.g. auto [default: $RAY_ADDRESS, else a local runtime].")
@_detector_options()
def batch(source, output, no_progress, engine, actors, cpus_per_actor, gpus_per_actor, rows_per_batch, address,
          **detector_options):
    """Score every row of a JSONL file (id, question, context or passages, answer).

    A bad row gets an error record and the run goes on; rerun the same command to resume.
    With --engine ray, SOURCE may also be Parquet (.parquet) and either may be a URI that
    pyarrow reads (s3://, gs://, hdfs://).
    """
    ray_options = {"actors": _actors(actors), "cpus_per_actor": cpus_per_actor, "gpus_per_actor": gpus_per_actor,
                   "rows_per_batch": rows_per_batch}
    try:
        with resumable(f"the records written so far are in {output}"):
            if engine == "ray":
                summary = _ray_batch(source, output, no_progress, address,
                                     {k: v for k, v in ray_options.items() if v is not None}, detector_options)
            else:
                given = [f"--{k.replace('_', '-')}" for k, v in {**ray_options, "address": address}.items() if v is not None]
                if given:
                    raise InputError(f"{', '.join(given)} only apply with --engine ray")
                summary = _local_batch(source, output, no_progress, detector_options)
    except GroundsenseError as exc:
        raise Failure(str(exc)) from exc
    click.echo(f"{output}: {summary.written} written, {summary.skipped} already there, {summary.errors} errors", err=True)


def _local_batch(source: str, output: str, no_progress: bool, detector_options: dict):
    from .batch import run_batch

    if not Path(source).is_file():
        raise InputError(f"{source}: no such file (URIs and Parquet need --engine ray)")
    return run_batch(_make_detector(**detector_options), Path(source), Path(output), progress=not no_progress)


def _ray_batch(source: str, output: str, no_progress: bool, address: str | None, ray_options: dict, detector_options: dict):
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray needs Ray: pip install 'groundsense[ray]'") from None
    from .calibration import Calibration
    from .scale import Resources, open_sink, run_ray_batch

    sink = open_sink(output)  # a bad output name fails before Ray starts
    if "://" not in source and not Path(source).is_file():
        raise InputError(f"{source}: no such file")
    if detector_options["calibration"] is not None:  # actors on other nodes cannot read the driver's files
        detector_options["calibration"] = Calibration.load(detector_options["calibration"])
    threads = click.get_current_context().find_root().params["threads"]
    ray.init(address=address, ignore_reinit_error=True)
    ray.data.DataContext.get_current().enable_progress_bars = not no_progress
    return run_ray_batch(source, sink, Resources(threads=threads, detector_options=detector_options, **ray_options))


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Where to write the calibration JSON.")
@click.option("--features", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Batch output to reuse or resume [default: SOURCE with .features.jsonl].")
@click.option("--target-recall", type=click.FloatRange(0, 1), default=None, help="Labelled: lowest recall to reach.")
@click.option("--target-precision", type=click.FloatRange(0, 1), default=None, help="Labelled: lowest precision to reach.")
@click.option("--flag-rate", type=click.FloatRange(0, 1, min_open=True), default=0.1, show_default=True,
              help="Unlabelled: share of sentences to flag.")
@click.option("--no-progress", is_flag=True)
@_detector_options(fitting=True)
def calibrate(source, output, features, target_recall, target_precision, flag_rate, no_progress, **detector_options):
    """Fit standardisation statistics and flag thresholds on a set of answers.

    SOURCE is batch input (JSONL). Rows may carry "labels": a list of {"start", "end"}
    character spans of unsupported text in the answer; a sentence overlapping one is
    unsupported. With labels on every row the threshold meets --target-recall or
    --target-precision (default: best F1); without, it flags --flag-rate of sentences.
    Never calibrate on the answers you will score.
    """
    from .batch import run_batch
    from .calibration_data import fit_from_batch

    features = features or source.with_suffix(".features.jsonl")
    try:
        detector = _make_detector(**detector_options, mode="full", calibration=False)
        with resumable(f"the features scored so far are in {features}"):
            run_batch(detector, source, features, progress=not no_progress)
        calibration = fit_from_batch(source, features, detector.scorer.name, detector.k,
                                     leave_one_out=detector.leave_one_out, target_recall=target_recall, target_precision=target_precision, flag_rate=flag_rate)
    except GroundsenseError as exc:
        raise Failure(str(exc)) from exc
    calibration.save(output)
    click.echo(f"wrote {output}: thresholds {calibration.thresholds} on {calibration.made_with['n_sentences']} sentences", err=True)


@cli.command(context_settings=CONTEXT_SETTINGS)
@click.option("--scorer", "-m", default=None, metavar="NAME", help="Scorer [env GROUNDSENSE_SCORER; default: the embedded one].")
@click.option("-k", "--chunks", "k", type=click.IntRange(min=1, max=MAX_K), default=None, help="Default K [env GROUNDSENSE_K; 5].")
@click.option("--mode", type=click.Choice(["full", "two_pass"]), default=None, help="Default mode [env GROUNDSENSE_MODE; full].")
@click.option("--calibration", type=click.Path(exists=True, dir_okay=False), default=None, help="[env GROUNDSENSE_CALIBRATION]")
@click.option("--device", default=None, help="[env GROUNDSENSE_DEVICE]")
@click.option("--host", default=None, help="[env GROUNDSENSE_HOST; 127.0.0.1]")
@click.option("--port", type=int, default=None, help="[env GROUNDSENSE_PORT; 8000]")
@click.option("--queue-size", type=click.IntRange(min=1), default=None, help="Waiting requests before 429 [env GROUNDSENSE_QUEUE_SIZE; 8].")
@click.option("--timeout", "timeout_s", type=float, default=None, help="Seconds per request [env GROUNDSENSE_TIMEOUT_S; 120].")
@click.option("--max-body-bytes", type=int, default=None, help="[env GROUNDSENSE_MAX_BODY_BYTES; 2000000]")
@click.option("--allowed-hosts", default=None, metavar="HOST,...",
              help="Host headers to accept, e.g. review.example.org; others get 400. Set it when binding beyond "
                   "loopback (docs/reliability.md) [env GROUNDSENSE_ALLOWED_HOSTS; any].")
@click.option("--log-text", is_flag=True, default=None,
              help="Put each request's question and answer in the request log [env GROUNDSENSE_LOG_TEXT; off].")
def serve(**options):
    """Run the HTTP API and the review page (open http://HOST:PORT/).

    Flags override GROUNDSENSE_* environment variables, which override the defaults. Each
    scoring request writes one JSON line to stdout (the request log); the server's own
    messages go to stderr.
    """
    import uvicorn

    from .service.app import create_app
    from .service.settings import ServiceSettings

    settings = ServiceSettings.from_env(**options)
    click.echo(f"groundsense: serving on http://{settings.host}:{settings.port}/ (scorer loads in the background)", err=True)
    requests = logging.getLogger("groundsense.requests")
    requests.addHandler(logging.StreamHandler(sys.stdout))  # the bare message: one JSON line
    requests.setLevel(logging.INFO)
    requests.propagate = False
    # The request log replaces uvicorn's access log for the scoring routes.
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info", access_log=False)


@cli.command(context_settings=CONTEXT_SETTINGS)
def examples():
    """List the shipped examples for `groundsense detect --example NAME`."""
    from .inputs import example_names

    for name in example_names():
        click.echo(name)


from .eval.cli import eval_group  # noqa: E402

cli.add_command(eval_group)


def main() -> None:
    cli(prog_name="groundsense")


if __name__ == "__main__":
    main()
