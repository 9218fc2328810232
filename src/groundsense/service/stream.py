"""``POST /v1/detect/stream``: check an answer while it is generated.

The request body is NDJSON: the first line holds the evidence (``question``, ``context`` or
``passages``, ``options``, ``id``; no answer), every later line ``{"delta": "<answer text>"}``.
The response is NDJSON too, written as the request arrives: ``{"event": "sentence",
"sentence": {...}}`` for each sentence as soon as it ends, then ``{"event": "result",
"result": {...}}`` (the same JSON as ``/v1/detect``). The body is read while the response is
written, so a client that sends deltas as its LLM emits them gets each verdict meanwhile.

Before the first event the usual statuses apply (422 bad first line, 429 queue full,
``max_streams`` streams already open, or the scorer's measured load leaving no room for one more
stream (:meth:`.worker.Load.room_for_a_stream`), 503 scorer not ready, 413 body too large). Once the
response has begun, a failure ends it with
``{"event": "error", "status": ..., "error": "..."}`` and no result: a stream that ends
without a ``result`` event was not judged (fail closed). Every scoring step (opening the
stream, which encodes the evidence; each delta; the close) is a job on the same scorer queue
as ``/v1/detect`` with the same timeout, which also bounds the wait for the client's next line
(a stream that sends nothing for that long ends with a 504 ``error`` event). Opening is new
work, refused with 429 when the queue is full; the later steps of an admitted stream are never
refused and run before new work (:mod:`.worker`). A long delta is fed in pieces of at most
:data:`STEP_CHARS` characters, one job each, so that one stream's burst of text holds the
scorer no longer than an ordinary step before the other streams' steps get their turn.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import StreamingResponse

from ..errors import GroundsenseError, InputError
from ..inputs.files import decode, parse_json
from ..inputs.validate import CheckedHead, check_delta, check_stream_head
from ..rows.runner import internal_error
from .answers import check_media_type, event
from .limits import BodyTooLarge
from .observe import RequestRecord, current_record
from .settings import ServiceSettings
from .worker import Load, QueueFull, ScoringWorker

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from ..detection import AnswerStream
    from ..result import SentenceResult
    from .scoring import Scoring

log = logging.getLogger(__name__)

STEP_CHARS = 64  # answer characters per scoring step: about the stream's 16 tokens between scorings


class StepFailed(Exception):
    """A scoring step of a stream failed: its HTTP-like status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class DuplexStreamingResponse(StreamingResponse):
    """A streaming response that leaves the request's messages to the app: Starlette's own
    listens for a disconnect on ``receive``, which would swallow the body still arriving."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.stream_response(send)


async def ndjson_lines(request: Request, idle_s: float) -> AsyncIterator[object]:
    """The body's lines as JSON values, as they arrive (blank lines skipped). A client that sends
    nothing for ``idle_s`` seconds ends the stream (:class:`StepFailed` 504), so that a silent or
    stalled one does not hold one of the service's streams for ever."""
    buffer, number, chunks = b"", 0, request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(anext(chunks), idle_s)
        except StopAsyncIteration:
            break
        except asyncio.TimeoutError:
            raise StepFailed(504, f"nothing arrived for {idle_s:g} s (the --timeout limit): send the answer's "
                                  "deltas as they are generated, and end the body when the answer ends") from None
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            number += 1
            if line.strip():
                yield parse_json(decode(line, f"line {number}"), f"line {number}")
    if buffer.strip():
        yield parse_json(decode(buffer, f"line {number + 1}"), f"line {number + 1}")


class StreamSteps:
    """Runs a stream's scoring steps on the worker, under the service's timeout."""

    def __init__(self, worker: ScoringWorker, settings: ServiceSettings, ticket: object) -> None:
        self.worker, self.settings, self.stream = worker, settings, id(ticket)

    async def run(self, job: Callable[[Any], Any], admitted: bool) -> Any:
        """``job(state)`` on the worker. Not yet ``admitted``: new work, a 429 at once when the
        queue is full; admitted: a step of the stream."""
        try:
            return await self.worker.run(job, self.settings.timeout_s, step=admitted, stream=self.stream)
        except QueueFull:
            raise StepFailed(429, "the scorer is busy: too many requests are waiting") from None
        except asyncio.TimeoutError:
            raise StepFailed(504, f"a scoring step took longer than the {self.settings.timeout_s:g} s limit") from None
        except GroundsenseError as exc:
            raise StepFailed(422, str(exc)) from None


