"""The app under uvicorn, draining on SIGTERM (:mod:`.drain`).

The first SIGTERM starts the drain instead of uvicorn's shutdown: the server keeps listening,
so new requests get a 503 with ``Retry-After`` rather than a refused connection, and exits 0
once nothing is in flight or after the grace (``--grace``). What is still running then is
cut off: a stream cut off ends without a ``result`` event, so its client knows that it was not
judged. A second SIGTERM, or SIGINT (Ctrl-C), is uvicorn's own shutdown: it stops listening at
once and cancels what is still running after the same grace (a second Ctrl-C: at once).
"""

from __future__ import annotations

import signal
import socket
from types import FrameType

import uvicorn
from fastapi import FastAPI

from ..errors import InputError
from .drain import Drain


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, drain: Drain) -> None:
        super().__init__(config)
        self.drain = drain

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and not self.drain.draining:
            self.drain.begin()
        else:
            super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self.drain.due():
            if self.drain.in_flight:  # the grace is over: uvicorn cancels what is left at once
                self.config.timeout_graceful_shutdown = 0
            self.should_exit = True
        return await super().on_tick(counter)


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: a free port), as uvicorn binds one; a port in use,
    or an address this machine does not have, is an :class:`InputError` before anything starts."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}: check --host") from None
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}: choose another --port, "
                         "or stop what listens there") from None
    sock.set_inheritable(True)
    return sock


def run(app: FastAPI, listening: socket.socket) -> None:
    """Serve ``app`` (made by :func:`.app.create_app`, which holds its :class:`Drain`) on the
    ``listening`` socket (:func:`listening_socket`) until SIGTERM has drained it, or SIGINT."""
    drain = app.state.service.drain
    # The request log replaces uvicorn's access log for the scoring routes.
    config = uvicorn.Config(app, log_level="info", access_log=False, timeout_graceful_shutdown=drain.grace_s)
    DrainingServer(config, drain).run(sockets=[listening])
