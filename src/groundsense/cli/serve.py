"""`groundsense serve`: the HTTP API and the review page."""

from __future__ import annotations

import logging
import sys

import click

from ..errors import InputError
from .common import CONTEXT_SETTINGS, detector_options

# What the `service` extra installs (pydantic and starlette come with FastAPI): the core install leaves them out.
SERVICE_PACKAGES = {"fastapi", "starlette", "pydantic", "uvicorn", "prometheus_client"}


@click.command(context_settings=CONTEXT_SETTINGS)
@detector_options(from_env=True)
@click.option("--host", default=None, help="[env GROUNDSENSE_HOST; 127.0.0.1]")
@click.option("--port", type=int, default=None, help="[env GROUNDSENSE_PORT; 8000]")
@click.option("--queue-size", type=click.IntRange(min=1), default=None,
              help="Waiting requests before 429 [env GROUNDSENSE_QUEUE_SIZE; 8].")
@click.option("--max-streams", type=click.IntRange(min=1), default=None,
              help="Streams open at once before 429; each holds its evidence's caches in memory "
                   "[env GROUNDSENSE_MAX_STREAMS; 4].")
@click.option("--timeout", "timeout_s", type=float, default=None,
              help="Seconds per request [env GROUNDSENSE_TIMEOUT_S; 120].")
@click.option("--max-body-bytes", type=int, default=None, help="[env GROUNDSENSE_MAX_BODY_BYTES; 2000000]")
@click.option("--allowed-hosts", default=None, metavar="HOST,...",
              help="Host headers to accept, e.g. review.example.org; others get 400. Set it when binding beyond "
                   "loopback (docs/reliability.md) [env GROUNDSENSE_ALLOWED_HOSTS; any].")
@click.option("--log-text", is_flag=True, default=None,
              help="Put each request's question and answer in the request log [env GROUNDSENSE_LOG_TEXT; off].")
def serve(**options):
    """Run the HTTP API and the review page (open http://HOST:PORT/).

    Flags override GROUNDSENSE_* environment variables, which override the defaults. The
    detector settings are the defaults of every request (whose options may choose k and
    mode). Each scoring request writes one JSON line to stdout (the request log); the
    server's own messages go to stderr. Needs the extra: pip install 'groundsense[service]'.
    """
    try:
        import uvicorn

        from ..service.app import create_app
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in SERVICE_PACKAGES:
            raise
        raise InputError(f"`groundsense serve` needs the service's packages (FastAPI, uvicorn, prometheus-client), "
                         f"and {exc.name} is not installed: pip install 'groundsense[service]'") from exc
    from ..service.settings import ServiceSettings

    settings = ServiceSettings.from_env(**options)
    click.echo(f"groundsense: serving on http://{settings.host}:{settings.port}/ (scorer loads in the background)",
               err=True)
    requests = logging.getLogger("groundsense.requests")
    requests.addHandler(logging.StreamHandler(sys.stdout))  # the bare message: one JSON line
    requests.setLevel(logging.INFO)
    requests.propagate = False
    # The request log replaces uvicorn's access log for the scoring routes.
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info", access_log=False)