class OpenStreams:
    """The streams a service has open, at most ``limit``: each holds its evidence's encoded
    conditions until it ends. :meth:`admit` hands out a ticket, which counts while the stream
    holds it: until its events end, or until it is dropped (its opening failed, or the client
    left before the response began)."""

    def __init__(self, limit: int, admit_load: float = 0.0) -> None:
        self.limit, self.admit_load = limit, admit_load
        self._tickets: weakref.WeakSet[object] = weakref.WeakSet()

    def admit(self, load: Load | None = None) -> object:
        """A ticket, or :class:`StepFailed` 429 when ``limit`` streams are open or when the
        worker's ``load`` leaves no room for one more at ``admit_load`` (:meth:`Load.room_for_a_stream`)."""
        if len(self._tickets) >= self.limit:
            raise StepFailed(429, f"{self.limit} streams are open, as many as this server takes "
                                  "(groundsense serve --max-streams): retry when one ends")
        if load is not None and (full := load.room_for_a_stream(len(self._tickets), self.admit_load)):
            raise StepFailed(429, full)
        ticket = _Ticket()
        self._tickets.add(ticket)
        return ticket

    def release(self, ticket: object) -> None:
        self._tickets.discard(ticket)

    def __len__(self) -> int:
        return len(self._tickets)


class _Ticket:
    """A stream's place among the open ones (:class:`OpenStreams`)."""


async def open_stream(request: Request, worker: ScoringWorker, settings: ServiceSettings,
                      open_streams: OpenStreams) -> DuplexStreamingResponse:
    """Read the first line, open the stream on the scorer, and answer with the events; the
    errors before the response begins propagate (the app maps them to statuses)."""
    check_media_type(request, "application/x-ndjson")
    if reason := worker.unavailable():
        raise StepFailed(503, reason)
    ticket = open_streams.admit(worker.load())
    lines = ndjson_lines(request, settings.timeout_s)
    first = await anext(lines, None)
    if first is None:
        raise InputError("the body is empty: send the evidence as the first line, then answer deltas")
    head = check_stream_head(first)
    steps = StreamSteps(worker, settings, ticket)

    def start(state: Scoring) -> AnswerStream:
        return state.detection.with_options(**head.options).stream(**head.arguments)

    stream = await steps.run(start, admitted=False)
    return DuplexStreamingResponse(events(lines, stream, steps, head, current_record(), open_streams, ticket),
                                   media_type="application/x-ndjson")


async def events(lines: AsyncIterator[object], stream: AnswerStream, steps: StreamSteps, head: CheckedHead,
                 record: RequestRecord, open_streams: OpenStreams, ticket: object) -> AsyncIterator[bytes]:
    """The response's events, written as the deltas arrive; the outcome goes to ``record``
    (a stream that ends without a result is an ``error``)."""
    row_id, question, sent = head.id, head.arguments["question"], 0
    try:
        async for line in lines:
            delta = check_delta(line)
            for start in range(0, len(delta), STEP_CHARS):
                piece = delta[start : start + STEP_CHARS]

                # piece bound per step: the job runs on the worker's thread, not in this loop
                def feed(_state: Scoring, piece: str = piece) -> list[SentenceResult]:
                    return stream.feed(piece)

                for sentence in await steps.run(feed, admitted=True):
                    yield event("sentence", sentence=sentence.to_dict())
                    sent += 1
        closed = await steps.run(lambda _state: stream.close(), admitted=True)
        for sentence in closed.sentences[sent:]:  # those judged at the close: an event each too
            yield event("sentence", sentence=sentence.to_dict())
        result = closed.to_dict()
        record.note(result)  # the request's outcome, for the metrics and the request log
        record.texts.append({"question": question, "answer": stream.text})
        yield event("result", result={"id": row_id, **result})  # a record, as run_row's
    except StepFailed as exc:
        yield event("error", status=exc.status, error=exc.message)
    except GroundsenseError as exc:
        yield event("error", status=422, error=str(exc))
    except BodyTooLarge as exc:
        yield event("error", status=413, error=str(exc))
    except ClientDisconnect:
        return
    except Exception:  # noqa: BLE001 - fail closed, never echo the details
        request_id = uuid.uuid4().hex[:12]
        log.exception("internal error in a stream, request id %s", request_id)
        yield event("error", status=500, error=internal_error(request_id), request_id=request_id)
    finally:
        open_streams.release(ticket)
