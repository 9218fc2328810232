"""What the service records about each scoring request, for its metrics and its request log.

An ASGI middleware opens a :class:`RequestRecord` for every request to a scoring route and,
when the response has gone out, hands it to the metrics and writes one JSON line to the
``groundsense.requests`` logger. The route's code fills the record in through
:func:`current_record`: the queue and scoring times, each answer's outcome and sentences.

A request's outcome is ``error`` when its status is not 200; otherwise the worst outcome of
its answers, in the order error > flagged > unscored > supported (a batch with one refused
item is an ``error``). An answer's outcome is its verdict, ``answer.flagged``: ``flagged``,
``supported`` (cleared), or ``unscored`` where it is neither (a sentence could not be judged).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

OUTCOMES = ("supported", "unscored", "flagged", "error")  # from best to worst
request_log = logging.getLogger("groundsense.requests")
T = TypeVar("T")


class Timing:
    """When a job was queued, started and ended on the scorer's thread (``time.perf_counter``)."""

    def __init__(self) -> None:
        self.queued: float | None = None
        self.started: float | None = None
        self.ended: float | None = None

    def around(self, job: Callable[[Any], T]) -> Callable[[Any], T]:
        """``job`` (called with the worker's state), marking the times; call it as the job is queued."""
        self.queued = time.perf_counter()

        def timed(state: Any) -> T:
            self.started = time.perf_counter()
            try:
                return job(state)
            finally:
                self.ended = time.perf_counter()

        return timed

    def phases(self) -> tuple[float | None, float | None]:
        """Seconds in the queue and on the scorer, counted to now for a phase not yet over;
        ``None`` for a phase never entered."""
        now = time.perf_counter()
        if self.queued is None:
            return None, None
        queue = (self.started or now) - self.queued
        return queue, None if self.started is None else (self.ended or now) - self.started


def answer_outcome(result: dict) -> str:
    """An answer's outcome from its result dict (or ``{"id", "error"}`` record)."""
    if "error" in result:
        return "error"
    return {True: "flagged", False: "supported", None: "unscored"}[result["answer"]["flagged"]]


@dataclass
class RequestRecord:
    route: str = ""
    method: str = ""
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    started: float = field(default_factory=time.perf_counter)
    status: int = 500  # until a response starts: an exception past every handler is a 500
    key: str | None = None  # the id of the request's API key (keys.key_id); None without one
    timing: Timing = field(default_factory=Timing)
    answers: list[str] = field(default_factory=list)  # each answer's outcome
    sentences: Counter = field(default_factory=Counter)  # by status: scored, unscored
    texts: list[dict] = field(default_factory=list)  # question and answer of each scored row

    def keep_text(self, rows: Iterable) -> None:
        """Keep the question and answer of each row to score, for a log that includes the text."""
        self.texts += [{"question": row.arguments["question"], "answer": row.arguments["answer"]} for row in rows]

    def note(self, *results: dict) -> None:
        """Record the outcome and sentences of each answer's result."""
        for result in results:
            self.answers.append(answer_outcome(result))
            self.sentences.update(s["status"] for s in result.get("sentences", ()))

    @property
    def outcome(self) -> str:
        if self.status != 200:
            return "error"
        return max(self.answers, key=OUTCOMES.index, default="error")

    def log_line(self, scorer: str, with_text: bool) -> str:
        """The request log's JSON line; the text only ``with_text``."""
        queue, scoring = self.timing.phases()
        line: dict[str, Any] = {
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "request_id": self.request_id, "method": self.method, "route": self.route, "status": self.status,
            "outcome": self.outcome, "answers": dict(Counter(self.answers)), "sentences": dict(self.sentences),
            "duration_s": _seconds(time.perf_counter() - self.started), "queue_s": _seconds(queue),
            "scoring_s": _seconds(scoring), "scorer": scorer, "key": self.key,
        }
        if with_text:
            line["text"] = self.texts
        return json.dumps(line, ensure_ascii=False)


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


_current: ContextVar[RequestRecord | None] = ContextVar("groundsense_request", default=None)


def current_record() -> RequestRecord:
    """The record of the request being served, or a fresh one outside an observed route.

    Set by :class:`Observe` in the request's own task and not reset, so the app's last-resort
    500 handler (which runs outside the middleware) still finds the request id."""
    return _current.get() or RequestRecord()


class Observe:
    """ASGI middleware: a :class:`RequestRecord` for each request to one of ``routes``, handed
    to ``finish(record)`` after the response (whatever its status, an exception included)."""

    def __init__(self, app: ASGIApp, routes: Iterable[str], finish: Callable[[RequestRecord], None]) -> None:
        self.app, self.routes, self.finish = app, frozenset(routes), finish

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.routes:
            return await self.app(scope, receive, send)
        record = RequestRecord(route=scope["path"], method=scope["method"])
        _current.set(record)

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", record.request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            self.finish(record)
