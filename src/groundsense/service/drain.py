"""Draining: after SIGTERM the service stops admitting new work and lets the work in flight end.

:class:`Admission` is the ASGI middleware that counts the requests in flight (a stream is in
flight until its last event is sent) and, once :meth:`Drain.begin` has been called, answers
every new request but ``/healthz`` and ``/metrics`` with 503 and ``Retry-After``, ``/readyz``
included, so that a load balancer stops sending work here. :meth:`Drain.due` tells the server (:mod:`.server`)
when to exit: once nothing is in flight, or once the grace period is over. What is still in
flight then, uvicorn cancels; :class:`Admission` answers it as cut off (:func:`cut_off`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING

from .answers import event, send_error

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)
CUT_OFF = "the server stopped before this request was done, so it was not judged: send it again"

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
        started: list[Message] = []  # the response's start, once sent

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(message)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:  # by uvicorn, at the end of the shutdown's grace
            if not await cut_off(send, started[0] if started else None):
                raise
            log.warning("cut off %s %s at the end of the shutdown's grace", scope["method"], scope["path"])
        finally:
            self.drain.in_flight -= 1


async def cut_off(send: Send, started: Message | None) -> bool:
    """Tell the client of a request cut off by the server's shutdown that it was not judged: a
    503 where no response has begun, an ``error`` event where a stream's has (its last event, and
    no ``result``). False for any other response begun, which only closing the connection can cut."""
    if started is None:
        await send_error(send, 503, CUT_OFF)
    elif (b"content-type", b"application/x-ndjson") in started["headers"]:
        await send({"type": "http.response.body", "body": event("error", status=503, error=CUT_OFF), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    else:
        return False
    return True
