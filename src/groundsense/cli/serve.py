"""`groundsense serve`: the HTTP API and the review page."""

from __future__ import annotations

import logging
import sys

import click

from ..errors import InputError
from .common import CONTEXT_SETTINGS, detector_options

# What the `service` extra installs (pydantic and starlette come with FastAPI): the core install leaves them out.
SERVICE_PACKAGES = {"fastapi", "starlette", "pydantic", "uvicorn", "prometheus_client"}


def print_key_hash(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--hash-key``: the hash of the key read on stdin (prompted for, unechoed, at a terminal)."""
    if not value or ctx.resilient_parsing:
        return
    from ..service.keys import hash_key, key_id

    key = (click.prompt("API key", hide_input=True, err=True) if sys.stdin.isatty() else sys.stdin.readline()).strip()
    if not key:
        raise click.UsageError("--hash-key reads the key on stdin, and got none: e.g. "
                               "python -c 'import secrets; print(secrets.token_urlsafe(32))' | tee key.txt "
                               "| groundsense serve --hash-key >> keys.txt")
    hashed = hash_key(key)
    click.echo(hashed)
    click.echo(f"its id in the request log and the metrics: {key_id(hashed)}", err=True)
    ctx.exit(0)


@click.command(context_settings=CONTEXT_SETTINGS)
@detector_options(from_env=True)
@click.option("--host", default=None, help="The address to listen on [env GROUNDSENSE_HOST; 127.0.0.1].")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="The port to listen on; 0 picks a free one [env GROUNDSENSE_PORT; 8000].")
@click.option("--queue-size", type=click.IntRange(min=1), default=None,
              help="Waiting requests before 429 [env GROUNDSENSE_QUEUE_SIZE; 8].")
@click.option("--max-streams", type=click.IntRange(min=1), default=None,
              help="Streams open at once before 429; each holds its evidence's caches in memory "
                   "[env GROUNDSENSE_MAX_STREAMS; 4].")
@click.option("--admit-load", type=click.FloatRange(min=0), default=None, metavar="SHARE",
              help="Admit a stream only while the scorer's measured load, one more stream's included, stays at or "
                   "under this share of its time; 0 admits by --max-streams only (docs/service.md) "
                   "[env GROUNDSENSE_ADMIT_LOAD; 0.8].")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per request, queueing included; over it: 504 [env GROUNDSENSE_TIMEOUT_S; 120].")
@click.option("--max-body-bytes", type=click.IntRange(min=1), default=None,
              help="The largest request body; larger: 413 [env GROUNDSENSE_MAX_BODY_BYTES; 2000000].")
@click.option("--allowed-hosts", default=None, metavar="HOST,...",
              help="Host headers to accept, e.g. review.example.org; others get 400. Set it when binding beyond "
                   "loopback (docs/reliability.md) [env GROUNDSENSE_ALLOWED_HOSTS; any].")
@click.option("--log-text", is_flag=True, default=None,
              help="Put each request's question and answer in the request log [env GROUNDSENSE_LOG_TEXT; off].")
@click.option("--api-key-file", type=click.Path(dir_okay=False), default=None,
              help="A file of API key hashes, one per line (make one with --hash-key): every route but the probes, "
                   "the review page's files and the API's description (/openapi.json, /docs) then needs "
                   "'Authorization: Bearer KEY'. Read again when it changes "
                   "(docs/service.md#api-keys) [env GROUNDSENSE_API_KEY_FILE; none: no key asked].")
@click.option("--metrics-open", is_flag=True, default=None,
              help="Serve /metrics without a key even when keys are configured [env GROUNDSENSE_METRICS_OPEN; off].")
@click.option("--grace", "grace_s", type=click.FloatRange(min=0), default=None,
              help="After SIGTERM, seconds the requests and streams in flight get to finish while new ones get 503; "
                   "then the server exits 0 [env GROUNDSENSE_GRACE_S; 30].")
@click.option("--hash-key", is_flag=True, expose_value=False, is_eager=True, callback=print_key_hash,
              help="Read an API key on stdin, print the line to put in --api-key-file (or GROUNDSENSE_API_KEYS), "
                   "and exit.")
def serve(**options: object) -> None:
    """Run the HTTP API and the review page (open http://HOST:PORT/).

    Flags override GROUNDSENSE_* environment variables, which override the defaults. The
    detector settings are the defaults of every request (whose options may choose k and
    mode). Each scoring request writes one JSON line to stdout (the request log); the
    server's own messages go to stderr. SIGTERM drains: new requests get 503 while those in flight
    finish (at most --grace seconds), then the server exits 0. Needs the extra: pip install
    'groundsense[service]'.
    """
    try:
        from ..service.app import create_app
        from ..service.server import listening_socket, run
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in SERVICE_PACKAGES:
            raise
        raise InputError(f"`groundsense serve` needs the service's packages (FastAPI, uvicorn, prometheus-client), "
                         f"and {exc.name} is not installed: pip install 'groundsense[service]'") from exc
    from ..service.heap import keep_heap_returnable
    from ..service.settings import ServiceSettings

    keep_heap_returnable()  # before the scorer's first tensors: a server runs for hours
    settings = ServiceSettings.from_env(**options)
    listening = listening_socket(settings.host, settings.port)  # a port in use stops here, before the scorer loads
    app = create_app(settings)  # a bad setting (a key file without keys, ...) stops here, before "serving"
    port = listening.getsockname()[1]
    click.echo(f"groundsense: serving on http://{settings.host}:{port}/ (scorer loads in the background)", err=True)
    requests = logging.getLogger("groundsense.requests")
    requests.addHandler(logging.StreamHandler(sys.stdout))  # the bare message: one JSON line
    requests.setLevel(logging.INFO)
    requests.propagate = False
    run(app, listening)
