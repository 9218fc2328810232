"""What the routes share: one :class:`Service` per app, in ``app.state.service``, handed to a
route through the :data:`ServiceDep` dependency."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from ..detection import Detection, as_detection
from ..inputs.validate import CheckedRow
from ..rows.runner import run_row
from ..verification import check_verifier
from ..weights import display_name
from .drain import Drain
from .metrics import Metrics
from .observe import RequestRecord, request_log
from .settings import ServiceSettings
from .stream import OpenStreams
from .worker import ScoringWorker


class Scoring:
    """What the worker thread owns: the detection (a detector, or a cascade when the settings
    name a verifier; one per K and mode through ``with_options``) and what it is."""

    def __init__(self, detection: Detection):
        self.detection = as_detection(detection)
        self.about = detection.describe()
        self.mean_seconds = 5.0  # running estimate of one request's time, for Retry-After

    @classmethod
    def from_settings(cls, settings: ServiceSettings) -> Scoring:
        from ..verification import make_detection

        return cls(make_detection(settings.detection))

    def timed(self, rows: list[CheckedRow], stop: Callable[[], bool], request_id: str) -> list[dict]:
        """Each row's record (:func:`row_runner.run_row`, internal errors hidden behind ``request_id``),
        in order, until ``stop()``."""
        started = time.perf_counter()
        results = [run_row(self.detection, row, stop, request_id) for row in rows]
        elapsed = (time.perf_counter() - started) / max(len(rows), 1)
        self.mean_seconds = 0.8 * self.mean_seconds + 0.2 * elapsed
        return results


@dataclass(frozen=True)
class Service:
    settings: ServiceSettings
    worker: ScoringWorker  # its state is a Scoring, once loaded
    open_streams: OpenStreams
    metrics: Metrics
    drain: Drain  # begun by the server on SIGTERM (server.py)

    @classmethod
    def build(cls, settings: ServiceSettings, detection: Callable[[], Detection] | None = None) -> Service:
        """The service of :func:`.app.create_app`'s arguments (a bad verifier is refused here,
        before the worker starts)."""
        check_verifier(settings.detection)
        load = (lambda: Scoring(detection())) if detection else (lambda: Scoring.from_settings(settings))
        worker = ScoringWorker(load, settings.queue_size)
        open_streams = OpenStreams(settings.max_streams)
        metrics = Metrics(display_name(settings.detection.scorer), lambda: worker.pending, lambda: len(open_streams))
        return cls(settings, worker, open_streams, metrics, Drain(settings.grace_s))

    def finish(self, record: RequestRecord) -> None:
        """A scoring request's record, once answered: to the metrics and the request log."""
        self.metrics.observe(record)
        request_log.info(record.log_line(self.metrics.scorer, self.settings.log_text))


async def get_service(request: Request) -> Service:  # async: FastAPI runs a plain def in its thread pool
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(get_service)]
