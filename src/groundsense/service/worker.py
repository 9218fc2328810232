"""One thread owns the model; requests reach it through a bounded queue.

A model is not safe to call from many threads at once, and a CPU has no spare capacity
for a second copy, so the service scores one job at a time and refuses new work with 429
when the queue is full rather than letting latency grow without bound.

Two kinds of job wait: new work (a whole request, or the opening of a stream) and the
steps of streams already admitted (each delta, the close). A stream has at most one step
waiting, so steps are never refused, and they run before new work: a verdict due to a
reader does not wait behind another request's evidence encoding. New work that has waited
:data:`PATIENCE_S` runs next all the same, so that busy streams cannot starve it, but one job
at a time, alternating with one step: a backlog of new work slows the streams (the k-th waiting
step may wait for k new jobs) but cannot starve them. Steps run in the order they came, which
interleaves concurrent streams step by step.

The worker also measures its load: the share of the last :data:`LOAD_WINDOW_S` seconds it spent
on streams' steps and on other work (:meth:`ScoringWorker.load`). The service admits a new
stream only while that load leaves room for one more (:meth:`Load.room_for_a_stream`), so that
at a steady load a stream it admits gets its verdicts instead of a late 504.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

PATIENCE_S = 1.0  # new work waits at most this long behind stream steps (plus the job running)
LOAD_WINDOW_S = 30.0  # the recent past the worker's load is measured over


@dataclass(frozen=True)
class Load:
    """The share of the last ``seconds`` the worker spent on streams' steps and on other work
    (requests, and the opening of streams), and how many streams ran steps in that time."""

    steps: float
    other: float
    seconds: float
    streams: int = 0

    def room_for_a_stream(self, open_streams: int, limit: float) -> str | None:
        """Why one more stream would not be served in time, or None to admit it: the load with one
        more stream, at the average cost of the streams that ran steps lately, above ``limit``
        (0: no limit). With no stream open there is no cost to go by, and a stream is admitted."""
        if not open_streams or not limit:
            return None
        per_stream = self.steps / max(self.streams, open_streams)
        if self.steps + self.other + per_stream <= limit:
            return None
        return (f"the scorer is at capacity: in the last {self.seconds:.0f} s it was busy "
                f"{self.steps + self.other:.0%} of the time (streams' steps {self.steps:.0%}), and one more "
                f"stream would need about {per_stream:.0%}: retry when a stream ends")


class QueueFull(Exception):
    """The scorer's queue is full; retry later."""


