"""One thread owns the model; requests reach it through a bounded queue.

A model is not safe to call from many threads at once, and a CPU has no spare capacity
for a second copy, so the service scores one request at a time and refuses new ones with
429 when the queue is full rather than letting latency grow without bound.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

log = logging.getLogger(__name__)


class QueueFull(Exception):
    """The scorer's queue is full; retry later."""


class ScoringWorker:
    def __init__(self, load: Callable[[], Any], queue_size: int):
        self._load = load
        self._jobs: queue.Queue = queue.Queue(maxsize=queue_size)
        self._thread = threading.Thread(target=self._run, name="groundsense-scorer", daemon=True)
        self.ready = threading.Event()
        self.load_error: BaseException | None = None
        self.state: Any = None  # what ``load`` returned, used only on the worker thread
        self.running = False  # a job is on the scorer now

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 120.0) -> None:
        """Cancel the queued jobs, let the running one finish, and end the thread (a
        process must not exit while the model is mid-computation on it)."""
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
        self._jobs.put(None)
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
        return self._jobs.qsize()

    def submit(self, job: Callable[[Any], Any]) -> Future:
        """Queue ``job(state)``; raises :class:`QueueFull` instead of waiting."""
        future: Future = Future()
        try:
            self._jobs.put_nowait((job, future))
        except queue.Full:
            raise QueueFull from None
        return future

    async def run(self, job: Callable[[Any], Any], timeout_s: float, wait_for_slot: bool = False) -> Any:
        """``job(state)``'s result, within ``timeout_s`` (queueing included). A full queue
        raises :class:`QueueFull` at once or, ``wait_for_slot``, when no slot frees in time;
        running out of time raises :class:`asyncio.TimeoutError` and cancels a queued job (a
        running one stops only where the job checks a stop flag)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                future = self.submit(job)
                break
            except QueueFull:
                if not wait_for_slot or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout=max(0.0, deadline - time.monotonic()))

    def _run(self) -> None:
        try:
            self.state = self._load()
            self.ready.set()
        except BaseException as exc:  # reported by /readyz and every request
            log.exception("the scorer failed to load")
            self.load_error = exc
        while (item := self._jobs.get()) is not None:
            job, future = item
            if not future.set_running_or_notify_cancel():
                continue  # the request timed out while queued
            if self.load_error is not None:
                future.set_exception(self.load_error)
                continue
            self.running = True
            try:
                future.set_result(job(self.state))
            except BaseException as exc:
                future.set_exception(exc)
            finally:
                self.running = False
