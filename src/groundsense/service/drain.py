"""Draining: after SIGTERM the service stops admitting new work and lets the work in flight end.

:class:`Admission` is the ASGI middleware that counts the requests in flight (a stream is in
flight until its last event is sent) and, once :meth:`Drain.begin` has been called, answers
every new request but ``/healthz`` and ``/metrics`` with 503 and ``Retry-After``, ``/readyz``
included, so that a load balancer stops sending work here. :meth:`Drain.due` tells the server (:mod:`.server`)
when to exit: once nothing is in flight, or once the grace period is over.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from .answers import send_error

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

ALWAYS_OPEN = frozenset({"/healthz", "/metrics"})  # the process is up, and its metrics readable, while it drains


class Drain:
    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.in_flight = 0  # requests being served (changed on the event loop's thread only)
        self.deadline: float | None = None  # time.monotonic() at which the grace ends, once draining

    @property
    def draining(self) -> bool:
        return self.deadline is not None

    def begin(self) -> None:
        """Stop admitting new work; the grace starts now (a second call changes nothing)."""
        if self.deadline is None:
            self.deadline = time.monotonic() + self.grace_s

    def grace_left(self) -> float:
        if self.deadline is None:  # not draining: the whole grace is still ahead
            return self.grace_s
        return max(0.0, self.deadline - time.monotonic())

    def due(self) -> bool:
        """Draining, and nothing is in flight or the grace is over: time to exit."""
        return self.draining and (self.in_flight == 0 or self.grace_left() == 0)


class Admission:
    """ASGI middleware: counts the requests in flight, and refuses new ones while draining."""

    def __init__(self, app: ASGIApp, drain: Drain) -> None:
        self.app, self.drain = app, drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if self.drain.draining and scope["path"] not in ALWAYS_OPEN:
            retry = str(max(1, math.ceil(self.drain.grace_left())))
            return await send_error(send, 503, "the server is shutting down and takes no new work: retry on another "
                                    "instance, or here once it has restarted", [(b"retry-after", retry.encode())])
        self.drain.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.drain.in_flight -= 1
