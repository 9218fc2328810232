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
from types import FrameType

import uvicorn
from fastapi import FastAPI

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


def run(app: FastAPI, host: str, port: int) -> None:
    """Serve ``app`` (made by :func:`.app.create_app`, which holds its :class:`Drain`) until
    SIGTERM has drained it, or SIGINT."""
    drain = app.state.service.drain
    # The request log replaces uvicorn's access log for the scoring routes.
    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False,
                            timeout_graceful_shutdown=drain.grace_s)
    DrainingServer(config, drain).run()