class ScoringWorker:
    def __init__(self, load: Callable[[], Any], queue_size: int):
        self._load = load
        self.queue_size = queue_size
        # (queued at, job, future, the stream a step is of), oldest first
        self._new: deque[tuple[float, Callable, Future, int | None]] = deque()
        self._steps: deque[tuple[float, Callable, Future, int | None]] = deque()
        self._changed = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="groundsense-scorer", daemon=True)
        self.ready = threading.Event()
        self.load_error: BaseException | None = None
        self.state: Any = None  # what ``load`` returned, used only on the worker thread
        self.running = False  # a job is on the scorer now
        self._done: deque[tuple[float, float, int | None]] = deque()  # (ended, seconds, stream or None) of recent jobs
        self._current: tuple[float, int | None] | None = None  # (started, stream or None) of the running job
        self._overtook = False  # the last job was new work run before waiting steps

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 120.0) -> None:
        """Cancel the queued jobs, let the running one finish, and end the thread (a
        process must not exit while the model is mid-computation on it)."""
        with self._changed:
            for _, _, future, _ in (*self._new, *self._steps):
                future.cancel()
            self._new.clear()
            self._steps.clear()
            self._stopping = True
            self._changed.notify()
        self._thread.join(timeout)

    def unavailable(self) -> str | None:
        """Why no job can be taken now (a 503), or None when the scorer is ready."""
        if self.load_error is not None:
            return f"the scorer failed to load: {self.load_error}"
        if not self.ready.is_set():
            return "the scorer is still loading; retry shortly"
        return None

    @property
    def pending(self) -> int:
        """Jobs waiting, of both kinds."""
        return len(self._new) + len(self._steps)

    def submit(self, job: Callable[[Any], Any], step: bool = False, stream: int | None = None) -> Future:
        """Queue ``job(state)``: as new work, or raise :class:`QueueFull` when ``queue_size``
        jobs wait already; as a ``step`` of an admitted stream (``stream`` names it, for the
        load's count of streams), always."""
        future: Future = Future()
        with self._changed:
            if not step and self.pending >= self.queue_size:
                raise QueueFull
            (self._steps if step else self._new).append((time.monotonic(), job, future, stream if step else None))
            self._changed.notify()
        return future

    async def run(self, job: Callable[[Any], Any], timeout_s: float, step: bool = False,
                  stream: int | None = None) -> Any:
        """``job(state)``'s result, within ``timeout_s`` (queueing included); new work (not a
        ``step``) raises :class:`QueueFull` at once when the queue is full. Running out of time
        raises :class:`asyncio.TimeoutError` and cancels a queued job (a running one stops only
        where the job checks a stop flag)."""
        future = self.submit(job, step, stream)
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout=timeout_s)

    def load(self) -> Load:
        """The share of the last :data:`LOAD_WINDOW_S` seconds spent on steps and on other work,
        the running job's time so far included (a service younger than that counts the time
        before as idle)."""
        now = time.monotonic()
        with self._changed:
            self._forget(now)
            jobs = list(self._done)
            if self._current is not None:
                started, stream = self._current
                jobs.append((now, now - started, stream))
        since = now - LOAD_WINDOW_S
        steps = sum(min(seconds, ended - since) for ended, seconds, stream in jobs if stream is not None)
        other = sum(min(seconds, ended - since) for ended, seconds, stream in jobs if stream is None)
        streams = len({stream for _, _, stream in jobs if stream is not None})
        return Load(steps / LOAD_WINDOW_S, other / LOAD_WINDOW_S, LOAD_WINDOW_S, streams)

    def _forget(self, now: float) -> None:
        """Drop the jobs that ended before the load's window (the lock held)."""
        while self._done and self._done[0][0] <= now - LOAD_WINDOW_S:
            self._done.popleft()

    def _next(self) -> tuple[Callable, Future, int | None] | None:
        """The job to run next and the stream it is a step of (None: stop): a step, unless new
        work has waited its patience or no step waits."""
        with self._changed:
            while not (self._new or self._steps or self._stopping):
                self._changed.wait()
            if self._stopping:
                return None
            # one overdue job of new work at a time, then a step: a backlog of new work and the steps
            # take turns
            overdue = self._new and time.monotonic() - self._new[0][0] >= PATIENCE_S and not self._overtook
            step = bool(self._steps) and not overdue
            self._overtook = not step and bool(self._steps)
            _, job, future, stream = (self._steps if step else self._new).popleft()
            return job, future, stream

    def _run(self) -> None:
        try:
            self.state = self._load()
            self.ready.set()
        except BaseException as exc:  # reported by /readyz and every request
            log.exception("the scorer failed to load")
            self.load_error = exc
        while (item := self._next()) is not None:
            job, future, stream = item
            if not future.set_running_or_notify_cancel():
                continue  # the request timed out while queued
            if self.load_error is not None:
                future.set_exception(self.load_error)
                continue
            self.running = True
            with self._changed:
                self._current = (time.monotonic(), stream)
            try:
                future.set_result(job(self.state))
            except BaseException as exc:
                future.set_exception(exc)
            finally:
                self.running = False
                with self._changed:
                    started, _ = self._current
                    ended = time.monotonic()
                    self._done.append((ended, ended - started, stream))
                    self._current = None
                    self._forget(ended)
